//! Small helpers for the namespaces of a realm (see `realm.rs`): joining
//! one, running steps inside a realm's mount namespace from a helper
//! process, bringing up a loopback, writing an id map.

use std::os::fd::{AsRawFd, OwnedFd};

use bashtool_process::ChildSteps;

/// Runs `steps` in a helper process that joined `user` (if any) and then
/// the mount namespace `mount`: a multithreaded process cannot join them
/// itself. Returns the first error `steps` or a join reported.
///
/// # Safety
///
/// `steps` runs in a child forked from a multithreaded process: it must
/// keep the rules of [`ChildSteps`] (async-signal-safe system calls on data
/// prepared beforehand; no allocation, no locks).
pub unsafe fn in_namespaces(
    user: Option<&OwnedFd>,
    mount: &OwnedFd,
    steps: impl Fn() -> std::io::Result<()>,
) -> std::io::Result<()> {
    bashtool_process::run_in_helper(0, &InNamespaces { user, mount, steps })
}

/// The helper's steps: join, then the caller's.
struct InNamespaces<'a, F> {
    user: Option<&'a OwnedFd>,
    mount: &'a OwnedFd,
    steps: F,
}

// SAFETY: the joins are setns system calls; `steps` keeps the same rules,
// as the caller of `in_namespaces` promised.
unsafe impl<F: Fn() -> std::io::Result<()>> ChildSteps for InNamespaces<'_, F> {
    fn run(&self, _report: std::os::fd::BorrowedFd<'_>) -> i32 {
        let result = self
            .user
            .map_or(Ok(()), |user| join(user, libc::CLONE_NEWUSER))
            .and_then(|()| join(self.mount, libc::CLONE_NEWNS))
            .and_then(|()| (self.steps)());
        match result {
            Ok(()) => 0,
            Err(error) => error.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}

/// Closes every descriptor from 3 up except `keep` (up to three;
/// async-signal-safe: `close_range` system calls only).
pub fn close_all_except(keep: &[libc::c_int]) {
    let mut sorted = [libc::c_int::MAX; 3];
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
    // The request number's type is the C library's (glibc: unsigned long,
    // musl: int).
    let set_flags = libc::SIOCSIFFLAGS as libc::Ioctl;
    // SAFETY: SIOCSIFFLAGS reads an ifreq; ours has the kernel's layout and size.
    let result = unsafe { libc::ioctl(socket, set_flags, &raw mut request) };
    let error = std::io::Error::last_os_error();
    // SAFETY: closes the socket opened above.
    unsafe { libc::close(socket) };
    if result == 0 { Ok(()) } else { Err(error) }
}

/// Makes a listening TCP socket on `127.0.0.1:port` of the current network
/// namespace (a socket belongs to the namespace it was made in, wherever
/// it is used later) and sends it over the unix socket `channel`; our copy
/// closes on exec. Async-signal-safe: system calls on the stack only.
pub fn listen_and_send(port: u16, channel: libc::c_int) -> std::io::Result<()> {
    // SAFETY: plain system call.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let address = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: bind reads a sockaddr_in of the given size from our stack.
    check(unsafe {
        libc::bind(
            socket,
            (&raw const address).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    // SAFETY: plain system call.
    check(unsafe { libc::listen(socket, 1024) })?;
    send_descriptor(channel, socket)
}

/// Room for one `SCM_RIGHTS` message of one descriptor, aligned as a
/// `cmsghdr` must be.
#[repr(C, align(8))]
struct OneDescriptor([u8; 32]);

/// Sends `fd` over the unix socket `channel` (one byte of data, the
/// descriptor as `SCM_RIGHTS`). Async-signal-safe.
fn send_descriptor(channel: libc::c_int, fd: libc::c_int) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut data = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = OneDescriptor([0; 32]);
    // SAFETY: an all-zero msghdr is valid; its pointers are set below to
    // buffers on this stack that outlive the call.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &raw mut data;
    message.msg_iovlen = 1;
    message.msg_control = control.0.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size. (The field's type is the C
    // library's: glibc size_t, musl socklen_t.)
    message.msg_controllen =
        unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as _;
    // SAFETY: the control buffer holds CMSG_SPACE(sizeof(int)) bytes
    // (24 ≤ 32), so the first header and its data lie inside it.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&raw const message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>(), fd);
    }
    // SAFETY: sendmsg reads the message built above.
    let sent = unsafe { libc::sendmsg(channel, &raw const message, libc::MSG_NOSIGNAL) };
    if sent == 1 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Receives the descriptor [`listen_and_send`] sent, without waiting (it
/// was sent before the sender exec'd).
pub fn receive_descriptor(channel: &OwnedFd) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd as _;
    let mut byte = [0u8; 1];
    let mut data = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = OneDescriptor([0; 32]);
    // SAFETY: an all-zero msghdr is valid; its pointers are set below to
    // buffers on this stack that outlive the call.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &raw mut data;
    message.msg_iovlen = 1;
    message.msg_control = control.0.as_mut_ptr().cast();
    message.msg_controllen = control.0.len() as _;
    // SAFETY: recvmsg writes into the buffers described above.
    let received = unsafe {
        libc::recvmsg(
            channel.as_raw_fd(),
            &raw mut message,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if received < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel filled the control buffer; CMSG_FIRSTHDR checks
    // its length before pointing into it.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&raw const message);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(std::io::Error::other("no descriptor arrived"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}
