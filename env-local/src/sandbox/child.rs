//! The steps a sandboxed child takes between fork and exec, in order, on
//! data prepared in the parent. Each is one or a few system calls: the
//! parent may have other threads holding the allocator's lock, so nothing
//! here allocates.

// System calls the standard library does not wrap; each block says why it
// is sound.
#![allow(unsafe_code)]

use std::os::fd::OwnedFd;

use super::landlock;
use super::mounts::SharedMounts;
use super::namespaces::{Shared, join};
use super::seccomp::Filters;

/// Capabilities taken from root's bounding set: after `exec`, root keeps
/// only what is left. These are the ones that reach around the other
/// layers or change the host (modules, raw I/O, mounts, the clock, the
/// host's network configuration, device nodes).
const DROPPED_CAPABILITIES: &[libc::c_ulong] = &[
    9,  // CAP_LINUX_IMMUTABLE
    12, // CAP_NET_ADMIN
    16, // CAP_SYS_MODULE
    17, // CAP_SYS_RAWIO
    18, // CAP_SYS_CHROOT
    19, // CAP_SYS_PTRACE
    20, // CAP_SYS_PACCT
    21, // CAP_SYS_ADMIN
    22, // CAP_SYS_BOOT
    25, // CAP_SYS_TIME
    27, // CAP_MKNOD
    30, // CAP_AUDIT_CONTROL
    32, // CAP_MAC_OVERRIDE
    33, // CAP_MAC_ADMIN
    34, // CAP_SYSLOG
    35, // CAP_WAKE_ALARM
    36, // CAP_BLOCK_SUSPEND
    39, // CAP_BPF
    40, // CAP_CHECKPOINT_RESTORE
];

/// Everything the child needs, built once per sandbox.
#[derive(Debug)]
pub struct ChildSteps {
    pub shared: Shared,
    pub mounts: Option<SharedMounts>,
    pub drop_capabilities: bool,
    pub ruleset: OwnedFd,
    pub filters: Filters,
}

fn check(result: libc::c_int) -> std::io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl ChildSteps {
    /// Applies the sandbox to the calling (child) process.
    pub fn apply(&self) -> std::io::Result<()> {
        // The user namespace first: it gives the capabilities the next
        // steps need (joining the network, making a mount namespace).
        if let Some(user) = &self.shared.user {
            join(user, libc::CLONE_NEWUSER)?;
        }
        if let Some(network) = &self.shared.network {
            join(network, libc::CLONE_NEWNET)?;
        }
        if let Some(mounts) = &self.mounts {
            mounts.enter()?;
        }
        if self.drop_capabilities {
            for &capability in DROPPED_CAPABILITIES {
                // SAFETY: plain prctl; EINVAL for a capability this kernel
                // does not know is fine (nothing to drop).
                let result = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) };
                if result != 0
                    && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        // Landlock and seccomp without CAP_SYS_ADMIN require it; it also
        // stops setuid programs (sudo) from regaining what was dropped.
        // SAFETY: plain prctl.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        landlock::restrict_self(&self.ruleset)?;
        // Last: the filter denies the mount and setns calls made above.
        self.filters.install()
    }
}
