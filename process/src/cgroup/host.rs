//! What this machine offers: the cgroup hierarchies mounted (v2, the v1
//! controllers, or both: "hybrid"), which of the controllers bashtool
//! limits with each carries, and where this process sits in each.
//!
//! Read from `/proc/self/mountinfo` (what is mounted where, and from which
//! root of the hierarchy: a container may mount only its own subtree) and
//! `/proc/self/cgroup` (our cgroup in each hierarchy).

use std::fmt;
use std::path::{Path, PathBuf};

/// A controller bashtool limits commands with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Controller {
    /// Processes and threads (`pids.max`).
    Pids,
    /// Memory (`memory.max`, v1 `memory.limit_in_bytes`).
    Memory,
    /// CPU time (`cpu.max`, v1 `cpu.cfs_quota_us`).
    Cpu,
}

impl Controller {
    /// Every controller, in the order they are reported.
    pub const ALL: [Self; 3] = [Self::Pids, Self::Memory, Self::Cpu];

    /// The kernel's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pids => "pids",
            Self::Memory => "memory",
            Self::Cpu => "cpu",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|controller| controller.name() == name)
    }
}

impl fmt::Display for Controller {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Which cgroup interface a hierarchy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// The legacy interface: one hierarchy per controller (or a few).
    V1,
    /// The unified hierarchy.
    V2,
}

impl fmt::Display for Version {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::V1 => "v1",
            Self::V2 => "v2",
        })
    }
}

/// One mounted hierarchy, as this process sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// Its interface.
    pub version: Version,
    /// Where it is mounted.
    pub mount: PathBuf,
    /// The controllers of ours it carries: for v1 those it is mounted
    /// with; for v2 those our cgroup may hand to its children (its
    /// `cgroup.controllers`).
    pub controllers: Vec<Controller>,
    /// This process's cgroup in it: a directory under `mount`.
    pub own: PathBuf,
    /// A v2 hierarchy whose cgroups have `cgroup.kill`.
    pub kill: bool,
}

/// The cgroup hierarchies of this machine, as this process sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupHost {
    /// Every hierarchy found that carries one of our controllers, or is v2.
    pub hierarchies: Vec<Hierarchy>,
}

impl CgroupHost {
    /// Reads what this machine mounts.
    pub fn probe() -> Self {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let membership = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut host = Self::from_tables(&mountinfo, &membership);
        for hierarchy in &mut host.hierarchies {
            if hierarchy.version == Version::V2 {
                let available = std::fs::read_to_string(hierarchy.own.join("cgroup.controllers"))
                    .unwrap_or_default();
                hierarchy.controllers = available
                    .split_whitespace()
                    .filter_map(Controller::from_name)
                    .collect();
                hierarchy.kill = hierarchy.own.join("cgroup.kill").exists()
                    || hierarchy.mount.join("cgroup.kill").exists()
                    || has_kill_in_a_child(&hierarchy.mount);
            }
        }
        host
    }

    /// The hierarchies from `/proc/self/mountinfo` and `/proc/self/cgroup`
    /// (v2 controllers and `cgroup.kill` are filled in by [`Self::probe`]).
    pub fn from_tables(mountinfo: &str, membership: &str) -> Self {
        let mut hierarchies = Vec::new();
        for line in mountinfo.lines() {
            let Some(mount) = parse_mount(line) else {
                continue;
            };
            let Some(own_path) = own_path(membership, &mount) else {
                continue;
            };
            // A container that mounts only its own subtree: our path is
            // seen from the hierarchy's root, the mount from its own.
            let Ok(relative) = Path::new(&own_path).strip_prefix(&mount.root) else {
                continue;
            };
            let own = if relative.as_os_str().is_empty() {
                mount.point.clone()
            } else {
                mount.point.join(relative)
            };
            if mount.version == Version::V1 && mount.controllers.is_empty() {
                continue;
            }
            // Bind mounts of the same hierarchy: the first one is enough.
            if hierarchies.iter().any(|known: &Hierarchy| {
                known.version == mount.version && known.controllers == mount.controllers
            }) {
                continue;
            }
            hierarchies.push(Hierarchy {
                version: mount.version,
                mount: mount.point,
                controllers: mount.controllers,
                own,
                kill: false,
            });
        }
        Self { hierarchies }
    }

    /// The v2 hierarchy, if one is mounted.
    pub fn v2(&self) -> Option<&Hierarchy> {
        self.hierarchies
            .iter()
            .find(|hierarchy| hierarchy.version == Version::V2)
    }

    /// The hierarchy that carries `controller`: v2 where our cgroup has it
    /// there, else a v1 hierarchy mounted with it.
    pub fn hierarchy_for(&self, controller: Controller) -> Option<&Hierarchy> {
        let carries = |hierarchy: &&Hierarchy| hierarchy.controllers.contains(&controller);
        self.v2()
            .filter(carries)
            .or_else(|| self.hierarchies.iter().find(carries))
    }

    /// `v2`, `v1`, `v1 and v2 (hybrid)`, or `none`.
    pub fn versions(&self) -> &'static str {
        let v1 = self
            .hierarchies
            .iter()
            .any(|hierarchy| hierarchy.version == Version::V1);
        match (v1, self.v2().is_some()) {
            (true, true) => "v1 and v2 (hybrid)",
            (true, false) => "v1",
            (false, true) => "v2",
            (false, false) => "none",
        }
    }
}

impl fmt::Display for CgroupHost {
    /// For `bashtool sandbox`: the versions, then each hierarchy with its
    /// controllers and our place in it.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(formatter, "cgroups: {}", self.versions())?;
        for hierarchy in &self.hierarchies {
            let controllers = if hierarchy.controllers.is_empty() {
                "none of pids, memory, cpu".to_owned()
            } else {
                hierarchy
                    .controllers
                    .iter()
                    .map(|controller| controller.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let kill = match hierarchy.version {
                Version::V2 if hierarchy.kill => "; cgroup.kill: yes",
                Version::V2 => "; cgroup.kill: no",
                Version::V1 => "",
            };
            writeln!(
                formatter,
                "  {} at {}: controllers {controllers}{kill}; this process in {}",
                hierarchy.version,
                hierarchy.mount.display(),
                hierarchy.own.display()
            )?;
        }
        Ok(())
    }
}

/// `cgroup.kill` exists in child cgroups only on some kernels' root: look
/// at one child.
fn has_kill_in_a_child(mount: &Path) -> bool {
    std::fs::read_dir(mount).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .take(1)
            .any(|entry| entry.path().join("cgroup.kill").exists())
    })
}

/// One cgroup line of `/proc/self/mountinfo`.
struct Mount {
    version: Version,
    /// The path of the hierarchy mounted there (`/` unless a subtree).
    root: PathBuf,
    point: PathBuf,
    controllers: Vec<Controller>,
    /// v1: every option naming a controller or a name, to match
    /// `/proc/self/cgroup`.
    names: Vec<String>,
}

fn parse_mount(line: &str) -> Option<Mount> {
    // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
    let (before, after) = line.split_once(" - ")?;
    let fields: Vec<&str> = before.split(' ').collect();
    let mut after = after.split(' ');
    let kind = after.next()?;
    let _source = after.next()?;
    let options = after.next().unwrap_or("");
    let version = match kind {
        "cgroup2" => Version::V2,
        "cgroup" => Version::V1,
        _ => return None,
    };
    let root = PathBuf::from(unescape(fields.get(3)?));
    let point = PathBuf::from(unescape(fields.get(4)?));
    let names: Vec<String> = options
        .split(',')
        .filter(|option| !matches!(*option, "rw" | "ro") && !option.contains('='))
        .map(str::to_owned)
        .chain(
            options
                .split(',')
                .filter(|option| option.starts_with("name="))
                .map(str::to_owned),
        )
        .collect();
    let controllers = if version == Version::V1 {
        names
            .iter()
            .filter_map(|name| Controller::from_name(name))
            .collect()
    } else {
        Vec::new()
    };
    Some(Mount {
        version,
        root,
        point,
        controllers,
        names,
    })
}

/// Our path in `mount`'s hierarchy, from `/proc/self/cgroup`
/// (`ID:CONTROLLERS:PATH`; v2 is `0::PATH`).
fn own_path(membership: &str, mount: &Mount) -> Option<String> {
    membership.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let _id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        let matches = match mount.version {
            Version::V2 => controllers.is_empty(),
            Version::V1 => {
                let listed: Vec<&str> = controllers.split(',').collect();
                !controllers.is_empty()
                    && mount
                        .names
                        .iter()
                        .filter(|name| {
                            !["noprefix", "clone_children", "xattr"].contains(&name.as_str())
                        })
                        .all(|name| listed.contains(&name.as_str()))
            }
        };
        matches.then(|| path.to_owned())
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'\\'
            && let Some(octal) = field.get(index + 1..index + 4)
            && let Ok(value) = u8::from_str_radix(octal, 8)
        {
            out.push(value);
            index += 4;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const HYBRID_MEMBERSHIP: &str = "\
9:name=systemd:/
8:pids:/
4:memory:/process_api/544a
2:cpuacct:/
1:cpu:/
0::/
";

    #[test]
    fn finds_the_v1_controllers_and_the_v2_hierarchy_of_a_hybrid_host() {
        let host = CgroupHost::from_tables(HYBRID_MOUNTS, HYBRID_MEMBERSHIP);
        let found: Vec<(Version, &str, Vec<Controller>, &str)> = host
            .hierarchies
            .iter()
            .map(|hierarchy| {
                (
                    hierarchy.version,
                    hierarchy.mount.to_str().expect("utf-8"),
                    hierarchy.controllers.clone(),
                    hierarchy.own.to_str().expect("utf-8"),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                (
                    Version::V1,
                    "/sys/fs/cgroup/cpu",
                    vec![Controller::Cpu],
                    "/sys/fs/cgroup/cpu"
                ),
                (
                    Version::V1,
                    "/sys/fs/cgroup/memory",
                    vec![Controller::Memory],
                    "/sys/fs/cgroup/memory/process_api/544a"
                ),
                (
                    Version::V1,
                    "/sys/fs/cgroup/pids",
                    vec![Controller::Pids],
                    "/sys/fs/cgroup/pids"
                ),
                (
                    Version::V2,
                    "/sys/fs/cgroup/unified",
                    vec![],
                    "/sys/fs/cgroup/unified"
                ),
            ]
        );
        assert_eq!(host.versions(), "v1 and v2 (hybrid)");
        assert_eq!(
            host.hierarchy_for(Controller::Memory)
                .map(|hierarchy| hierarchy.version),
            Some(Version::V1)
        );
    }

    #[test]
    fn a_v2_only_host_in_a_container_subtree() {
        let mounts =
            "50 40 0:30 /docker/abc /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let membership = "0::/docker/abc/init.scope\n";
        let mut host = CgroupHost::from_tables(mounts, membership);
        assert_eq!(host.hierarchies.len(), 1);
        assert_eq!(
            host.hierarchies[0].own,
            PathBuf::from("/sys/fs/cgroup/init.scope")
        );
        host.hierarchies[0].controllers = vec![Controller::Pids, Controller::Memory];
        assert_eq!(host.versions(), "v2");
        assert_eq!(
            host.hierarchy_for(Controller::Pids)
                .map(|hierarchy| hierarchy.version),
            Some(Version::V2)
        );
        assert!(host.hierarchy_for(Controller::Cpu).is_none());
    }

    #[test]
    fn unescapes_mount_points() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }
}
