//! Starting a process with steps in the child before exec (a sandbox's
//! Landlock restriction, a seccomp filter, limits): a child made with
//! `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, as glibc's
//! `posix_spawn` makes its own, then in the child only async-signal-safe
//! system calls on data prepared before, then `execve`.
//!
//! Why not `fork`: it copies the page tables of the whole process, which
//! cost a sandboxed call about a quarter of a `bash -c true` in a server
//! that had run for a while. The child shares our memory until it execs
//! (this thread waits meanwhile; the others run on), so it writes nothing
//! but its own stack, and every handler of ours is reset before any
//! signal may reach it. Each step it takes acts on the calling task only
//! (joining namespaces, Landlock, seccomp, `no_new_privs`): the kernel
//! allows a task that shares memory but not its thread group or its
//! filesystem context to join a user namespace.
//!
//! The child reports a failure (of a step or of exec) as an errno on a
//! close-on-exec pipe: the parent reads 0 bytes when exec succeeded.
//!
//! A wrapper may offer a spawner (`crate::spawner`: the sandbox does), a
//! thread that took the wrapper's per-task steps on itself: the clone is
//! then made on that thread, while this one waits, and the child takes
//! only the wrapper's remaining steps.
//!

use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::posix_spawn::{CLaunch, ChildFds, DEFAULT_SIGNALS};
use crate::wrapper::{Wrapper, need_pre_fork};

/// Forks, applies `fds`, a new session, default signals and each wrapper's
/// step in the child, and execs `launch`. Returns the child's pid.
pub(crate) fn spawn(
    launch: &CLaunch,
    fds: &ChildFds,
    wrappers: &[Arc<dyn Wrapper>],
) -> io::Result<u32> {
    let mut argv: Vec<*const libc::c_char> = launch.argv.iter().map(|arg| arg.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = launch.env.iter().map(|pair| pair.as_ptr()).collect();
    envp.push(std::ptr::null());
    let (report_read, report_write): (OwnedFd, OwnedFd) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)?;
    // The child's dup2s fill the numbers below `first_free_fd`: the report
    // pipe must sit above them, or a failure would be written into the
    // command's descriptor.
    let report_write = above(report_write, crate::posix_spawn::first_free_fd(fds))?;
    let report = report_write.as_raw_fd();
    let mut arguments = ChildArguments {
        launch,
        fds,
        wrappers,
        argv: &argv,
        envp: &envp,
        report,
        steps_done_by: None,
        command_pid: std::sync::atomic::AtomicI32::new(-1),
    };
    let pid = match spawner_for(launch, wrappers) {
        Some((index, spawner)) => {
            arguments.steps_done_by = Some(index);
            let shared = SharedArguments(&raw mut arguments);
            if let Ok(started) = spawner.run(move || clone_child(shared.get())) {
                let pid = started?;
                spawner.record_child(pid);
                pid
            } else {
                // Its thread is gone (it cannot be, short of a bug): the
                // child takes every step itself.
                arguments.steps_done_by = None;
                clone_child(&mut arguments)?
            }
        }
        None => clone_child(&mut arguments)?,
    };
    drop(report_write);
    // With a step before the fork (a pid namespace to join), `pid` is the
    // first child, which has exited: the command is the child it made.
    let first_child = (arguments.steps_done_by.is_none() && need_pre_fork(wrappers)).then_some(pid);
    let command = match first_child {
        Some(first) => {
            let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(first), None);
            arguments.command_pid.load(Ordering::Acquire)
        }
        None => pid,
    };
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
            if command > 0 {
                let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(command), None);
            }
            Err(io::Error::from_raw_os_error(i32::from_ne_bytes(errno)))
        }
        _ if command <= 0 => Err(io::Error::other("the launch's first child made no process")),
        _ => Ok(command as u32),
    }
}

/// The first wrapper's spawner, with the wrapper's index, for a launch
/// whose directory is absolute (the spawner's thread stands elsewhere: a
/// relative one would be found from there).
fn spawner_for(
    launch: &CLaunch,
    wrappers: &[Arc<dyn Wrapper>],
) -> Option<(usize, Arc<crate::spawner::Spawner>)> {
    if launch.cwd.as_bytes().first() != Some(&b'/') {
        return None;
    }
    wrappers
        .iter()
        .enumerate()
        .find_map(|(index, wrapper)| wrapper.spawner().map(|spawner| (index, spawner)))
}

/// The child's arguments, handed to the spawner's thread, which uses them
/// while this thread waits in [`crate::spawner::Spawner::run`].
struct SharedArguments<'a>(*mut ChildArguments<'a>);

// SAFETY: the pointee lives on the stack of the thread that waits in
// `Spawner::run` until the spawner's thread is done with it; only one
// thread uses it at a time.
unsafe impl Send for SharedArguments<'_> {}

impl<'a> SharedArguments<'a> {
    /// A method, not a field access, so that a closure takes the whole
    /// (Send) wrapper.
    fn get<'b>(self) -> &'b mut ChildArguments<'a> {
        // SAFETY: see the Send impl: the pointee outlives the use.
        unsafe { &mut *self.0 }
    }
}

/// `fd`, or a close-on-exec copy of it numbered `floor` or more.
fn above(fd: OwnedFd, floor: RawFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() >= floor {
        return Ok(fd);
    }
    let raw = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(floor))
        .map_err(io::Error::from)?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that we own.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) })
}

/// Bytes of the child's stack: the steps and `execve` need little; the
/// lowest page is a guard.
const CHILD_STACK: usize = 256 * 1024;

/// What the child needs, on the parent's stack (which the child reads
/// only: the parent waits until the child execs or exits).
struct ChildArguments<'a> {
    launch: &'a CLaunch,
    fds: &'a ChildFds,
    wrappers: &'a [Arc<dyn Wrapper>],
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    report: libc::c_int,
    /// The wrapper (by index) whose spawner made the child: its per-task
    /// steps are inherited, the child takes only the rest.
    steps_done_by: Option<usize>,
    /// With a step before the fork: the pid of the command's process, set
    /// by the first child (which shares our memory) before it exits.
    command_pid: std::sync::atomic::AtomicI32,
}

/// A stack mapped for the child and unmapped after it left it.
struct ChildStack {
    base: *mut libc::c_void,
}

thread_local! {
    /// The stack this thread's last child used, kept for the next: mapping
    /// one per launch cost an `mmap`, an `mprotect`, an `munmap` (which
    /// interrupts every CPU running another of our threads to flush its
    /// TLB) and page faults on the fresh pages. Reuse is sound: with
    /// `CLONE_VFORK` the child has left the stack (exec'd or exited) before
    /// `clone` returns, and only this thread clones on it.
    static SPARE_STACK: std::cell::Cell<Option<ChildStack>> = const { std::cell::Cell::new(None) };
}

impl ChildStack {
    /// This thread's spare stack, or a new one.
    fn take() -> io::Result<Self> {
        match SPARE_STACK.with(std::cell::Cell::take) {
            Some(stack) => Ok(stack),
            None => Self::map(),
        }
    }

    /// Keeps the stack for this thread's next child (the child has left it).
    fn keep(self) {
        SPARE_STACK.with(|spare| spare.set(Some(self)));
    }
}

impl ChildStack {
    fn map() -> io::Result<Self> {
        // SAFETY: a fresh private anonymous mapping, owned by the result.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                CHILD_STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Self { base };
        // The stack grows down: its lowest page stops an overflow.
        // SAFETY: the first page of our own mapping.
        let guarded = unsafe { libc::mprotect(base, page_size(), libc::PROT_NONE) };
        if guarded != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    fn top(&self) -> *mut libc::c_void {
        self.base.cast::<u8>().wrapping_add(CHILD_STACK).cast()
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: our mapping; the child left it (it exec'd or exited
        // before `clone` returned: CLONE_VFORK).
        unsafe {
            libc::munmap(self.base, CHILD_STACK);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// Starts the child on its own stack, sharing our memory until it execs;
/// returns when it has exec'd or exited. Every signal is blocked meanwhile
/// in this thread, so the child starts with all blocked and no handler of
/// ours can run in it before it reset them (or the kernel did).
fn clone_child(arguments: &mut ChildArguments<'_>) -> io::Result<libc::pid_t> {
    let stack = ChildStack::take()?;
    let entry: extern "C" fn(*mut libc::c_void) -> libc::c_int =
        if arguments.steps_done_by.is_none() && need_pre_fork(arguments.wrappers) {
            first_child_entry
        } else {
            child_entry
        };
    // SAFETY: sigset operations on locals; pthread_sigmask on this thread;
    // clone runs `child_entry` on the mapped stack with a pointer to
    // `arguments`, which outlives the child's use of it (CLONE_VFORK: this
    // thread waits until the child execs or exits).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut previous);
        let pid = libc::clone(
            entry,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_mut(arguments).cast(),
        );
        let error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const previous, std::ptr::null_mut());
        stack.keep();
        if pid < 0 {
            return Err(error);
        }
        Ok(pid)
    }
}

/// The child's entry point on its own stack.
extern "C" fn child_entry(arguments: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `clone_child` passes a pointer to a live `ChildArguments`;
    // `child` never returns and keeps to async-signal-safe calls.
    unsafe {
        let arguments = &*arguments.cast::<ChildArguments<'_>>();
        child(arguments)
    }
}

/// The first child's entry point, for a launch with a step before the
/// fork: it takes the wrappers' [`Wrapper::pre_fork`] steps, makes
/// the command's process (our child, on the lower half of its stack,
/// through `CLONE_PARENT`), stores its pid and exits.
extern "C" fn first_child_entry(arguments: *mut libc::c_void) -> libc::c_int {
    // SAFETY: as `child_entry`; `first_child` never returns.
    unsafe {
        let arguments = &*arguments.cast::<ChildArguments<'_>>();
        first_child(arguments, arguments_pointer(arguments))
    }
}

fn arguments_pointer(arguments: &ChildArguments<'_>) -> *mut libc::c_void {
    std::ptr::from_ref(arguments).cast_mut().cast()
}

/// The first child's side: never returns. Signals are blocked (as in the
/// command's child, which inherits the mask), and it shares our memory:
/// only system calls, and one atomic store into the arguments.
unsafe fn first_child(arguments: &ChildArguments<'_>, shared: *mut libc::c_void) -> ! {
    let fail = |errno: libc::c_int| -> ! {
        let bytes = errno.to_ne_bytes();
        // SAFETY: write and _exit are async-signal-safe.
        unsafe {
            libc::write(arguments.report, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127)
        }
    };
    for wrapper in arguments.wrappers {
        if wrapper.needs_pre_fork()
            && let Err(error) = wrapper.pre_fork()
        {
            fail(error.raw_os_error().unwrap_or(libc::EPERM));
        }
    }
    // The command's stack: the lower half of ours (this child needs only
    // a few frames at the top; the guard page stays at the bottom).
    let mut marker = 0u8;
    let here = (&raw mut marker) as usize;
    let lower_top = (here - CHILD_STACK / 2) & !15;
    // SAFETY: `child_entry` runs on the lower half of this child's stack,
    // which this child does not use; CLONE_VFORK suspends this child until
    // the command's process execs or exits; CLONE_PARENT makes it our
    // parent's child, so the caller waits for it and gets its status.
    let pid = unsafe {
        libc::clone(
            child_entry,
            lower_top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT,
            shared,
        )
    };
    if pid < 0 {
        fail(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EAGAIN),
        );
    }
    arguments.command_pid.store(pid, Ordering::Release);
    // SAFETY: ends this child; the command's process is on its own.
    unsafe { libc::_exit(0) }
}

/// Sets every signal that has a handler of ours back to its default: the
/// handlers are our code, in the memory the child still shares with us.
/// (Ignored signals stay ignored, as across `fork` and exec.)
unsafe fn reset_handlers() {
    // SAFETY: sigaction on a local struct, for each signal number.
    unsafe {
        for signal in 1..=libc::SIGRTMAX() {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &raw mut current) != 0 {
                continue;
            }
            if current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &raw const default, std::ptr::null_mut());
            }
        }
    }
}

/// The child's side: never returns.
unsafe fn child(arguments: &ChildArguments<'_>) -> ! {
    let ChildArguments {
        launch,
        fds,
        wrappers,
        argv,
        envp,
        report,
        steps_done_by,
        ..
    } = arguments;
    let (report, steps_done_by) = (*report, *steps_done_by);
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
    // SAFETY: a plain system call.
    if unsafe { libc::setsid() } < 0 {
        fail(last_errno());
    }
    // The wrappers' steps come before the descriptors are put in place: a
    // step uses descriptors prepared in the parent (a sandbox's namespaces
    // and ruleset), at numbers the dup2s below may take (fd 3 of a warm
    // shell). Signals are still all blocked.
    for (index, wrapper) in wrappers.iter().enumerate() {
        let step = if steps_done_by == Some(index) {
            wrapper.pre_exec_on_spawner()
        } else {
            wrapper.pre_exec()
        };
        if let Err(error) = step {
            fail(error.raw_os_error().unwrap_or(libc::EPERM));
        }
    }
    // SAFETY: plain system calls on descriptors and memory we own.
    unsafe {
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
        // The terminal on 0 becomes the controlling terminal of the new
        // session: Ctrl-C, job control and `/dev/tty` (sudo and ssh prompt
        // there) work.
        if fds.controlling_terminal && libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
            fail(last_errno());
        }
        // After the steps: in a sandbox's mount namespace, the directory
        // is the one seen there.
        if libc::chdir(launch.cwd.as_ptr()) < 0 {
            fail(last_errno());
        }
        reset_handlers();
        for signal in DEFAULT_SIGNALS {
            libc::signal(signal, libc::SIG_DFL);
        }
        // Every signal was blocked since `clone_child`; now that no handler
        // of ours is left, the command gets an empty mask.
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const empty, std::ptr::null_mut());
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

#[cfg(test)]
mod tests {
    use super::ChildStack;

    /// A thread's next child gets the stack its last one left; another
    /// thread maps its own.
    #[test]
    fn a_thread_reuses_its_childs_stack() {
        let first = ChildStack::take().expect("stack");
        let base = first.base as usize;
        first.keep();
        let again = ChildStack::take().expect("stack");
        assert_eq!(again.base as usize, base);
        // Taken, not kept: the next one is new while this one is in use.
        let other = ChildStack::take().expect("stack");
        assert_ne!(other.base as usize, base);
        again.keep();
        let elsewhere = std::thread::spawn(|| ChildStack::take().expect("stack").base as usize)
            .join()
            .expect("thread");
        assert_ne!(elsewhere, base);
    }
}
