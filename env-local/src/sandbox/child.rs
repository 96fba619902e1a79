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

/// Capabilities taken from root: the ones that reach around the other
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

/// `struct __user_cap_header_struct` of `<linux/capability.h>`.
#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`: one 32-bit word of each set.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapabilityWords {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Version 3: two words per set, capabilities 0..64.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Removes [`DROPPED_CAPABILITIES`] from the effective, permitted and
/// inheritable sets (the ambient set follows: the kernel keeps it within
/// permitted and inheritable) in one `capset`. The `no_new_privs` set
/// right after makes it final: under it, an `exec` (setuid or with file
/// capabilities included) never gives more than the permitted set it
/// starts with, so nothing the command runs gets them back. The bounding
/// set is left as it is on purpose: it can only shrink one capability per
/// `PR_CAPBSET_DROP`, each a new set of credentials, ~30 µs per launch for
/// the 19, and under `no_new_privs` it limits nothing more.
fn drop_capabilities() -> std::io::Result<()> {
    let mut header = CapabilityHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut words = [CapabilityWords::default(); 2];
    // SAFETY: capget writes two `CapabilityWords` (version 3) into `words`
    // and reads the header; both live on this stack for the call.
    check(unsafe {
        libc::syscall(libc::SYS_capget, &raw mut header, words.as_mut_ptr()) as libc::c_int
    })?;
    for &capability in DROPPED_CAPABILITIES {
        let word = &mut words[(capability / 32) as usize];
        let keep = !(1u32 << (capability % 32));
        word.effective &= keep;
        word.permitted &= keep;
        word.inheritable &= keep;
    }
    // SAFETY: as above; capset only reads `header` and `words`.
    check(unsafe {
        libc::syscall(libc::SYS_capset, &raw mut header, words.as_ptr()) as libc::c_int
    })
}

impl ChildSteps {
    /// Applies the sandbox to the calling (child) process.
    pub fn apply(&self) -> std::io::Result<()> {
        // The user namespace first: it gives the capabilities the next
        // steps need (joining the network, making a mount namespace).
        if let Some(user) = &self.shared.user {
            join(user, libc::CLONE_NEWUSER)?;
        }
        self.inherited_steps(SharedMounts::enter)?;
        landlock::restrict_self(&self.ruleset)
    }

    /// Applies every step but Landlock to the calling thread of a spawner
    /// (see `crate::spawner`); its children inherit them all and take only
    /// [`ChildSteps::apply_on_spawner`]. Returns the mount namespace it
    /// joined (the generation current now), if any. Not for a sandbox with
    /// a user namespace of its own: only a single-threaded process may
    /// join one. Landlock stays per child: a thread in the commands'
    /// domain could be signalled or traced by them.
    pub fn apply_to_thread(&self) -> std::io::Result<Option<std::os::fd::RawFd>> {
        if self.shared.user.is_some() {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut joined = None;
        self.inherited_steps(|mounts| {
            let namespace = mounts.current();
            joined = Some(namespace);
            // A thread shares its filesystem context (root, directory,
            // umask) with the others; joining a mount namespace needs its
            // own, a copy taken now.
            // SAFETY: plain system calls; the descriptor is kept open by
            // the sandbox as long as `mounts`.
            check(unsafe { libc::unshare(libc::CLONE_FS) })?;
            check(unsafe { libc::setns(namespace, libc::CLONE_NEWNS) })
        })?;
        Ok(joined)
    }

    /// The step left to a child of a spawner's thread: Landlock (the rest
    /// is inherited from the thread).
    pub fn apply_on_spawner(&self) -> std::io::Result<()> {
        landlock::restrict_self(&self.ruleset)
    }

    /// The steps a task's children inherit, in their order, with
    /// `join_mounts` joining the mount namespace when there is one: the
    /// network, the mounts, the capabilities, `no_new_privs`, and last the
    /// filter, which denies the `setns` calls made before it.
    fn inherited_steps(
        &self,
        join_mounts: impl FnOnce(&SharedMounts) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        if let Some(network) = &self.shared.network {
            join(network, libc::CLONE_NEWNET)?;
        }
        if let Some(mounts) = &self.mounts {
            join_mounts(mounts)?;
        }
        if self.drop_capabilities {
            drop_capabilities()?;
        }
        // Landlock and seccomp without CAP_SYS_ADMIN require it; it also
        // stops setuid programs (sudo) from regaining what was dropped.
        // SAFETY: plain prctl.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        self.filters.install()
    }
}
