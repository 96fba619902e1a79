//! The one function that starts a process ([`launch`]) of a
//! [`Launch`] with its [`ChildIo`]: the wrappers' rewrites, then the
//! program as the leader of a new session, through a `clone` child that
//! shares our memory until it execs (see `clone.rs`), or through
//! `posix_spawn` where no wrapper needs a step in the child and the kernel
//! cannot reset our signal handlers in such a child.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt as _;
use std::sync::Arc;

use tokio::net::unix::pipe;

use crate::command::{ChildIo, Launch, Sink};
use crate::error::Error;
use crate::posix_spawn::{self, CLaunch, ChildFds};
use crate::root::RootProcess;
use crate::tree::{ProcessTree, RunMarker};
use crate::wrapper::{Wrapper, apply_wrappers, need_pre_exec};

/// A launched process: its handle and our ends of its pipes.
#[derive(Debug)]
pub struct Launched {
    /// The process started (the leader of its session).
    pub root: RootProcess,
    /// Our end of its stdin, when asked for.
    pub stdin: Option<pipe::Sender>,
    /// Our end of its stdout, for [`crate::Sink::Pipe`].
    pub stdout: Option<pipe::Receiver>,
    /// Our end of its stderr, for [`crate::Sink::Pipe`].
    pub stderr: Option<pipe::Receiver>,
}

/// Starts `launch`: applies the wrappers' rewrites, then starts the
/// program as the leader of a new session with `io`, with each wrapper's
/// steps around the fork. `marker` (in the launch's environment) finds its
/// processes should the launch fail half-way.
pub fn launch(
    mut launch: Launch,
    wrappers: &[Arc<dyn Wrapper>],
    io: ChildIo,
    marker: Option<&RunMarker>,
) -> Result<Launched, Error> {
    crate::exit_statuses::keep_exit_statuses();
    apply_wrappers(wrappers, &mut launch)?;
    let program = launch
        .argv
        .first()
        .map(|program| program.to_string_lossy().into_owned())
        .unwrap_or_default();
    let spawn_error = |source: std::io::Error| Error::spawn(&program, source);
    let mut c_launch =
        CLaunch::new(&launch.argv, &launch.env, &launch.cwd).map_err(&spawn_error)?;
    c_launch.program = launch
        .argv
        .first()
        .and_then(|program| crate::program_path::resolve(program))
        .and_then(|path| CString::new(path.into_os_string().into_vec()).ok());
    // Pipes are close-on-exec: only the copies made in the child survive.
    let new_pipe =
        || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from);
    let controlling_terminal = io.terminal.is_some();
    let (stdin_read, stdin_write) = if let Some(terminal) = &io.terminal {
        (Some(terminal.try_clone().map_err(&spawn_error)?), None)
    } else if io.stdin_pipe {
        let (read, write) = new_pipe().map_err(&spawn_error)?;
        (Some(read), Some(write))
    } else {
        (None, None)
    };
    let (stdout_sink, stderr_sink) = match &io.terminal {
        Some(terminal) => (
            Sink::Fd(terminal.try_clone().map_err(&spawn_error)?),
            Sink::Fd(terminal.try_clone().map_err(&spawn_error)?),
        ),
        None => (io.stdout, io.stderr),
    };
    let null = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .map(OwnedFd::from)
    };
    let mut reads: [Option<OwnedFd>; 2] = [None, None];
    let mut writes: Vec<OwnedFd> = Vec::with_capacity(2);
    for (index, sink) in [stdout_sink, stderr_sink].into_iter().enumerate() {
        let fd = match sink {
            Sink::Pipe => {
                let (read, write) = new_pipe().map_err(&spawn_error)?;
                reads[index] = Some(read);
                write
            }
            Sink::Fd(fd) => fd,
            Sink::Null => null().map_err(&spawn_error)?,
        };
        writes.push(fd);
    }
    // A source that already sits at its target number would keep its
    // close-on-exec flag through a dup2 onto itself: move it away first.
    let extra: Vec<(OwnedFd, RawFd)> = io
        .extra
        .into_iter()
        .map(|(fd, target)| {
            if fd.as_raw_fd() == target {
                nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(64))
                    .map(|raw| {
                        // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor
                        // that nothing else owns.
                        unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) }
                    })
                    .map(|moved| (moved, target))
                    .map_err(std::io::Error::from)
            } else {
                Ok((fd, target))
            }
        })
        .collect::<std::io::Result<_>>()
        .map_err(&spawn_error)?;
    let fds = ChildFds {
        stdin: stdin_read.as_ref().map(AsRawFd::as_raw_fd),
        stdout: writes[0].as_raw_fd(),
        stderr: writes[1].as_raw_fd(),
        extra: extra
            .iter()
            .map(|(fd, target)| (fd.as_raw_fd(), *target))
            .collect(),
        controlling_terminal,
    };
    // glibc's `posix_spawn` unless a step in the child is needed (or the
    // C library's cannot close inherited descriptors).
    let start = |c_launch: &CLaunch| {
        if need_pre_exec(wrappers) || controlling_terminal || !posix_spawn::CLOSES_INHERITED_FDS {
            crate::clone::spawn(c_launch, &fds, wrappers)
        } else {
            posix_spawn::spawn(c_launch, &fds)
        }
    };
    let pid = match start(&c_launch) {
        // The program found earlier is gone: search `PATH` again.
        Err(error)
            if error.kind() == std::io::ErrorKind::NotFound && c_launch.program.is_some() =>
        {
            crate::program_path::forget();
            c_launch.program = None;
            start(&c_launch)
        }
        started => started,
    }
    .map_err(&spawn_error)?;
    // The child has its copies; ours must close, or EOF never comes.
    drop((stdin_read, writes, extra));
    let root = RootProcess::new(pid);
    let [stdout, stderr] = reads;
    let stdout = stdout.map(receiver).transpose();
    let stderr = stderr.map(receiver).transpose();
    let stdin = stdin_write.map(pipe::Sender::from_owned_fd).transpose();
    match (stdin, stdout, stderr) {
        (Ok(stdin), Ok(stdout), Ok(stderr)) => Ok(Launched {
            root,
            stdin,
            stdout,
            stderr,
        }),
        (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => {
            // Cannot happen with pipes in practice; don't leave a process.
            ProcessTree::new(pid, marker.cloned()).kill_now(true);
            drop(root);
            Err(spawn_error(error))
        }
    }
}

/// The read end of an output pipe, registered with the runtime. Its size
/// stays the default until the reader finds it full (see `reader`).
fn receiver(fd: OwnedFd) -> std::io::Result<pipe::Receiver> {
    pipe::Receiver::from_owned_fd(fd)
}
