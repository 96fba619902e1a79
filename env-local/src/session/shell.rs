//! The long-lived bash behind a session: how it is started, and the control
//! pipe on which it reports.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use bashtool_core::ExecError;
use nix::fcntl::OFlag;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin};

use super::procs;
use super::protocol::{Record, take_records};

/// How to start a shell.
pub(crate) struct ShellSpec<'a> {
    pub program: &'a Path,
    pub cwd: &'a Path,
    pub env: Vec<(String, String)>,
    /// Start from an empty environment (the snapshot being restored has
    /// every exported variable, and `unset` ones must stay unset).
    pub clear_env: bool,
    /// Inherited variables the shell must not see (the environment policy).
    pub remove: Vec<std::ffi::OsString>,
    /// Lines written to the shell's stdin before any call.
    pub startup: String,
}

/// A running shell. Dropping it kills its process group.
pub(crate) struct Shell {
    pub child: Child,
    pub pid: u32,
    stdin: ChildStdin,
    pub control: Control,
    /// The child was waited for: its pid (and group id) may be reused, so
    /// it must not be signalled any more.
    pub reaped: Option<ExitStatus>,
}

impl Shell {
    pub(crate) async fn start(spec: ShellSpec<'_>) -> Result<Self, ExecError> {
        let program = spec.program.display().to_string();
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
        // Close-on-exec, so that no other child spawned meanwhile (another
        // session, a LocalExec call) inherits the write end and keeps the
        // pipe from reporting EOF when this shell dies.
        let (control_read, control_write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|errno| spawn_error(errno.into()))?;
        let mut command = tokio::process::Command::new(spec.program);
        command
            .arg("--noprofile")
            .arg("--norc")
            .current_dir(spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if spec.clear_env {
            command.env_clear();
        }
        for name in &spec.remove {
            command.env_remove(name);
        }
        command.envs(spec.env);
        let control_fd = control_write.as_raw_fd();
        // SAFETY: between fork and exec we only call async-signal-safe
        // functions (setsid, dup2, fcntl) on fds we own.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                // Its own session and process group: a timeout can signal
                // the whole group, and nothing can open a terminal to prompt.
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if control_fd == 3 {
                    // dup2 onto itself would keep close-on-exec set.
                    if libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(control_fd, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(spawn_error)?;
        // Only the shell may hold the write end: EOF then means it is gone.
        drop(control_write);
        let pid = child.id().unwrap_or_default();
        let stdin = child.stdin.take().ok_or_else(|| ExecError::Other {
            message: "the session shell has no stdin".to_owned(),
        })?;
        let control = pipe::Receiver::from_owned_fd(control_read).map_err(spawn_error)?;
        let mut shell = Self {
            child,
            pid,
            stdin,
            control: Control {
                receiver: Some(control),
                pending: Vec::new(),
            },
            reaped: None,
        };
        shell.send(&spec.startup).await.map_err(spawn_error)?;
        Ok(shell)
    }

    /// Writes driver lines. Fails with `BrokenPipe` when the shell is gone.
    pub(crate) async fn send(&mut self, lines: &str) -> std::io::Result<()> {
        self.stdin.write_all(lines.as_bytes()).await?;
        self.stdin.flush().await
    }

    /// True if the shell has exited (it is reaped then).
    pub(crate) fn has_exited(&mut self) -> bool {
        if self.reaped.is_some() {
            return true;
        }
        match self.child.try_wait() {
            Ok(Some(status)) => {
                self.reaped = Some(status);
                true
            }
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// Waits for the shell to exit and reaps it.
    pub(crate) async fn wait(&mut self) -> Option<ExitStatus> {
        if self.reaped.is_none() {
            self.reaped = self.child.wait().await.ok();
        }
        self.reaped
    }
}

/// The read end of the control pipe and a record cut by the last read.
pub(crate) struct Control {
    /// `None` after EOF (the shell exited or `exec`ed another program).
    receiver: Option<pipe::Receiver>,
    pending: Vec<u8>,
}

impl Control {
    /// Reads from the control pipe once; returns the complete records.
    /// Cancel-safe: a read that did not complete consumed nothing.
    pub(crate) async fn read_records(&mut self) -> Vec<Record> {
        let Some(receiver) = &mut self.receiver else {
            return std::future::pending().await;
        };
        let mut buffer = [0_u8; 4096];
        match receiver.read(&mut buffer).await {
            Ok(0) | Err(_) => {
                self.receiver = None;
                Vec::new()
            }
            Ok(count) => {
                self.pending.extend_from_slice(&buffer[..count]);
                take_records(&mut self.pending)
            }
        }
    }

    /// Waits for a record matching `wanted`, or the shell's end.
    pub(crate) async fn wait_for(&mut self, wanted: impl Fn(&Record) -> bool) -> Option<Record> {
        loop {
            self.receiver.as_ref()?;
            if let Some(record) = self.read_records().await.into_iter().find(&wanted) {
                return Some(record);
            }
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            // Not yet reaped: the group and session ids are still ours.
            procs::kill_tree_now(self.pid);
        }
    }
}
