//! Tying what a process starts to that process's life, for servers
//! (`bashtool mcp`, `bashtool serve`) that may be killed with SIGKILL, which
//! cannot be caught:
//!
//! - [`StopWithOwner`], a spawn wrapper, gives every process started a
//!   parent-death signal (SIGKILL when we die) and an owner mark
//!   (`BASHTOOL_OWNER=<pid>.<start time>.<pid namespace>`) that its
//!   descendants inherit;
//! - [`reap_orphans`], run when the next server starts, kills what is left
//!   of owners that are gone (the descendants a parent-death signal does not
//!   reach) and removes their session directories.
//!
//! Background jobs meant to outlive their starter (`keep_jobs_on_drop`)
//! get neither.

use std::ffi::OsString;

use nix::sys::signal::Signal;

use crate::command::Launch;
use crate::error::Error;
use crate::tree::{all_processes, process_info, signal_process};
use crate::wrapper::Wrapper;

/// The variable that marks a process as owned by a server process.
pub const OWNER_VARIABLE: &str = "BASHTOOL_OWNER";

/// `<pid>.<start time>.<pid namespace>` of this process: unique even after
/// pid reuse, and only meaningful in the pid namespace it names. A root
/// server on the host reads the environment of processes inside containers
/// too; their marks name the container's namespace, whose pids mean other
/// processes here, so they must never be judged from outside.
fn own_mark() -> String {
    let pid = std::process::id();
    let start = process_info(pid).map_or(0, |info| info.start_time);
    format!("{pid}.{start}.{}", own_pid_namespace().unwrap_or(0))
}

/// The inode of this process's pid namespace.
fn own_pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid")
        .ok()
        .map(|meta| meta.ino())
}

/// The spawn wrapper that ties started processes to this process.
#[derive(Debug)]
pub struct StopWithOwner {
    mark: String,
    parent: libc::pid_t,
}

impl StopWithOwner {
    /// Ties to the current process.
    pub fn new() -> Self {
        Self {
            mark: own_mark(),
            parent: std::process::id() as libc::pid_t,
        }
    }
}

impl Default for StopWithOwner {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: `pre_exec` makes two system calls (prctl, getppid) on values
// copied into the struct when it was made, and returns.
unsafe impl Wrapper for StopWithOwner {
    fn wrap(&self, launch: &mut Launch) -> Result<(), Error> {
        launch
            .env
            .retain(|(key, _)| key.as_os_str() != OWNER_VARIABLE);
        launch
            .env
            .push((OsString::from(OWNER_VARIABLE), OsString::from(&self.mark)));
        Ok(())
    }

    fn needs_pre_exec(&self) -> bool {
        true
    }

    fn applies_to_detached_jobs(&self) -> bool {
        false
    }

    fn pre_exec(&self) -> std::io::Result<()> {
        // SAFETY: prctl and getppid are async-signal-safe system calls.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // We may have died between the fork and the prctl: then no
            // signal comes, so do not start at all. A child already in a
            // sandbox's pid namespace sees a parent outside it as 0; were
            // we gone, the sandbox's init would have ended and taken the
            // whole namespace with it.
            let parent = libc::getppid();
            if parent != self.parent && parent != 0 {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        Ok(())
    }
}

/// What [`reap_orphans`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// Processes killed (owned by a server that is gone).
    pub processes: usize,
}

/// True when the owner `<pid>.<start>.<namespace>` is gone. A mark made in
/// another pid namespace (or unreadable) is never gone: its pid cannot be
/// looked up from here.
fn owner_gone(mark: &str, namespace: u64) -> bool {
    let mut parts = mark.split('.');
    let (Some(pid), Some(start), Some(mark_namespace), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Ok(pid), Ok(start), Ok(mark_namespace)) = (
        pid.parse::<u32>(),
        start.parse::<u64>(),
        mark_namespace.parse::<u64>(),
    ) else {
        return false;
    };
    if mark_namespace != namespace {
        return false;
    }
    !process_info(pid).is_some_and(|info| info.start_time == start && !info.zombie)
}

fn owner_of(environ: &[u8]) -> Option<String> {
    let prefix = format!("{OWNER_VARIABLE}=");
    environ
        .split(|&byte| byte == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// Kills the processes of owners that are gone (a server killed with
/// SIGKILL: the descendants a parent-death signal does not reach). Only our
/// own user's processes are readable, so only ours are touched.
pub fn reap_orphans() -> Reaped {
    let mut reaped = Reaped::default();
    let own = std::process::id();
    let Some(namespace) = own_pid_namespace() else {
        return reaped;
    };
    for info in all_processes() {
        if info.zombie || info.pid == own {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{}/environ", info.pid)) else {
            continue;
        };
        if let Some(mark) = owner_of(&environ)
            && owner_gone(&mark, namespace)
            && signal_process(&info, Signal::SIGKILL)
        {
            reaped.processes += 1;
        }
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_owner_mark_in_an_environment() {
        assert_eq!(
            owner_of(b"A=1\0BASHTOOL_OWNER=42.7\0B=2\0"),
            Some("42.7".to_owned())
        );
        assert_eq!(owner_of(b"XBASHTOOL_OWNER=1.1\0"), None);
    }

    #[test]
    fn a_live_owner_is_not_gone_and_a_reused_pid_is() {
        let namespace = own_pid_namespace().unwrap();
        assert!(!owner_gone(&own_mark(), namespace));
        let pid = std::process::id();
        assert!(owner_gone(&format!("{pid}.1.{namespace}"), namespace));
        assert!(!owner_gone("garbage", namespace));
    }

    #[test]
    fn a_mark_from_another_pid_namespace_is_never_gone() {
        let namespace = own_pid_namespace().unwrap();
        let pid = std::process::id();
        // The pid does not name our process there, whatever it names here.
        assert!(!owner_gone(
            &format!("{pid}.1.{}", namespace + 1),
            namespace
        ));
        // Marks from before the namespace was part of them are not judged.
        assert!(!owner_gone(&format!("{pid}.1"), namespace));
    }
}
