//! What this machine can enforce, for `bashtool sandbox`.

use std::fmt;
use std::path::PathBuf;

use super::landlock::abi_version;
use super::mounts::{Cover, MountPlan};
use super::proxy::PROXY_PORT;
use super::realm::{Realm, RealmSpec};
use super::seccomp::seccomp_available;

/// The kernel features the sandbox uses, as found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Landlock ABI version, 0 when absent. 1 is enough for the file system
    /// rules; 6 adds the scoping of signals.
    pub landlock_abi: i32,
    /// seccomp filters can be installed.
    pub seccomp: bool,
    /// A user namespace could be created (needed by non-root users for
    /// the other namespaces).
    pub user_namespaces: bool,
    /// A realm could be made: pid, mount, IPC and network namespaces with
    /// a private `/proc`, `devpts` and `/dev/shm`.
    pub namespaces: bool,
    /// The domain proxy can be had: a realm's init made a listening socket
    /// in its network namespace and handed it over (`--allow-domain`).
    pub proxy: bool,
    /// This process runs as root (it needs no user namespace).
    pub root: bool,
    /// `bwrap`, if installed (not used: see docs/sandbox.md).
    pub bubblewrap: Option<PathBuf>,
}

/// Probes the kernel by making two short-lived realms.
pub fn probe() -> Capabilities {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let shell = bashtool_process::resolve_program(std::ffi::OsStr::new("bash"));
    let try_realm = |user: bool, full: bool, proxy: bool| {
        let Some(shell) = shell.clone() else {
            return false;
        };
        let covers = if full {
            vec![Cover {
                path: c"/dev/shm".to_owned(),
                options: c"mode=1777".to_owned(),
                read_only: false,
                keep: Vec::new(),
            }]
        } else {
            Vec::new()
        };
        Realm::create(&RealmSpec {
            user,
            network: full,
            proxy_port: proxy.then_some(PROXY_PORT),
            mounts: MountPlan {
                entries: Vec::new(),
                covers,
                devpts: full,
                proc: full,
            },
            kept: false,
            shell,
        })
        .is_ok_and(|realm| !proxy || realm.proxy_listener.is_some())
    };
    let user_namespaces = try_realm(true, false, false);
    let namespaces = try_realm(!root, true, false);
    let proxy = namespaces && try_realm(!root, true, true);
    Capabilities {
        landlock_abi: abi_version(),
        seccomp: seccomp_available(),
        user_namespaces,
        namespaces,
        proxy,
        root,
        bubblewrap: find_program("bwrap"),
    }
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|directory| directory.join(name))
        .find(|candidate| candidate.is_file())
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

impl Capabilities {
    /// True when every mode can be enforced.
    pub fn complete(&self) -> bool {
        self.landlock_abi >= 1
            && self.seccomp
            && self.namespaces
            && (self.root || self.user_namespaces)
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let landlock = match self.landlock_abi {
            0 => "no (file system rules cannot be enforced)".to_owned(),
            abi => format!("ABI {abi} (file system rules)"),
        };
        writeln!(formatter, "landlock: {landlock}")?;
        writeln!(formatter, "seccomp: {}", yes_no(self.seccomp))?;
        writeln!(
            formatter,
            "user namespaces: {}{}",
            yes_no(self.user_namespaces),
            if self.root {
                " (not needed as root)"
            } else {
                ""
            }
        )?;
        writeln!(
            formatter,
            "pid, mount, IPC and network namespaces, private /proc, devpts and /dev/shm: {}",
            yes_no(self.namespaces)
        )?;
        writeln!(
            formatter,
            "domain proxy (--allow-domain): {}",
            if self.proxy {
                "yes (its socket on the sandbox's own 127.0.0.1:3128; the proxy runs in bashtool, \
                 outside the sandbox)"
            } else {
                "no (no listening socket could be made in a sandbox's network namespace)"
            }
        )?;
        writeln!(
            formatter,
            "bubblewrap: {}",
            self.bubblewrap.as_ref().map_or_else(
                || "not installed (not needed)".to_owned(),
                |path| format!("{} (not needed)", path.display())
            )
        )?;
        write!(formatter, "running as root: {}", yes_no(self.root))
    }
}
