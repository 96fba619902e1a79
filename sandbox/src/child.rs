//! The steps a sandboxed child takes between fork and exec, in order, on
//! data prepared in the parent. Each is one or a few system calls: the
//! parent may have other threads holding the allocator's lock, so nothing
//! here allocates.
//!
//! A launch enters the realm in two places: the pid namespace is joined
//! by the task that *makes* the command's process (`setns` of a pid
//! namespace changes where the caller's children go, not the caller), so
//! either a spawner thread joined it once, or a first child joins it
//! ([`ChildSteps::before_fork`]) and makes the command's process, which
//! takes the rest ([`ChildSteps::apply`]).

use std::os::fd::{AsRawFd, OwnedFd};

use super::landlock;
use super::mounts::RealmMounts;
use super::namespaces::{check, join};
use super::realm::Realm;
use super::seccomp::Filters;

/// Capabilities root keeps: what a build, an install or a test run as
/// root uses on files and processes inside the sandbox. Owner and mode
/// checks on files of other users (`DAC_OVERRIDE`, `DAC_READ_SEARCH`,
/// `FOWNER`), `chown` and set-id bits of unpacked archives (`CHOWN`,
/// `FSETID`), dropping to another user (`SETUID`, `SETGID`: apt's `_apt`,
/// `su postgres`), signals to those users' processes (`KILL`), ports
/// below 1024 (`NET_BIND_SERVICE`), and the audit record `su`/`sudo`
/// write (`AUDIT_WRITE`). Every other one goes: among them `SYS_ADMIN`,
/// `NET_ADMIN`, `NET_RAW` (packet sockets that sniff the host's loopback),
/// `SYS_PTRACE`, `SYS_NICE`, `PERFMON`, `SYS_MODULE`, `SYS_RAWIO`,
/// `MKNOD`, `BPF`, `SYS_TIME`.
pub const KEPT_CAPABILITIES: &[u32] = &[
    0,  // CAP_CHOWN
    1,  // CAP_DAC_OVERRIDE
    2,  // CAP_DAC_READ_SEARCH
    3,  // CAP_FOWNER
    4,  // CAP_FSETID
    5,  // CAP_KILL
    6,  // CAP_SETGID
    7,  // CAP_SETUID
    10, // CAP_NET_BIND_SERVICE
    29, // CAP_AUDIT_WRITE
];

/// Everything the child needs, built once per sandbox.
#[derive(Debug)]
pub struct ChildSteps {
    pub realm: Realm,
    pub mounts: std::sync::Arc<RealmMounts>,
    pub drop_capabilities: bool,
    pub ruleset: OwnedFd,
    pub filters: Filters,
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

/// The two words of the kept set.
const fn kept_words() -> [u32; 2] {
    let mut words = [0u32; 2];
    let mut index = 0;
    while index < KEPT_CAPABILITIES.len() {
        let capability = KEPT_CAPABILITIES[index];
        words[(capability / 32) as usize] |= 1 << (capability % 32);
        index += 1;
    }
    words
}

/// Keeps only [`KEPT_CAPABILITIES`] in the effective, permitted and
/// inheritable sets (the ambient set follows: the kernel keeps it within
/// permitted and inheritable) in one `capset`. The `no_new_privs` set
/// right after makes it final: under it, an `exec` (setuid, root's, or
/// with file capabilities) never gives more than the permitted set it
/// starts with, so nothing the command runs gets the others back. The
/// bounding set is left as it is on purpose: it can only shrink one
/// capability per `PR_CAPBSET_DROP`, each a new set of credentials, and
/// under `no_new_privs` it limits nothing more.
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
    for (word, keep) in words.iter_mut().zip(kept_words()) {
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
    /// In the first child of a launch: joins the realm's user namespace
    /// (if it has one: it gives the rights the next joins need) and its
    /// pid namespace, so that the process it makes next is inside.
    pub fn before_fork(&self) -> std::io::Result<()> {
        if let Some(user) = &self.realm.user {
            join(user, libc::CLONE_NEWUSER)?;
        }
        join(&self.realm.pid, libc::CLONE_NEWPID)
    }

    /// In the command's process, made inside the realm's pid namespace
    /// (and user namespace) by [`ChildSteps::before_fork`]'s process.
    pub fn apply(&self) -> std::io::Result<()> {
        self.inherited_steps(|realm| enter_mounts(&realm.mount))?;
        self.own_steps()
    }

    /// Applies every step but the per-process ones to the calling thread
    /// of a spawner (see `crate::spawner`), the pid namespace included:
    /// its children are made inside the realm and inherit the rest; they
    /// take only [`ChildSteps::apply_on_spawner`]. Not for a realm with a
    /// user namespace: only a single-threaded process may join one.
    pub fn apply_to_thread(&self) -> std::io::Result<()> {
        if self.realm.user.is_some() {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        join(&self.realm.pid, libc::CLONE_NEWPID)?;
        self.inherited_steps(|realm| {
            // A thread shares its filesystem context (root, directory,
            // umask) with the others; joining a mount namespace needs its
            // own, a copy taken now.
            // SAFETY: plain system calls; the descriptor is kept open by
            // the sandbox as long as the realm.
            check(unsafe { libc::unshare(libc::CLONE_FS) })?;
            join(&realm.mount, libc::CLONE_NEWNS)
        })
    }

    /// The steps left to a child of a spawner's thread.
    pub fn apply_on_spawner(&self) -> std::io::Result<()> {
        self.own_steps()
    }

    /// Per process, last: the command becomes the reaper of its own
    /// orphans (a `setsid` double fork stays in its tree while it runs,
    /// where the tree's stop finds it), and Landlock, which a spawner's
    /// thread must not take (a thread in the commands' domain could be
    /// signalled or traced by them).
    fn own_steps(&self) -> std::io::Result<()> {
        // SAFETY: plain prctl.
        check(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })?;
        landlock::restrict_self(&self.ruleset)
    }

    /// The steps a task's children inherit, in their order, with
    /// `join_mounts` joining the mount namespace: the network, IPC, the
    /// mounts, the capabilities, `no_new_privs`, and last the filter,
    /// which denies the `setns` calls made before it.
    fn inherited_steps(
        &self,
        join_mounts: impl FnOnce(&Realm) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        if let Some(network) = &self.realm.network {
            join(network, libc::CLONE_NEWNET)?;
        }
        join(&self.realm.ipc, libc::CLONE_NEWIPC)?;
        join_mounts(&self.realm)?;
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

/// Joins the realm's mount namespace from the child. Async-signal-safe.
/// `setns` moves the working directory to the namespace's root: the
/// directory the child had is entered again by path, in the realm's view.
/// (The launch sets the command's directory after the steps anyway; a
/// caller that set it before gets it back here.) Should that directory not
/// be reachable in the realm, the child stays at its root: not an error
/// here.
fn enter_mounts(mount: &OwnedFd) -> std::io::Result<()> {
    let mut buffer = [0u8; libc::PATH_MAX as usize];
    // SAFETY: getcwd writes at most `buffer.len()` bytes, NUL included.
    let found = !unsafe { libc::getcwd(buffer.as_mut_ptr().cast(), buffer.len()) }.is_null();
    // SAFETY: a descriptor kept open as long as the realm.
    check(unsafe { libc::setns(mount.as_raw_fd(), libc::CLONE_NEWNS) })?;
    if found {
        // SAFETY: getcwd NUL-terminated the path in `buffer`.
        unsafe { libc::chdir(buffer.as_ptr().cast()) };
    }
    Ok(())
}
