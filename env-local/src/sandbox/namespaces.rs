//! Namespaces: a private network (only a loopback) and a private view of
//! the mounts where protected paths are read-only (see `mounts.rs`), all
//! made once by a helper process and joined by every command.
//!
//! A network namespace costs ~0.4 ms to create (measured: `bash -c true`
//! 1.0 → 1.4 ms), far over the 10% budget, so it is created once per
//! sandbox by a short-lived helper process, with `lo` up, and every command
//! joins it with `setns` (a few µs). Commands of one sandbox therefore share
//! one loopback: a server started by one call is reachable by the next, and
//! nothing of the host is.
//!
//! A non-root user needs a user namespace to create the others; the helper
//! creates it too (mapping the user to itself, so files keep their owner and
//! the command has no capability left after `exec`), and commands join it.
//! Root does without: a user namespace would hide the files of other users
//! from root's `CAP_DAC_OVERRIDE` (only one id can be mapped from inside).

// System calls the standard library does not wrap; each block says why it
// is sound.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::mounts::MountPlan;
use crate::error::Error;

/// Namespaces joined by every command of a sandbox.
#[derive(Debug, Default)]
pub struct Shared {
    pub user: Option<OwnedFd>,
    pub network: Option<OwnedFd>,
    pub mount: Option<OwnedFd>,
}

/// The helper's user namespace.
#[derive(Debug, Clone, Copy)]
pub enum User<'a> {
    /// Stay in the caller's (root).
    Keep,
    /// Create one mapping the user to itself.
    Create,
    /// Join this one (a mount namespace rebuilt later must belong to the
    /// user namespace the commands join).
    Join(&'a OwnedFd),
}

/// What the helper must make.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    pub user: User<'a>,
    pub network: bool,
    /// A mount namespace with this plan applied.
    pub mounts: Option<&'a MountPlan>,
}

/// Failure codes the helper reports on its pipe, one byte.
const FAILED_USER: u8 = 1;
const FAILED_MAPS: u8 = 2;
const FAILED_NETWORK: u8 = 3;
const FAILED_LOOPBACK: u8 = 4;
const FAILED_MOUNT: u8 = 5;
const FAILED_BINDS: u8 = 6;
const READY: u8 = 0;

/// Creates the shared namespaces with a helper process that holds them
/// while the parent opens `/proc/<pid>/ns/*`, then exits.
pub fn create_shared(wanted: Wanted<'_>) -> Result<Shared, Error> {
    if matches!(wanted.user, User::Keep) && !wanted.network && wanted.mounts.is_none() {
        return Ok(Shared::default());
    }
    // Prepared before the fork: the child may not allocate.
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    let (ready_read, ready_write) = pipe()?;
    let (hold_read, hold_write) = pipe()?;
    // SAFETY: the child runs only async-signal-safe system calls on memory
    // prepared above, then `_exit`s; it never returns into Rust code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(setup("forking the namespace helper"));
    }
    if pid == 0 {
        drop(ready_read);
        drop(hold_write);
        // Hold nothing of the parent's but our two pipes: a copy of another
        // helper's hold pipe (made by a sandbox prepared at the same time on
        // another thread) would keep that helper, and so its waiter, alive
        // forever, and it would keep ours.
        close_all_except(&[ready_write.as_raw_fd(), hold_read.as_raw_fd()]);
        let code = helper_child(wanted, uid_map.as_bytes(), gid_map.as_bytes());
        write_byte(&ready_write, code);
        if code == READY {
            let mut byte = 0u8;
            // SAFETY: reads into a one-byte buffer on the stack; returns at
            // EOF, when the parent closes its end.
            unsafe { libc::read(hold_read.as_raw_fd(), (&raw mut byte).cast(), 1) };
        }
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    drop(ready_write);
    drop(hold_read);
    let code = read_byte(&ready_read);
    let shared = match code {
        Some(READY) => open_shared(pid, wanted),
        Some(code) => Err(helper_failure(code)),
        None => Err(setup("the namespace helper died before it was ready")),
    };
    drop(hold_write);
    // SAFETY: waits for our own child; a null status pointer is allowed.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    shared
}

fn open_shared(pid: libc::pid_t, wanted: Wanted<'_>) -> Result<Shared, Error> {
    let open = |name: &str| {
        std::fs::File::open(format!("/proc/{pid}/ns/{name}"))
            .map(OwnedFd::from)
            .map_err(|source| Error::SandboxSetup {
                step: format!("opening the helper's {name} namespace"),
                source,
            })
    };
    Ok(Shared {
        user: matches!(wanted.user, User::Create)
            .then(|| open("user"))
            .transpose()?,
        network: wanted.network.then(|| open("net")).transpose()?,
        mount: wanted.mounts.is_some().then(|| open("mnt")).transpose()?,
    })
}

fn helper_failure(code: u8) -> Error {
    let (feature, reason) = match code {
        FAILED_USER => (
            "user namespaces",
            "unshare(CLONE_NEWUSER) was refused (kernel.unprivileged_userns_clone=0, user.max_user_namespaces=0 or an AppArmor rule)",
        ),
        FAILED_MAPS => (
            "user namespaces",
            "writing /proc/self/uid_map or gid_map was refused",
        ),
        FAILED_NETWORK => ("network namespaces", "unshare(CLONE_NEWNET) was refused"),
        FAILED_LOOPBACK => (
            "network namespaces",
            "the loopback interface of the private network could not be brought up",
        ),
        FAILED_MOUNT => ("mount namespaces", "unshare(CLONE_NEWNS) was refused"),
        _ => (
            "read-only bind mounts",
            "binding the protected paths read-only was refused",
        ),
    };
    Error::SandboxUnsupported {
        mode: "namespaces".to_owned(),
        feature,
        reason: reason.to_owned(),
    }
}

/// The helper's steps; returns [`READY`] or a failure code.
fn helper_child(wanted: Wanted<'_>, uid_map: &[u8], gid_map: &[u8]) -> u8 {
    match wanted.user {
        User::Keep => {}
        User::Create => {
            if unshare(libc::CLONE_NEWUSER).is_err() {
                return FAILED_USER;
            }
            let maps = write_file(c"/proc/self/setgroups", b"deny")
                .and_then(|()| write_file(c"/proc/self/uid_map", uid_map))
                .and_then(|()| write_file(c"/proc/self/gid_map", gid_map));
            if maps.is_err() {
                return FAILED_MAPS;
            }
        }
        User::Join(user) => {
            if join(user, libc::CLONE_NEWUSER).is_err() {
                return FAILED_USER;
            }
        }
    }
    if wanted.network {
        if unshare(libc::CLONE_NEWNET).is_err() {
            return FAILED_NETWORK;
        }
        if loopback_up().is_err() {
            return FAILED_LOOPBACK;
        }
    }
    if let Some(plan) = wanted.mounts {
        if unshare(libc::CLONE_NEWNS).is_err() {
            return FAILED_MOUNT;
        }
        if plan.apply().is_err() {
            return FAILED_BINDS;
        }
    }
    READY
}

fn setup(step: &str) -> Error {
    Error::SandboxSetup {
        step: step.to_owned(),
        source: std::io::Error::last_os_error(),
    }
}

/// Closes every descriptor from 3 up except `keep` (async-signal-safe:
/// `close_range` system calls only).
fn close_all_except(keep: &[libc::c_int]) {
    let mut sorted = [libc::c_int::MAX; 2];
    for (slot, &fd) in sorted.iter_mut().zip(keep) {
        *slot = fd;
    }
    sorted.sort_unstable();
    let mut from: libc::c_int = 3;
    for &fd in &sorted {
        if fd == libc::c_int::MAX {
            break;
        }
        if fd > from {
            // SAFETY: close_range on our own descriptor numbers.
            unsafe {
                libc::syscall(
                    libc::SYS_close_range,
                    from as libc::c_uint,
                    (fd - 1) as libc::c_uint,
                    0,
                );
            }
        }
        from = from.max(fd + 1);
    }
    // SAFETY: as above.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            from as libc::c_uint,
            libc::c_uint::MAX,
            0,
        );
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd), Error> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(setup("creating a pipe for the namespace helper"));
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn write_byte(fd: &OwnedFd, byte: u8) {
    // SAFETY: writes one byte from the stack.
    unsafe { libc::write(fd.as_raw_fd(), (&raw const byte).cast(), 1) };
}

fn read_byte(fd: &OwnedFd) -> Option<u8> {
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into the stack.
        let count = unsafe { libc::read(fd.as_raw_fd(), (&raw mut byte).cast(), 1) };
        if count == 1 {
            return Some(byte);
        }
        if count < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return None;
    }
}

pub fn check(result: libc::c_int) -> std::io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

pub fn unshare(flags: libc::c_int) -> std::io::Result<()> {
    // SAFETY: plain system call.
    check(unsafe { libc::unshare(flags) })
}

/// Joins the namespace behind `fd`. Async-signal-safe.
pub fn join(fd: &OwnedFd, kind: libc::c_int) -> std::io::Result<()> {
    // SAFETY: plain system call on a descriptor we own.
    check(unsafe { libc::setns(fd.as_raw_fd(), kind) })
}

/// Writes `bytes` to an existing file in one `write`. Async-signal-safe.
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: `path` is NUL-terminated; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: writes from a live slice; closes the descriptor opened above.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let error = std::io::Error::last_os_error();
    // SAFETY: closes the descriptor opened above.
    unsafe { libc::close(fd) };
    if written == bytes.len() as isize {
        Ok(())
    } else {
        Err(error)
    }
}

/// `struct ifreq` reduced to the name and the flags (40 bytes on 64-bit).
#[repr(C)]
struct InterfaceFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    padding: [u8; 22],
}

/// Brings `lo` up in the current network namespace (a new one has it down:
/// even 127.0.0.1 would be unreachable).
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: plain system call.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut request = InterfaceFlags {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short,
        padding: [0; 22],
    };
    request.name[..2].copy_from_slice(b"lo");
    // SAFETY: SIOCSIFFLAGS reads an ifreq; ours has the kernel's layout and size.
    let result = unsafe { libc::ioctl(socket, libc::SIOCSIFFLAGS, &raw mut request) };
    let error = std::io::Error::last_os_error();
    // SAFETY: closes the socket opened above.
    unsafe { libc::close(socket) };
    if result == 0 { Ok(()) } else { Err(error) }
}
