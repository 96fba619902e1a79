//! The cgroups of one environment: where its commands' cgroups are made
//! (a place per hierarchy), the limits in force there, a few empty ones
//! kept for the next commands, and those still in use after their command
//! ended (a daemon it started) until they empty.
//!
//! Where: in this process's own cgroup of each hierarchy, so that the
//! commands stay within whatever limits the process itself is under (a
//! service's `MemoryMax`). With cgroup v2 a controller must be enabled in
//! that cgroup's `cgroup.subtree_control` first; `pids` and `cpu` may be
//! enabled beside processes, `memory` may not (the "no internal process"
//! rule), so for it this process moves itself into a leaf of its own
//! (`bashtool-<pid>.<start>-self`) when it is the only process there.
//!
//! Names: `bashtool-<pid>.<start>-<n>`, with the pid and start time of the
//! process that made it, so that the next bashtool process removes what a
//! process that died left (once empty), and nothing of a live one.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::group::{CgroupLimits, CommandCgroup, Place, read_pids};
use super::host::{CgroupHost, Controller, Hierarchy, Version};
use crate::error::Error;

/// Empty cgroups kept for the next commands: a `mkdir` and an `rmdir` per
/// hierarchy per command saved (tens of microseconds each).
const POOL: usize = 4;
/// The start of every cgroup name bashtool makes.
const NAME_PREFIX: &str = "bashtool-";

/// Cgroups still in use after their command ended, of every environment of
/// this process: removed by whichever environment next finds them empty.
static LINGERING: Mutex<Vec<Arc<CommandCgroup>>> = Mutex::new(Vec::new());

/// The cgroups of one environment.
#[derive(Debug)]
pub struct Cgroups {
    places: Vec<Place>,
    /// The limits in force (those that could not be had are not).
    limits: CgroupLimits,
    /// Why a limit that was not required is not in force.
    not_in_force: Vec<String>,
    free: Mutex<Vec<CommandCgroup>>,
}

impl Cgroups {
    /// Prepares the cgroups for `limits` on `host`: where each controller
    /// is, enabled where v2 needs it, checked by making a cgroup. A limit
    /// of `required` that cannot be had is an error naming what is
    /// missing; any other is left out, and [`Self::not_in_force`] says
    /// why. What processes that died left is removed on the way.
    pub fn prepare(
        host: &CgroupHost,
        limits: CgroupLimits,
        required: &[Controller],
    ) -> Result<Self, Error> {
        let owner = owner_prefix();
        let mut shortfall = Shortfall {
            required,
            in_force: limits,
            not_in_force: Vec::new(),
        };
        let mut places: Vec<Place> = Vec::new();
        for controller in limits.controllers() {
            let Some(hierarchy) = host.hierarchy_for(controller) else {
                shortfall.missing(controller, &no_hierarchy(host, controller))?;
                continue;
            };
            let base = base_of(hierarchy, &owner);
            if hierarchy.version == Version::V2
                && let Err(reason) = enable(&base, controller, &owner)
            {
                shortfall.missing(controller, &reason)?;
                continue;
            }
            match places.iter_mut().find(|place| place.base == base) {
                Some(place) => place.controllers.push(controller),
                None => places.push(Place {
                    version: hierarchy.version,
                    base,
                    controllers: vec![controller],
                    kill: hierarchy.kill,
                }),
            }
        }
        // With any limit in force, the v2 hierarchy too, for `cgroup.kill`.
        if !places.is_empty()
            && let Some(v2) = host.v2()
            && v2.kill
            && !places.iter().any(|place| place.version == Version::V2)
        {
            places.push(Place {
                version: Version::V2,
                base: base_of(v2, &owner),
                controllers: Vec::new(),
                kill: true,
            });
        }
        // Each place is tried once: a directory this user may not write
        // (a cgroup not delegated to it) shows here, not at the first call.
        let mut usable = Vec::with_capacity(places.len());
        for place in places {
            remove_stale(&place.base);
            let probe = CommandCgroup::create(
                &next_name(&owner),
                std::slice::from_ref(&place),
                shortfall.in_force,
            );
            match probe {
                Ok(cgroup) => {
                    cgroup.remove_dirs();
                    usable.push(place);
                }
                Err(error) => {
                    for controller in &place.controllers {
                        shortfall.missing(*controller, &error.to_string())?;
                    }
                }
            }
        }
        // A place left with no controller of its own but v2's kill is kept
        // only beside another.
        if usable.iter().all(|place| place.controllers.is_empty()) {
            usable.clear();
        }
        Ok(Self {
            places: usable,
            limits: shortfall.in_force,
            not_in_force: shortfall.not_in_force,
            free: Mutex::new(Vec::new()),
        })
    }

    /// The limits in force.
    pub fn limits(&self) -> CgroupLimits {
        self.limits
    }

    /// Why a limit asked for without being required is not in force (one
    /// line per limit); empty when all are.
    pub fn not_in_force(&self) -> &[String] {
        &self.not_in_force
    }

    /// True when commands get a cgroup at all.
    pub fn is_active(&self) -> bool {
        !self.places.is_empty()
    }

    /// `cgroup v2`, `cgroup v1`, or `cgroup v1 and v2`: what its commands'
    /// cgroups are made in.
    pub fn enforced_by(&self) -> String {
        let v1 = self.places.iter().any(|place| place.version == Version::V1);
        let v2 = self.places.iter().any(|place| place.version == Version::V2);
        match (v1, v2) {
            (true, true) => "cgroup v1 and v2".to_owned(),
            (true, false) => "cgroup v1".to_owned(),
            (false, true) => "cgroup v2".to_owned(),
            (false, false) => "nothing".to_owned(),
        }
    }

    /// True when its commands can be stopped at once with `cgroup.kill`.
    pub fn kills_at_once(&self) -> bool {
        self.places.iter().any(|place| place.kill)
    }

    /// Where each hierarchy's cgroups are made, and the controllers set
    /// there (for reports).
    pub fn places(&self) -> Vec<(String, PathBuf, Vec<Controller>)> {
        self.places
            .iter()
            .map(|place| {
                (
                    place.version.to_string(),
                    place.base.clone(),
                    place.controllers.clone(),
                )
            })
            .collect()
    }

    /// A cgroup for the next command: an empty one kept from an earlier
    /// command, or a new one. Give it back with [`Self::give_back`].
    pub fn take(&self) -> Result<Arc<CommandCgroup>, Error> {
        let kept = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let cgroup = match kept {
            Some(cgroup) => cgroup,
            None => self.make()?,
        };
        cgroup.start_command();
        Ok(Arc::new(cgroup))
    }

    /// A new cgroup that is never reused (a session's shell, a background
    /// job): end it with [`Self::release`], or leave it to whoever finds
    /// it empty.
    pub fn create(&self) -> Result<Arc<CommandCgroup>, Error> {
        self.make().map(Arc::new)
    }

    fn make(&self) -> Result<CommandCgroup, Error> {
        if self.places.is_empty() {
            return Err(Error::Cgroup {
                message: "no cgroup is in use here".to_owned(),
            });
        }
        CommandCgroup::create(&next_name(&owner_prefix()), &self.places, self.limits)
    }

    /// Takes back the cgroup of a command that ended: kept for the next
    /// command when empty and no one else holds it, else removed once
    /// empty.
    pub fn give_back(&self, cgroup: Arc<CommandCgroup>) {
        match Arc::try_unwrap(cgroup) {
            Ok(cgroup) if cgroup.is_empty() => {
                cgroup.refresh_baseline();
                let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
                if free.len() < POOL {
                    free.push(cgroup);
                } else {
                    drop(free);
                    if !cgroup.remove_dirs() {
                        linger(Arc::new(cgroup));
                    }
                }
            }
            Ok(cgroup) => linger(Arc::new(cgroup)),
            Err(shared) => linger(shared),
        }
        sweep();
    }

    /// Removes `cgroup` now if it is empty, else once it is (checked
    /// whenever a command's cgroup is given back or released).
    pub fn release(&self, cgroup: Arc<CommandCgroup>) {
        if !(cgroup.is_empty() && cgroup.remove_dirs()) {
            linger(cgroup);
        }
        sweep();
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        for cgroup in self
            .free
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            if !cgroup.remove_dirs() {
                linger(Arc::new(cgroup));
            }
        }
        sweep();
    }
}

/// The limits that could not be had while preparing.
struct Shortfall<'a> {
    required: &'a [Controller],
    in_force: CgroupLimits,
    not_in_force: Vec<String>,
}

impl Shortfall<'_> {
    /// `controller` cannot be had, for `reason`: an error if it is
    /// required, else left out.
    fn missing(&mut self, controller: Controller, reason: &str) -> Result<(), Error> {
        if self.required.contains(&controller) {
            return Err(Error::Cgroup {
                message: format!("the {controller} limit cannot be enforced here: {reason}"),
            });
        }
        self.in_force = self.in_force.without(controller);
        self.not_in_force.push(format!("{controller}: {reason}"));
        Ok(())
    }
}

fn linger(cgroup: Arc<CommandCgroup>) {
    LINGERING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(cgroup);
}

/// Removes the lingering cgroups that are empty now.
pub fn sweep() {
    let mut lingering = LINGERING.lock().unwrap_or_else(PoisonError::into_inner);
    if lingering.is_empty() {
        return;
    }
    lingering.retain(|cgroup| !(cgroup.is_empty() && cgroup.remove_dirs()));
}

/// `bashtool-<pid>.<start>-`: this process's names.
fn owner_prefix() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX
        .get_or_init(|| {
            let pid = std::process::id();
            let start = crate::tree::process_info(pid).map_or(0, |info| info.start_time);
            format!("{NAME_PREFIX}{pid}.{start}-")
        })
        .clone()
}

fn next_name(owner: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{owner}{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Where commands' cgroups go in `hierarchy`: this process's cgroup, or,
/// once it moved itself into its own leaf, that leaf's parent.
fn base_of(hierarchy: &Hierarchy, owner: &str) -> PathBuf {
    let own_leaf = format!("{owner}self");
    match (hierarchy.own.file_name(), hierarchy.own.parent()) {
        (Some(name), Some(parent)) if name == own_leaf.as_str() => parent.to_path_buf(),
        _ => hierarchy.own.clone(),
    }
}

/// Why no hierarchy has `controller`, naming what there is.
fn no_hierarchy(host: &CgroupHost, controller: Controller) -> String {
    match host.v2() {
        Some(v2) if host.versions() == "v2" => format!(
            "the cgroup v2 hierarchy does not hand the {controller} controller to this process's cgroup {} (its cgroup.controllers: {}); run bashtool where it is delegated, e.g. `systemd-run --user --scope -p Delegate=yes bashtool ...`",
            v2.own.display(),
            listed(&v2.controllers)
        ),
        _ => format!(
            "no cgroup hierarchy here has the {controller} controller (cgroups: {})",
            host.versions()
        ),
    }
}

fn listed(controllers: &[Controller]) -> String {
    if controllers.is_empty() {
        return "none".to_owned();
    }
    controllers
        .iter()
        .map(|controller| controller.name())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Enables `controller` for the children of the v2 cgroup `base`. Where
/// the kernel refuses because `base` holds processes (the no-internal-
/// process rule, for `memory`) and the only one is this process, it moves
/// itself into a leaf of its own first.
fn enable(base: &Path, controller: Controller, owner: &str) -> Result<(), String> {
    let control = base.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&control)
        .map_err(|error| format!("cannot read {}: {error}", control.display()))?;
    if enabled
        .split_whitespace()
        .any(|name| name == controller.name())
    {
        return Ok(());
    }
    let request = format!("+{controller}");
    let refused = |error: io::Error| -> String {
        match error.raw_os_error() {
            Some(libc::EACCES | libc::EPERM | libc::EROFS) => format!(
                "{} is not writable by this user (its cgroup is not delegated to it); run bashtool where it is, e.g. `systemd-run --user --scope -p Delegate=yes bashtool ...`",
                control.display()
            ),
            _ => format!(
                "cannot enable the {controller} controller in {}: {error}",
                control.display()
            ),
        }
    };
    match std::fs::write(&control, &request) {
        Ok(()) => Ok(()),
        Err(error) if error.raw_os_error() == Some(libc::EBUSY) => {
            let own = std::process::id();
            let others: Vec<u32> = read_pids(&base.join("cgroup.procs"))
                .into_iter()
                .filter(|pid| *pid != own)
                .collect();
            if !others.is_empty() {
                return Err(format!(
                    "cannot enable the {controller} controller in {}: the cgroup holds other processes too ({} of them), and cgroup v2 hands controllers such as memory only to the children of a cgroup without processes; run bashtool in a cgroup of its own, e.g. `systemd-run --user --scope -p Delegate=yes bashtool ...`",
                    base.display(),
                    others.len()
                ));
            }
            let leaf = base.join(format!("{owner}self"));
            match std::fs::create_dir(&leaf) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(refused(error)),
            }
            std::fs::write(leaf.join("cgroup.procs"), own.to_string()).map_err(refused)?;
            std::fs::write(&control, &request).map_err(refused)
        }
        Err(error) => Err(refused(error)),
    }
}

/// Removes the cgroups in `base` that a bashtool process that is gone made
/// and that are empty (an `rmdir` of a cgroup with processes fails).
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(stale_owner) else {
            continue;
        };
        let alive =
            crate::tree::process_info(owner.0).is_some_and(|info| info.start_time == owner.1);
        if !alive {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The pid and start time of the process that made cgroup `name`.
fn stale_owner(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let (owner, _) = rest.split_once('-')?;
    let (pid, start) = owner.split_once('.')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_maker() {
        assert_eq!(stale_owner("bashtool-123.456-7"), Some((123, 456)));
        assert_eq!(stale_owner("bashtool-123.456-self"), Some((123, 456)));
        assert_eq!(stale_owner("bashtool-x.456-7"), None);
        assert_eq!(stale_owner("docker"), None);
        assert!(next_name(&owner_prefix()).starts_with(&owner_prefix()));
    }

    #[test]
    fn a_process_that_moved_into_its_own_leaf_makes_cgroups_beside_it() {
        let owner = "bashtool-5.6-";
        let hierarchy = Hierarchy {
            version: Version::V2,
            mount: PathBuf::from("/sys/fs/cgroup"),
            controllers: vec![Controller::Pids],
            own: PathBuf::from("/sys/fs/cgroup/app.scope/bashtool-5.6-self"),
            kill: true,
        };
        assert_eq!(
            base_of(&hierarchy, owner),
            PathBuf::from("/sys/fs/cgroup/app.scope")
        );
        let elsewhere = Hierarchy {
            own: PathBuf::from("/sys/fs/cgroup/app.scope"),
            ..hierarchy
        };
        assert_eq!(
            base_of(&elsewhere, owner),
            PathBuf::from("/sys/fs/cgroup/app.scope")
        );
    }
}
