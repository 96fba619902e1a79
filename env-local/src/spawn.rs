//! Starting a command: `bash -c <command>` as the leader of a new session,
//! stdin `/dev/null`, a non-interactive environment, and a handle that can
//! tell when it exited *without reaping it* (see [`crate::kill`] for why).

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bashtool_core::ExecError;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

use crate::clone_exec;
use crate::config::{LocalConfig, NON_INTERACTIVE_ENV};
use crate::kill::{MARKER_VARIABLE, RunMarker, open_pidfd};
use crate::posix_spawn::{self, CLaunch, ChildFds};
use crate::wrap::{Launch, SpawnWrapper, apply_wrappers, need_pre_exec};

/// Longest command passed as an argument. Linux refuses a single argument
/// over 128 KiB (`MAX_ARG_STRLEN`, E2BIG); longer scripts go through a file.
pub const MAX_INLINE_SCRIPT: usize = 100 * 1024;

/// How often exit is polled when pidfds are not available (old kernels).
const EXIT_POLL: Duration = Duration::from_millis(10);

/// Where the command's stdout and stderr go.
#[derive(Debug)]
pub enum Output {
    /// Two pipes read by the caller.
    Pipes,
    /// Both streams appended to one file (background jobs).
    File(std::fs::File),
}

/// Where one of the child's output streams goes.
#[derive(Debug)]
pub enum Sink {
    /// A new pipe; the read end is returned.
    Pipe,
    /// This file (or anything else with a descriptor).
    Fd(OwnedFd),
    /// `/dev/null`.
    Null,
}

/// The child's standard streams and extra descriptors.
#[derive(Debug)]
pub struct ChildIo {
    /// A pipe whose write end is returned (`true`), or `/dev/null`.
    pub stdin_pipe: bool,
    pub stdout: Sink,
    pub stderr: Sink,
    /// Descriptors the child gets at fixed numbers (a session's control
    /// pipe at 3): `(descriptor, number)`.
    pub extra: Vec<(OwnedFd, RawFd)>,
    /// A terminal (a pseudo-terminal's slave) that becomes the child's
    /// stdin, stdout, stderr and controlling terminal; `stdin_pipe`,
    /// `stdout` and `stderr` are then not used.
    pub terminal: Option<OwnedFd>,
}

impl ChildIo {
    fn from_output(output: Output) -> std::io::Result<Self> {
        Ok(match output {
            Output::Pipes => Self {
                stdin_pipe: false,
                stdout: Sink::Pipe,
                stderr: Sink::Pipe,
                extra: Vec::new(),
                terminal: None,
            },
            Output::File(file) => {
                let second = file.try_clone()?;
                Self {
                    stdin_pipe: false,
                    stdout: Sink::Fd(OwnedFd::from(file)),
                    stderr: Sink::Fd(OwnedFd::from(second)),
                    extra: Vec::new(),
                    terminal: None,
                }
            }
        })
    }
}

/// What to run. Built by the caller from its config and the call.
#[derive(Debug, Clone)]
pub struct SpawnRequest<'a> {
    pub shell: &'a Path,
    pub shell_args: &'a [String],
    pub command: &'a str,
    pub cwd: &'a Path,
    /// Variables in order of increasing precedence (later wins).
    pub env: Vec<&'a BTreeMap<String, String>>,
    pub non_interactive: bool,
    pub marker: &'a RunMarker,
    /// Applied to the launch, in order.
    pub wrappers: &'a [Arc<dyn SpawnWrapper>],
    /// Filters what is inherited from our own environment.
    pub env_policy: &'a bashtool_core::EnvPolicy,
}

impl<'a> SpawnRequest<'a> {
    pub fn from_config(
        config: &'a LocalConfig,
        command: &'a str,
        cwd: &'a Path,
        call_env: &'a BTreeMap<String, String>,
        marker: &'a RunMarker,
    ) -> Self {
        Self {
            shell: &config.shell,
            shell_args: &config.shell_args,
            command,
            cwd,
            env: vec![&config.env_policy.set, &config.env, call_env],
            env_policy: &config.env_policy,
            non_interactive: config.non_interactive,
            marker,
            wrappers: &config.wrappers,
        }
    }
}

/// A started command.
#[derive(Debug)]
pub struct Spawned {
    pub root: RootProcess,
    pub stdin: Option<pipe::Sender>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
    /// The script file of a long command; deleted when dropped, so keep it
    /// until the command has ended (bash may read it lazily).
    pub script_file: Option<tempfile::TempPath>,
}

/// Resolves and checks the working directory of a call.
pub fn resolve_cwd(base: &Path, cwd: Option<&Path>) -> Result<PathBuf, ExecError> {
    let path = match cwd {
        Some(cwd) if cwd.is_absolute() => cwd.to_path_buf(),
        Some(cwd) => base.join(cwd),
        None => base.to_path_buf(),
    };
    match std::fs::metadata(&path) {
        Ok(metadata) if metadata.is_dir() => Ok(path),
        Ok(_) => Err(ExecError::NotADirectory { path }),
        Err(_) => Err(ExecError::MissingDirectory { path }),
    }
}

/// The environment of a child: ours as the policy lets through (secrets
/// withheld), then the non-interactive defaults, the configured and
/// per-call variables, and the run marker (later wins); non-interactive,
/// `PATH` starts with the editors' stand-ins.
pub fn child_environment(
    layers: &[&BTreeMap<String, String>],
    policy: &bashtool_core::EnvPolicy,
    non_interactive: bool,
    marker: &RunMarker,
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = crate::inherited_env::inherited(policy)
        .into_iter()
        .collect();
    if non_interactive {
        for (key, value) in NON_INTERACTIVE_ENV {
            env.insert(OsString::from(key), OsString::from(value));
        }
    }
    for variables in layers {
        for (key, value) in *variables {
            env.insert(OsString::from(key), OsString::from(value));
        }
    }
    env.insert(
        OsString::from(MARKER_VARIABLE),
        OsString::from(marker.value()),
    );
    if non_interactive {
        crate::editor_guards::guard(&mut env);
    }
    env.into_iter().collect()
}

/// The script file of a command too long for one argument.
pub(crate) fn script_file(command: &str) -> std::io::Result<tempfile::TempPath> {
    let mut file = tempfile::Builder::new()
        .prefix("bashtool-script-")
        .suffix(".sh")
        .tempfile()?;
    file.write_all(command.as_bytes())?;
    file.flush()?;
    Ok(file.into_temp_path())
}

/// Starts the command: `shell shell_args command` (or, for a long command,
/// a `.` of its script file), through [`launch`].
pub fn spawn(request: &SpawnRequest<'_>, output: Output) -> Result<Spawned, ExecError> {
    let program = request.shell.display().to_string();
    let spawn_error = |source: std::io::Error| ExecError::Spawn {
        program: program.clone(),
        source,
    };
    let mut argv: Vec<OsString> = vec![request.shell.as_os_str().to_owned()];
    argv.extend(request.shell_args.iter().map(OsString::from));
    let script_file = if request.command.len() > MAX_INLINE_SCRIPT {
        let path = script_file(request.command).map_err(&spawn_error)?;
        // `.` runs the file in the same shell, like `-c` would; `$0` is the file.
        argv.push(OsString::from(". \"$0\""));
        argv.push(path.as_os_str().to_owned());
        Some(path)
    } else {
        argv.push(OsString::from(request.command));
        None
    };
    let env = child_environment(
        &request.env,
        request.env_policy,
        request.non_interactive,
        request.marker,
    );
    let io = ChildIo::from_output(output).map_err(&spawn_error)?;
    let mut spawned = launch(
        Launch {
            argv,
            env,
            cwd: request.cwd.to_path_buf(),
        },
        request.wrappers,
        io,
        Some(request.marker),
    )?;
    spawned.script_file = script_file;
    Ok(spawned)
}

/// The one way env-local starts a process (stateless calls, the session's
/// shell, background jobs): applies the wrappers' rewrites, then starts the
/// program as the leader of a new session with `io`, through a `clone`
/// child that shares our memory until it execs (see `clone_exec`), or
/// through `posix_spawn` where the kernel cannot reset our signal handlers
/// in such a child and no wrapper needs a step in it.
pub fn launch(
    mut launch: Launch,
    wrappers: &[Arc<dyn SpawnWrapper>],
    io: ChildIo,
    marker: Option<&RunMarker>,
) -> Result<Spawned, ExecError> {
    crate::exit_statuses::keep_exit_statuses();
    apply_wrappers(wrappers, &mut launch)?;
    let program = launch
        .argv
        .first()
        .map(|program| program.to_string_lossy().into_owned())
        .unwrap_or_default();
    let spawn_error = |source: std::io::Error| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ExecError::ShellNotFound {
                program: program.clone(),
            }
        } else {
            ExecError::Spawn {
                program: program.clone(),
                source,
            }
        }
    };
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
                    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor we own.
                    .map(|raw| {
                        #[allow(unsafe_code)]
                        unsafe {
                            <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw)
                        }
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
    // The clone child also when no step asks for it, where the kernel
    // resets our signal handlers for it: glibc's `posix_spawn` child asks
    // about every signal, ~125 system calls while this thread waits.
    let start = |c_launch: &CLaunch| {
        if need_pre_exec(wrappers) || controlling_terminal || clone_exec::may_clear_handlers() {
            clone_exec::spawn(c_launch, &fds, wrappers)
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
        (Ok(stdin), Ok(stdout), Ok(stderr)) => Ok(Spawned {
            root,
            stdin,
            stdout,
            stderr,
            script_file: None,
        }),
        (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => {
            // Cannot happen with pipes in practice; don't leave a process.
            crate::kill::ProcessTree::new(pid, marker.cloned()).kill_now(true);
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

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(nix::sys::signal::Signal),
    /// Still running (it could not be stopped, or was not waited for).
    Running,
}

impl ExitStatus {
    pub fn signal_name(self) -> Option<String> {
        match self {
            Self::Signal(signal) => Some(signal.as_str().to_owned()),
            _ => None,
        }
    }
}

/// Our child, the command's root process. We do not reap it until we are
/// done signalling its process group: a zombie keeps the pid, and so the
/// group id, from being reused.
#[derive(Debug)]
pub struct RootProcess {
    pid: u32,
    /// Readable once the process has exited (`None`: poll instead).
    pidfd: Option<AsyncFd<OwnedFd>>,
    reaped: std::sync::atomic::AtomicBool,
    /// The status read just before reaping (waitid cannot tell it after).
    final_status: std::sync::OnceLock<ExitStatus>,
}

impl RootProcess {
    pub(crate) fn new(pid: u32) -> Self {
        // Race-free: our unreaped child cannot be replaced by another process.
        let pidfd = open_pidfd(pid).ok().and_then(|fd| {
            // Outside a runtime, registering would panic: poll instead.
            tokio::runtime::Handle::try_current().ok()?;
            // SAFETY: the `OwnedFd` moves into the `AsyncFd`, which keeps it
            // open and unchanged until it is dropped.
            #[allow(unsafe_code)]
            let registered =
                unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) };
            registered.ok()
        });
        Self {
            pid,
            pidfd,
            reaped: std::sync::atomic::AtomicBool::new(false),
            final_status: std::sync::OnceLock::new(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Completes when the process has exited (it stays unreaped).
    pub async fn exited(&self) {
        if let Some(pidfd) = &self.pidfd {
            // Readiness stays set once the process is gone: no need to clear.
            if pidfd.readable().await.is_ok() {
                return;
            }
        }
        while self.status() == ExitStatus::Running {
            tokio::time::sleep(EXIT_POLL).await;
        }
    }

    /// The exit status if it has exited, without reaping.
    pub fn status(&self) -> ExitStatus {
        if let Some(status) = self.final_status.get() {
            return *status;
        }
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
        match waitid(Id::Pid(Pid::from_raw(self.pid as i32)), flags) {
            Ok(WaitStatus::Exited(_, code)) => ExitStatus::Code(code),
            Ok(WaitStatus::Signaled(_, signal, _)) => ExitStatus::Signal(signal),
            _ => ExitStatus::Running,
        }
    }

    /// Reaps the process if it has exited; returns whether it did. The
    /// status stays readable through [`RootProcess::status`].
    pub fn reap_now(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.reaped.load(Ordering::Acquire) {
            return true;
        }
        let status = self.status();
        if status == ExitStatus::Running {
            return false;
        }
        let _ = self.final_status.set(status);
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
        let _ = waitid(Id::Pid(Pid::from_raw(self.pid as i32)), flags);
        self.reaped.store(true, Ordering::Release);
        true
    }

    /// Gives the process up to another handle that reaps it: this one
    /// will neither reap nor wait for it.
    pub(crate) fn release(self) -> u32 {
        self.reaped
            .store(true, std::sync::atomic::Ordering::Release);
        self.pid
    }

    /// Reaps the process if it has exited; returns whether it did.
    pub fn try_reap(&mut self) -> bool {
        self.reap_now()
    }
}

impl Drop for RootProcess {
    /// Reaps the process once it exits, without blocking (after a SIGKILL on
    /// a dropped call, or for a job that outlives its table): an unreaped
    /// child would stay a zombie for as long as we live.
    fn drop(&mut self) {
        if self.try_reap() {
            return;
        }
        let pid = Pid::from_raw(self.pid as i32);
        let reap = move || {
            let _ = waitid(Id::Pid(pid), WaitPidFlag::WEXITED);
        };
        // A plain thread, not `spawn_blocking`: a runtime waits for its
        // blocking tasks when it shuts down, and this wait may be long.
        std::thread::spawn(reap);
    }
}
