//! Helper processes that are not commands: a child forked (optionally into
//! new namespaces) to take a few steps and then either exec a program or
//! end. A sandbox's realm init and the helper that changes mounts inside a
//! realm start here, so that every process bashtool makes comes from this
//! crate.
//!
//! The child is a plain fork (a copy of our memory, not shared): its steps
//! may read anything prepared before the fork, yet it was forked from a
//! multithreaded process, so it may only make async-signal-safe calls (no
//! allocation, no locks: another thread may have held them at the fork).
//! It reports how it ended on a close-on-exec pipe: nothing when it
//! exec'd, a code when its steps returned.

use std::io;
use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};

/// The steps a helper child takes.
///
/// # Safety
///
/// [`ChildSteps::run`] runs in a child forked from a process with other
/// threads. It must only make async-signal-safe calls (system calls,
/// `write`, `execve`, ...) on data prepared before the fork: no allocation,
/// no locks, no panics, no code that may take a lock or allocate (`std::fs`,
/// formatting, `println!`). It must not return into code that assumes it
/// is still the parent: it either execs or returns its code, which this
/// crate reports before ending the child with `_exit`.
pub unsafe trait ChildSteps {
    /// Takes the steps; `report` is the pipe the code goes to (keep it
    /// open when closing descriptors). Returns 0 for success, another
    /// value for a failure the caller decodes; an exec that succeeds
    /// never returns.
    fn run(&self, report: BorrowedFd<'_>) -> i32;
}

/// How a helper child ended up.
#[derive(Debug)]
pub enum HelperEnd {
    /// It exec'd (or died before it could say otherwise): it runs as the
    /// program now, and the caller must reap it.
    Running {
        /// Its pid.
        pid: u32,
    },
    /// Its steps returned this code; it has ended and is reaped.
    Returned(i32),
}

/// Forks a child into the new namespaces `namespaces` (`CLONE_NEW*` flags,
/// 0 for none) that takes `steps`, and waits until it exec'd or returned.
pub fn fork_helper(namespaces: libc::c_int, steps: &dyn ChildSteps) -> io::Result<HelperEnd> {
    crate::exit_statuses::keep_exit_statuses();
    let (report_read, report_write): (OwnedFd, OwnedFd) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // SAFETY: a clone without CLONE_VM is a fork (into the new namespaces):
    // the child has a copy of our memory and, by `ChildSteps`' contract,
    // makes only async-signal-safe calls in `steps.run`, then writes its
    // code from the stack and `_exit`s; it never returns into the caller.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::c_long::from(namespaces | libc::SIGCHLD),
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        let code = steps.run(report_write.as_fd());
        let bytes = code.to_ne_bytes();
        // SAFETY: write and _exit are async-signal-safe; `_exit` skips the
        // destructors of the parent's copy of memory.
        unsafe {
            libc::write(report_write.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
            libc::_exit(if code == 0 { 0 } else { 127 });
        }
    }
    let pid = pid as u32;
    drop(report_write);
    let mut bytes = [0_u8; 4];
    let mut filled = 0;
    while filled < bytes.len() {
        match rustix::io::read(&report_read, &mut bytes[filled..]) {
            Ok(0) => break,
            Ok(count) => filled += count,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    match filled {
        0 => Ok(HelperEnd::Running { pid }),
        4 => {
            reap_child(pid);
            Ok(HelperEnd::Returned(i32::from_ne_bytes(bytes)))
        }
        _ => {
            reap_child(pid);
            Err(io::Error::other("the helper process died while reporting"))
        }
    }
}

/// Runs `steps` in a helper child and waits for it: their error, or the
/// helper's death, comes back as an error.
pub fn run_in_helper(namespaces: libc::c_int, steps: &dyn ChildSteps) -> io::Result<()> {
    match fork_helper(namespaces, steps)? {
        HelperEnd::Returned(0) => Ok(()),
        HelperEnd::Returned(errno) => Err(io::Error::from_raw_os_error(errno)),
        HelperEnd::Running { pid } => {
            // Steps that return must not exec: end it all the same.
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(pid as i32).expect("a child's pid is positive"),
                rustix::process::Signal::KILL,
            );
            reap_child(pid);
            Err(io::Error::other(
                "the helper process died before it reported",
            ))
        }
    }
}

/// Waits for our child `pid` to end and reaps it; returns its raw wait
/// status and the peak resident memory, in KiB, of it and of the children
/// it waited for (`ru_maxrss`).
pub fn wait_with_peak(pid: u32) -> io::Result<(i32, u64)> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value; wait4 only writes
        // the status and the rusage it is given.
        let (waited, usage) = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            let waited = libc::wait4(pid, &raw mut status, 0, &raw mut usage);
            (waited, usage)
        };
        if waited == pid {
            return Ok((status, u64::try_from(usage.ru_maxrss).unwrap_or(0)));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Waits for our child `pid` to end.
pub fn reap_child(pid: u32) {
    let pid = nix::unistd::Pid::from_raw(pid as i32);
    while let Err(nix::errno::Errno::EINTR) = nix::sys::wait::waitpid(pid, None) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns the code it holds.
    struct Returns(i32);

    // SAFETY: `run` returns a value it holds; no call at all.
    unsafe impl ChildSteps for Returns {
        fn run(&self, _report: BorrowedFd<'_>) -> i32 {
            self.0
        }
    }

    #[test]
    fn a_helper_reports_what_its_steps_returned() {
        assert!(matches!(
            fork_helper(0, &Returns(7)).expect("forks"),
            HelperEnd::Returned(7)
        ));
        run_in_helper(0, &Returns(0)).expect("success");
        let error = run_in_helper(0, &Returns(libc::EACCES)).expect_err("failure");
        assert_eq!(error.raw_os_error(), Some(libc::EACCES));
    }
}
