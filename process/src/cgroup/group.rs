//! One command's cgroup: a directory in each hierarchy used (a v1
//! hierarchy per controller, or the one v2 hierarchy), its limits, the
//! `cgroup.procs` files its process writes itself into before it execs,
//! the kernel's counters of what the limits refused, and stopping and
//! removing it.

use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::Signal;

use super::host::{Controller, Version};
use crate::error::Error;

/// The CPU period the quota is given for: the kernel's default, 100 ms.
pub(crate) const CPU_PERIOD_MICROS: u64 = 100_000;

/// The limits of a command's cgroup; `None`: not limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CgroupLimits {
    /// Processes and threads at once (`pids.max`).
    pub pids: Option<u64>,
    /// Bytes of memory (`memory.max`; v1 `memory.limit_in_bytes`), swap
    /// included where the kernel counts it (`memory.swap.max` is 0).
    pub memory: Option<u64>,
    /// Thousandths of a CPU (`cpu.max`; v1 `cpu.cfs_quota_us`).
    pub cpu_millis: Option<u32>,
}

impl CgroupLimits {
    /// The controllers these limits need.
    pub fn controllers(&self) -> Vec<Controller> {
        let mut controllers = Vec::new();
        if self.pids.is_some() {
            controllers.push(Controller::Pids);
        }
        if self.memory.is_some() {
            controllers.push(Controller::Memory);
        }
        if self.cpu_millis.is_some() {
            controllers.push(Controller::Cpu);
        }
        controllers
    }

    /// These limits without `controller`'s.
    #[must_use]
    pub fn without(mut self, controller: Controller) -> Self {
        match controller {
            Controller::Pids => self.pids = None,
            Controller::Memory => self.memory = None,
            Controller::Cpu => self.cpu_millis = None,
        }
        self
    }
}

/// What the kernel counted in a cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Forks refused by `pids.max` (`pids.events`: `max`).
    pub pids_refused: u64,
    /// Processes killed at the memory limit (`oom_kill`).
    pub oom_kills: u64,
    /// Periods in which the CPU quota held it back (`nr_throttled`).
    pub throttled_periods: u64,
    /// Time held back (`throttled_usec`; v1 `throttled_time`).
    pub throttled: Duration,
}

impl Counters {
    /// What was counted since `earlier`.
    #[must_use]
    pub fn since(self, earlier: Self) -> Self {
        Self {
            pids_refused: self.pids_refused.saturating_sub(earlier.pids_refused),
            oom_kills: self.oom_kills.saturating_sub(earlier.oom_kills),
            throttled_periods: self
                .throttled_periods
                .saturating_sub(earlier.throttled_periods),
            throttled: self.throttled.saturating_sub(earlier.throttled),
        }
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Where a command's cgroups go in one hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    pub version: Version,
    /// The directory the command cgroups are made in.
    pub base: PathBuf,
    /// The controllers whose limits are set in this hierarchy.
    pub controllers: Vec<Controller>,
    /// Its cgroups have `cgroup.kill`.
    pub kill: bool,
}

/// A command's cgroup in one hierarchy.
#[derive(Debug)]
struct Part {
    version: Version,
    dir: PathBuf,
    controllers: Vec<Controller>,
    kill: bool,
    /// `cgroup.procs`, open for writing: the launched process writes `0`
    /// (itself) into it before it execs.
    procs: OwnedFd,
}

/// A counter file of a command's cgroup: the limit it belongs to, the
/// file, and the key whose value counts what the limit refused or killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterFile {
    /// Whose counter.
    pub controller: Controller,
    /// The file (`pids.events`, `memory.events`, `memory.oom_control`).
    pub path: PathBuf,
    /// The key in it (`max`, `oom_kill`, `nr_throttled`).
    pub key: &'static str,
}

/// One command's cgroup, in every hierarchy its limits need (and in the
/// v2 hierarchy, for `cgroup.kill`). Made by [`crate::Cgroups`].
#[derive(Debug)]
pub struct CommandCgroup {
    name: String,
    parts: Vec<Part>,
    limits: CgroupLimits,
    /// The counters when the current command started (a cgroup is reused
    /// by the next command once empty).
    baseline: Mutex<Counters>,
    /// The baseline was read after the last command.
    baseline_fresh: AtomicBool,
}

impl CommandCgroup {
    /// Makes cgroup `name` in each place, with `limits` set, or nothing
    /// (what was made is removed again on an error).
    pub(crate) fn create(
        name: &str,
        places: &[Place],
        limits: CgroupLimits,
    ) -> Result<Self, Error> {
        let mut parts: Vec<Part> = Vec::with_capacity(places.len());
        let mut cgroup = Self {
            name: name.to_owned(),
            parts: Vec::new(),
            limits,
            baseline: Mutex::new(Counters::default()),
            baseline_fresh: AtomicBool::new(true),
        };
        for place in places {
            let dir = place.base.join(name);
            if let Err(source) = std::fs::create_dir(&dir) {
                cgroup.parts = parts;
                cgroup.remove_dirs();
                return Err(Error::Cgroup {
                    message: format!("could not create the cgroup {}: {source}", dir.display()),
                });
            }
            let made = set_limits(&dir, place, limits).and_then(|()| open_procs(&dir));
            match made {
                Ok(procs) => parts.push(Part {
                    version: place.version,
                    dir,
                    controllers: place.controllers.clone(),
                    kill: place.kill,
                    procs,
                }),
                Err(message) => {
                    let _ = std::fs::remove_dir(&dir);
                    cgroup.parts = parts;
                    cgroup.remove_dirs();
                    return Err(Error::Cgroup { message });
                }
            }
        }
        cgroup.parts = parts;
        Ok(cgroup)
    }

    /// Its name (the same directory name in every hierarchy).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its directories, one per hierarchy.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.parts.iter().map(|part| part.dir.clone()).collect()
    }

    /// The limits set in it.
    pub fn limits(&self) -> CgroupLimits {
        self.limits
    }

    /// The `cgroup.procs` descriptors a launched process writes itself
    /// into.
    pub(crate) fn procs_descriptors(&self) -> Vec<RawFd> {
        self.parts
            .iter()
            .map(|part| part.procs.as_raw_fd())
            .collect()
    }

    /// True when it can be stopped at once with `cgroup.kill`.
    pub fn kills_at_once(&self) -> bool {
        self.parts.iter().any(|part| part.kill)
    }

    /// The files whose counters tell which limit a command reached, for a
    /// process that reads them itself (a background job's supervisor).
    pub fn counter_files(&self) -> Vec<CounterFile> {
        let mut files = Vec::new();
        for part in &self.parts {
            for controller in &part.controllers {
                let (file, key) = match (controller, part.version) {
                    (Controller::Pids, _) => ("pids.events", "max"),
                    (Controller::Memory, Version::V2) => ("memory.events", "oom_kill"),
                    (Controller::Memory, Version::V1) => ("memory.oom_control", "oom_kill"),
                    (Controller::Cpu, _) => ("cpu.stat", "nr_throttled"),
                };
                files.push(CounterFile {
                    controller: *controller,
                    path: part.dir.join(file),
                    key,
                });
            }
        }
        files
    }

    /// The kernel's counters now (zero for a limit it does not carry).
    pub fn counters(&self) -> Counters {
        let mut counters = Counters::default();
        for part in &self.parts {
            for controller in &part.controllers {
                match controller {
                    Controller::Pids => {
                        counters.pids_refused =
                            read_key(&part.dir.join("pids.events"), "max").unwrap_or(0);
                    }
                    Controller::Memory => {
                        let file = match part.version {
                            Version::V2 => "memory.events",
                            Version::V1 => "memory.oom_control",
                        };
                        counters.oom_kills =
                            read_key(&part.dir.join(file), "oom_kill").unwrap_or(0);
                    }
                    Controller::Cpu => {
                        let stat =
                            std::fs::read_to_string(part.dir.join("cpu.stat")).unwrap_or_default();
                        counters.throttled_periods = key_in(&stat, "nr_throttled").unwrap_or(0);
                        counters.throttled = match part.version {
                            Version::V2 => {
                                Duration::from_micros(key_in(&stat, "throttled_usec").unwrap_or(0))
                            }
                            Version::V1 => {
                                Duration::from_nanos(key_in(&stat, "throttled_time").unwrap_or(0))
                            }
                        };
                    }
                }
            }
        }
        counters
    }

    /// What the limits refused or killed since the last call of this
    /// method (or since it was made): the current command's share.
    pub fn events(&self) -> Counters {
        if self.limits == CgroupLimits::default() {
            return Counters::default();
        }
        let now = self.counters();
        let mut baseline = self.baseline.lock().unwrap_or_else(PoisonError::into_inner);
        let events = now.since(*baseline);
        *baseline = now;
        self.baseline_fresh.store(true, Ordering::Release);
        events
    }

    /// Makes the counters now the baseline of the next command, unless
    /// [`Self::events`] just did.
    pub(crate) fn refresh_baseline(&self) {
        if self.baseline_fresh.swap(false, Ordering::AcqRel)
            || self.limits == CgroupLimits::default()
        {
            return;
        }
        *self.baseline.lock().unwrap_or_else(PoisonError::into_inner) = self.counters();
    }

    /// Marks the baseline as taken by a new command.
    pub(crate) fn start_command(&self) {
        self.baseline_fresh.store(false, Ordering::Release);
    }

    /// The processes in it now (pids in our pid namespace). Exited
    /// processes are not listed, even before they are reaped.
    pub fn members(&self) -> Vec<u32> {
        // The v2 part when there is one: v1 hierarchies can be left by a
        // process that writes itself elsewhere, v2 only as well, but it is
        // the one `cgroup.kill` acts on.
        let part = self
            .parts
            .iter()
            .find(|part| part.version == Version::V2)
            .or_else(|| self.parts.first());
        part.map_or_else(Vec::new, |part| read_pids(&part.dir.join("cgroup.procs")))
    }

    /// True when no process is in it (in any hierarchy).
    pub fn is_empty(&self) -> bool {
        self.parts
            .iter()
            .all(|part| read_pids(&part.dir.join("cgroup.procs")).is_empty())
    }

    /// Kills everything in it at once through `cgroup.kill`; false where
    /// the kernel has none (v1): see [`Self::signal_members`].
    pub fn kill(&self) -> bool {
        self.parts
            .iter()
            .filter(|part| part.kill)
            .any(|part| std::fs::write(part.dir.join("cgroup.kill"), b"1").is_ok())
    }

    /// Sends `signal` to every process in it; returns the pids signalled.
    /// A pid is signalled through a pidfd opened before the membership is
    /// read again, so a pid that was reused meanwhile by a process outside
    /// is not hit.
    pub fn signal_members(&self, signal: Signal) -> Vec<u32> {
        let first = self.members();
        if first.is_empty() {
            return first;
        }
        let handles: Vec<(u32, OwnedFd)> = first
            .into_iter()
            .filter_map(|pid| crate::fd::open_pidfd(pid).ok().map(|fd| (pid, fd)))
            .collect();
        let still = self.members();
        let mut signalled = Vec::with_capacity(handles.len());
        for (pid, handle) in &handles {
            if still.contains(pid) && crate::fd::pidfd_send_signal(handle, signal).is_ok() {
                signalled.push(*pid);
            }
        }
        signalled
    }

    /// Removes its directories; true when none is left. A directory that
    /// still holds a process stays (`EBUSY`).
    pub(crate) fn remove_dirs(&self) -> bool {
        let mut all = true;
        // The reverse order: a later part may be nested in nothing, but a
        // failure halfway leaves the first ones, which name the cgroup.
        for part in self.parts.iter().rev() {
            match std::fs::remove_dir(&part.dir) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(_) => all = false,
            }
        }
        all
    }
}

/// Writes `limits` for `place`'s controllers into the cgroup `dir`.
fn set_limits(dir: &Path, place: &Place, limits: CgroupLimits) -> Result<(), String> {
    let write = |file: &str, value: &str| -> Result<(), String> {
        std::fs::write(dir.join(file), value).map_err(|error| {
            format!(
                "could not set {} to {value}: {error}",
                dir.join(file).display()
            )
        })
    };
    let write_if_present = |file: &str, value: &str| -> Result<(), String> {
        if dir.join(file).exists() {
            write(file, value)
        } else {
            Ok(())
        }
    };
    for controller in &place.controllers {
        match (controller, place.version) {
            (Controller::Pids, _) => {
                if let Some(pids) = limits.pids {
                    write("pids.max", &pids.to_string())?;
                }
            }
            (Controller::Memory, Version::V2) => {
                if let Some(bytes) = limits.memory {
                    write("memory.max", &bytes.to_string())?;
                    // Swap would let a command go past its limit (slowly)
                    // instead of being stopped at it.
                    write_if_present("memory.swap.max", "0")?;
                }
            }
            (Controller::Memory, Version::V1) => {
                if let Some(bytes) = limits.memory {
                    write("memory.limit_in_bytes", &bytes.to_string())?;
                    write_if_present("memory.memsw.limit_in_bytes", &bytes.to_string())?;
                }
            }
            (Controller::Cpu, version) => {
                if let Some(millis) = limits.cpu_millis {
                    let quota = u64::from(millis) * CPU_PERIOD_MICROS / 1000;
                    match version {
                        Version::V2 => write("cpu.max", &format!("{quota} {CPU_PERIOD_MICROS}"))?,
                        Version::V1 => {
                            write("cpu.cfs_period_us", &CPU_PERIOD_MICROS.to_string())?;
                            write("cpu.cfs_quota_us", &quota.to_string())?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn open_procs(dir: &Path) -> Result<OwnedFd, String> {
    let path = dir.join("cgroup.procs");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map(OwnedFd::from)
        .map_err(|error| format!("could not open {}: {error}", path.display()))
}

/// The pids listed in a `cgroup.procs` file (none when it cannot be read).
pub(crate) fn read_pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

/// The value of `key` in a flat keyed file (`max 3`).
fn read_key(path: &Path, key: &str) -> Option<u64> {
    key_in(&std::fs::read_to_string(path).ok()?, key)
}

fn key_in(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keyed_counters() {
        let stat = "nr_periods 10\nnr_throttled 4\nthrottled_time 1500000\n";
        assert_eq!(key_in(stat, "nr_throttled"), Some(4));
        assert_eq!(key_in(stat, "throttled_time"), Some(1_500_000));
        assert_eq!(key_in(stat, "nr_periods"), Some(10));
        assert_eq!(
            key_in("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"),
            Some(2)
        );
        assert_eq!(key_in("max 0\n", "oom_kill"), None);
    }

    #[test]
    fn counts_only_what_happened_since() {
        let earlier = Counters {
            pids_refused: 3,
            oom_kills: 1,
            throttled_periods: 5,
            throttled: Duration::from_millis(10),
        };
        let now = Counters {
            pids_refused: 10,
            oom_kills: 1,
            throttled_periods: 5,
            throttled: Duration::from_millis(10),
        };
        assert_eq!(
            now.since(earlier),
            Counters {
                pids_refused: 7,
                ..Counters::default()
            }
        );
    }
}
