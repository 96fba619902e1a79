//! Starting a process with steps in the child before exec (a sandbox's
//! Landlock restriction, a seccomp filter, limits): `fork`, then in the
//! child only async-signal-safe calls on data prepared before the fork,
//! then `execvpe`. Used only when a wrapper asks for such a step;
//! [`crate::posix_spawn`] is the fast path otherwise.
//!
//! The child reports a failure (of a step or of exec) as an errno on a
//! close-on-exec pipe: the parent reads 0 bytes when exec succeeded.

use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::sync::Arc;

use crate::posix_spawn::{CLaunch, ChildFds};
use crate::wrap::SpawnWrapper;

/// Signals a host may ignore or block that the command must get by default
/// (our SIGTERM must work; `yes | head` must end by SIGPIPE).
const DEFAULT_SIGNALS: [libc::c_int; 5] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGPIPE,
];

/// Forks, applies `fds`, a new session, default signals and each wrapper's
/// step in the child, and execs `launch`. Returns the child's pid.
pub(crate) fn spawn(
    launch: &CLaunch,
    fds: &ChildFds,
    wrappers: &[Arc<dyn SpawnWrapper>],
) -> io::Result<u32> {
    let mut argv: Vec<*const libc::c_char> = launch.argv.iter().map(|arg| arg.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = launch.env.iter().map(|pair| pair.as_ptr()).collect();
    envp.push(std::ptr::null());
    let (report_read, report_write): (OwnedFd, OwnedFd) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)?;
    let report = report_write.as_raw_fd();
    // SAFETY: after fork the child calls only async-signal-safe functions
    // (setsid, dup2, chdir, signal, sigprocmask, write, execvpe, _exit) and
    // the wrappers' steps, which the trait requires to be async-signal-safe;
    // every pointer refers to memory prepared before the fork.
    #[allow(unsafe_code)]
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        #[allow(unsafe_code)]
        // SAFETY: see above; this block never returns.
        unsafe {
            child(launch, fds, wrappers, &argv, &envp, report);
        }
    }
    drop(report_write);
    let mut errno = [0_u8; 4];
    let read = loop {
        match nix::unistd::read(&report_read, &mut errno) {
            Err(nix::errno::Errno::EINTR) => {}
            other => break other,
        }
    };
    match read {
        Ok(4) => {
            // The child failed before exec and exits at once: reap it here,
            // nobody else knows about it.
            let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
            Err(io::Error::from_raw_os_error(i32::from_ne_bytes(errno)))
        }
        _ => Ok(pid as u32),
    }
}

/// The child's side: never returns.
#[allow(unsafe_code)]
unsafe fn child(
    launch: &CLaunch,
    fds: &ChildFds,
    wrappers: &[Arc<dyn SpawnWrapper>],
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    report: libc::c_int,
) -> ! {
    let fail = |errno: libc::c_int| -> ! {
        let bytes = errno.to_ne_bytes();
        // SAFETY: write and _exit are async-signal-safe.
        unsafe {
            libc::write(report, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127)
        }
    };
    let last_errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: plain system calls on descriptors and memory we own.
    unsafe {
        if libc::setsid() < 0 {
            fail(last_errno());
        }
        let stdin = if let Some(fd) = fds.stdin {
            fd
        } else {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if null < 0 {
                fail(last_errno());
            }
            null
        };
        for (source, target) in [(stdin, 0), (fds.stdout, 1), (fds.stderr, 2)]
            .into_iter()
            .chain(fds.extra.iter().copied())
        {
            if libc::dup2(source, target) < 0 {
                fail(last_errno());
            }
        }
        if libc::chdir(launch.cwd.as_ptr()) < 0 {
            fail(last_errno());
        }
        for signal in DEFAULT_SIGNALS {
            libc::signal(signal, libc::SIG_DFL);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const empty, std::ptr::null_mut());
    }
    for wrapper in wrappers {
        if let Err(error) = wrapper.pre_exec() {
            fail(error.raw_os_error().unwrap_or(libc::EPERM));
        }
    }
    // Nothing else is inherited (see posix_spawn.rs), after the wrappers'
    // steps (a sandbox uses descriptors it prepared), sparing the report
    // pipe (close-on-exec: exec closes it). close_range needs Linux 5.9; on
    // older kernels the descriptors stay, as before.
    let first = crate::posix_spawn::first_free_fd(fds);
    // SAFETY: close_range is a plain system call on our own descriptors.
    unsafe {
        let close = |from: libc::c_int, to: libc::c_uint| {
            libc::syscall(libc::SYS_close_range, from as libc::c_uint, to, 0);
        };
        if report >= first {
            if report > first {
                close(first, (report - 1) as libc::c_uint);
            }
            close(report + 1, libc::c_uint::MAX);
        } else {
            close(first, libc::c_uint::MAX);
        }
    }
    // SAFETY: argv and envp end with null pointers and point into CStrings
    // that live in the parent's (copied) memory.
    unsafe {
        match &launch.program {
            Some(program) => libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr()),
            None => libc::execvpe(argv[0], argv.as_ptr(), envp.as_ptr()),
        };
    }
    fail(last_errno())
}
