//! The long-lived bash behind a session: how it is started, and the control
//! pipe on which it reports.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::Arc;

use bashtool_core::ExecError;
use nix::fcntl::OFlag;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;

use crate::spawn::{ChildIo, RootProcess, Sink};
use crate::wrap::{Launch, SpawnWrapper};

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
    /// The environment's spawn wrappers (a sandbox applies to the shell and
    /// so to every command it runs).
    pub wrappers: &'a [Arc<dyn SpawnWrapper>],
}

/// A running shell. Dropping it kills its process group.
pub(crate) struct Shell {
    pub root: RootProcess,
    pub pid: u32,
    stdin: pipe::Sender,
    pub control: Control,
    /// The shell was waited for: its pid (and group id) may be reused, so
    /// it must not be signalled any more.
    pub reaped: Option<ExitStatus>,
}

impl Shell {
    pub(crate) async fn start(spec: ShellSpec<'_>) -> Result<Self, ExecError> {
        let program = spec.program.display().to_string();
        // Close-on-exec, so that no other child spawned meanwhile (another
        // session, a LocalExec call) inherits the write end and keeps the
        // pipe from reporting EOF when this shell dies.
        let (control_read, control_write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|errno| ExecError::Spawn {
                program: program.clone(),
                source: errno.into(),
            })?;
        let mut env: BTreeMap<OsString, OsString> = if spec.clear_env {
            BTreeMap::new()
        } else {
            std::env::vars_os().collect()
        };
        for name in &spec.remove {
            env.remove(name);
        }
        env.extend(
            spec.env
                .into_iter()
                .map(|(key, value)| (OsString::from(key), OsString::from(value))),
        );
        // Its own session and process group (a timeout can signal the whole
        // group, and nothing can open a terminal to prompt); statuses on fd
        // 3; its own output to /dev/null (each call has its own FIFOs).
        let spawned = crate::spawn::launch(
            Launch {
                argv: vec![
                    spec.program.as_os_str().to_owned(),
                    OsString::from("--noprofile"),
                    OsString::from("--norc"),
                ],
                env: env.into_iter().collect(),
                cwd: spec.cwd.to_path_buf(),
            },
            spec.wrappers,
            ChildIo {
                stdin_pipe: true,
                stdout: Sink::Null,
                stderr: Sink::Null,
                extra: vec![(control_write, 3)],
            },
            None,
        )?;
        let spawn_error = |source: std::io::Error| ExecError::Spawn {
            program: program.clone(),
            source,
        };
        let pid = spawned.root.pid();
        let stdin = spawned.stdin.ok_or_else(|| ExecError::Other {
            message: "the session shell has no stdin".to_owned(),
        })?;
        let control = pipe::Receiver::from_owned_fd(control_read).map_err(spawn_error)?;
        let mut shell = Self {
            root: spawned.root,
            pid,
            stdin,
            control: Control {
                receiver: Some(control),
                pending: Vec::new(),
            },
            reaped: None,
        };
        shell
            .send(&spec.startup)
            .await
            .map_err(|source| ExecError::Spawn { program, source })?;
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
        if self.root.reap_now() {
            self.reaped = Some(std_status(self.root.status()));
            return true;
        }
        false
    }

    /// Completes when the shell has exited, and reaps it. Cancel-safe.
    pub(crate) async fn exited(&mut self) -> Option<ExitStatus> {
        if self.reaped.is_none() {
            self.root.exited().await;
            self.has_exited();
        }
        self.reaped
    }

    /// Waits for the shell to exit and reaps it.
    pub(crate) async fn wait(&mut self) -> Option<ExitStatus> {
        self.exited().await
    }
}

/// Our exit status as the standard library's (`code()`, `signal()`).
fn std_status(status: crate::spawn::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt as _;
    match status {
        crate::spawn::ExitStatus::Code(code) => ExitStatus::from_raw((code & 0xff) << 8),
        crate::spawn::ExitStatus::Signal(signal) => ExitStatus::from_raw(signal as i32),
        crate::spawn::ExitStatus::Running => ExitStatus::from_raw(0xff << 8),
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
