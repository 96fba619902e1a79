//! Starting a command: `bash -c <command>` as the leader of a new session,
//! stdin `/dev/null`, a non-interactive environment, and a handle that can
//! tell when it exited *without reaping it* (see [`crate::kill`] for why).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bashtool_core::ExecError;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

use crate::config::{LocalConfig, NON_INTERACTIVE_ENV};
use crate::kill::{MARKER_VARIABLE, RunMarker, open_pidfd};
use crate::posix_spawn;

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
        }
    }
}

/// A started command.
#[derive(Debug)]
pub struct Spawned {
    pub root: RootProcess,
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

/// Starts the command.
pub fn spawn(request: &SpawnRequest<'_>, output: Output) -> Result<Spawned, ExecError> {
    let program = request.shell.display().to_string();
    let spawn_error = |source: std::io::Error| ExecError::Spawn {
        program: program.clone(),
        source,
    };
    let mut argv: Vec<OsString> = vec![request.shell.as_os_str().to_owned()];
    argv.extend(request.shell_args.iter().map(OsString::from));
    let script_file = if request.command.len() > MAX_INLINE_SCRIPT {
        let mut file = tempfile::Builder::new()
            .prefix("bashtool-script-")
            .suffix(".sh")
            .tempfile()
            .map_err(&spawn_error)?;
        file.write_all(request.command.as_bytes())
            .and_then(|()| file.flush())
            .map_err(&spawn_error)?;
        let path = file.into_temp_path();
        // `.` runs the file in the same shell, like `-c` would; `$0` is the file.
        argv.push(OsString::from(". \"$0\""));
        argv.push(path.as_os_str().to_owned());
        Some(path)
    } else {
        argv.push(OsString::from(request.command));
        None
    };
    // Our environment, then the non-interactive defaults, the configured and
    // per-call variables, and the run marker: later ones win.
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os()
        .filter(|(name, _)| request.env_policy.inherits(&name.to_string_lossy()))
        .collect();
    if request.non_interactive {
        for (key, value) in NON_INTERACTIVE_ENV {
            env.insert(OsString::from(key), OsString::from(value));
        }
    }
    for variables in &request.env {
        for (key, value) in *variables {
            env.insert(OsString::from(key), OsString::from(value));
        }
    }
    env.insert(
        OsString::from(MARKER_VARIABLE),
        OsString::from(request.marker.value()),
    );
    let env: Vec<(OsString, OsString)> = env.into_iter().collect();
    let files;
    let target = match output {
        Output::Pipes => posix_spawn::Target::Pipes,
        Output::File(file) => {
            let second = file.try_clone().map_err(&spawn_error)?;
            files = (OwnedFd::from(file), OwnedFd::from(second));
            posix_spawn::Target::Files(&files.0, &files.1)
        }
    };
    let child = posix_spawn::spawn(&argv, &env, request.cwd, &target).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ExecError::ShellNotFound {
                program: program.clone(),
            }
        } else {
            spawn_error(source)
        }
    })?;
    let pid = child.pid;
    let root = RootProcess::new(pid);
    let stdout = child.stdout.map(receiver);
    let stderr = child.stderr.map(receiver);
    let (stdout, stderr) = match (stdout.transpose(), stderr.transpose()) {
        (Ok(stdout), Ok(stderr)) => (stdout, stderr),
        (Err(error), _) | (_, Err(error)) => {
            // Cannot happen with pipes in practice; don't leave a process.
            crate::kill::ProcessTree::new(pid, Some(request.marker.clone())).kill_now(true);
            drop(root);
            return Err(spawn_error(error));
        }
    };
    Ok(Spawned {
        root,
        stdout,
        stderr,
        script_file,
    })
}

fn receiver(fd: OwnedFd) -> std::io::Result<pipe::Receiver> {
    // A bigger pipe means fewer wakeups for chatty commands; failure is fine.
    // SAFETY: fcntl on an fd we own, with an integer argument.
    #[allow(unsafe_code)]
    unsafe {
        use std::os::fd::AsRawFd;
        libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE);
    }
    pipe::Receiver::from_owned_fd(fd)
}

/// Size asked for the output pipes.
const PIPE_SIZE: libc::c_int = 1024 * 1024;

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
    fn new(pid: u32) -> Self {
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
