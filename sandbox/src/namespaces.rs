//! Small helpers for the namespaces of a realm (see `realm.rs`): joining
//! one, running steps inside a realm's mount namespace from a helper
//! process, bringing up a loopback, writing an id map.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Runs `steps` in a helper process that joined `user` (if any) and then
/// the mount namespace `mount`: a multithreaded process cannot join them
/// itself. The helper is a fork: `steps` must be async-signal-safe (system
/// calls on data prepared beforehand; no allocation, no locks). Returns
/// the first error `steps` or a join reported.
pub fn in_namespaces(
    user: Option<&OwnedFd>,
    mount: &OwnedFd,
    steps: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are ours alone.
    let (report_read, report_write) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child runs only async-signal-safe system calls on data
    // prepared by the caller, then `_exit`s; it never returns into the
    // caller's code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        let result = user
            .map_or(Ok(()), |user| join(user, libc::CLONE_NEWUSER))
            .and_then(|()| join(mount, libc::CLONE_NEWNS))
            .and_then(|()| steps());
        let errno: i32 = match result {
            Ok(()) => 0,
            Err(error) => error.raw_os_error().unwrap_or(libc::EIO),
        };
        let bytes = errno.to_ne_bytes();
        // SAFETY: writes four bytes from the stack, then ends the child
        // without running the parent's destructors.
        unsafe {
            libc::write(report_write.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
            libc::_exit(0);
        }
    }
    drop(report_write);
    let mut bytes = [0u8; 4];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: reads into the rest of a stack buffer.
        let count = unsafe {
            libc::read(
                report_read.as_raw_fd(),
                bytes[filled..].as_mut_ptr().cast(),
                bytes.len() - filled,
            )
        };
        if count > 0 {
            filled += count as usize;
        } else if count < 0
            && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {
        } else {
            break;
        }
    }
    loop {
        // SAFETY: waits for our own child; a null status pointer is allowed.
        let result = unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        if result >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    match (filled, i32::from_ne_bytes(bytes)) {
        (4, 0) => Ok(()),
        (4, errno) => Err(std::io::Error::from_raw_os_error(errno)),
        _ => Err(std::io::Error::other("the namespace helper died")),
    }
}

/// Closes every descriptor from 3 up except `keep` (async-signal-safe:
/// `close_range` system calls only).
pub fn close_all_except(keep: &[libc::c_int]) {
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

pub fn check(result: libc::c_int) -> std::io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Joins the namespace behind `fd`. Async-signal-safe.
pub fn join(fd: &OwnedFd, kind: libc::c_int) -> std::io::Result<()> {
    // SAFETY: plain system call on a descriptor we own.
    check(unsafe { libc::setns(fd.as_raw_fd(), kind) })
}

/// Writes `bytes` to an existing file in one `write`. Async-signal-safe.
pub fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
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
pub fn loopback_up() -> std::io::Result<()> {
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
