//! The long-lived bash behind a session: how it is started, and the two
//! FIFOs it talks to Rust on.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;

use bashtool_core::ExecError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;

use bashtool_process::{ChildIo, RootProcess, Sink};
use bashtool_process::{Launch, Wrapper};

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
    /// Put the editors' stand-ins first in `PATH` (non-interactive; a
    /// restored snapshot brings its own `PATH`).
    pub editor_guards: bool,
    /// The `-c` script that brings the shell up (see
    /// `driver::startup_script`).
    pub startup: String,
    /// The session directory, where the driver FIFOs are made.
    pub dir: &'a Path,
    /// Inherited variables the shell must not see (the environment policy).
    pub remove: Vec<OsString>,
    /// The environment's spawn wrappers (a sandbox applies to the shell and
    /// so to every command it runs).
    pub wrappers: &'a [Arc<dyn Wrapper>],
}

/// A running shell. Dropping it kills its process group.
pub(crate) struct Shell {
    pub root: RootProcess,
    pub pid: u32,
    /// The driver FIFO, Rust's end: call requests go in here.
    driver: pipe::Sender,
    pub control: Control,
    /// The child was waited for: its pid (and group id) may be reused, so
    /// it must not be signalled any more.
    pub reaped: Option<ExitStatus>,
    /// `/proc/<pid>/task/<pid>/children`, opened once: read again at
    /// offset 0 after each call (one system call, not three).
    children: Option<std::fs::File>,
}

impl Shell {
    // Async although nothing here awaits any more (the driver now comes
    // with `-c`, not on stdin): the spawn path that replaces this one is.
    #[allow(clippy::unused_async)]
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
        let channels = Channels::create(spec.dir).map_err(|source| ExecError::Other {
            message: format!("could not create the session's driver FIFOs: {source}"),
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
        if spec.editor_guards && !spec.clear_env {
            crate::editor_guards::guard(&mut env);
        }
        let mut argv = vec![spec.program.as_os_str().to_owned()];
        argv.extend(
            shell_arguments(&spec.startup)
                .iter()
                .map(|arg| arg.to_os_string()),
        );
        // The one spawn path: its own session, stdio /dev/null, no other
        // descriptor, the wrappers (a sandbox) applied.
        let spawned = crate::spawn::launch(
            Launch {
                argv,
                env: env.into_iter().collect(),
                cwd: spec.cwd.to_path_buf(),
            },
            spec.wrappers,
            ChildIo {
                stdin_pipe: false,
                stdout: Sink::Null,
                stderr: Sink::Null,
                extra: Vec::new(),
                terminal: None,
            },
            None,
        )
        .map_err(|error| match error {
            ExecError::Spawn { source, .. } => spawn_error(source),
            other => other,
        })?;
        let pid = spawned.root.pid();
        Ok(Self {
            root: spawned.root,
            pid,
            driver: channels.driver,
            control: Control {
                receiver: channels.control,
                pending: Vec::new(),
            },
            reaped: None,
            children: std::fs::File::open(format!("/proc/{pid}/task/{pid}/children")).ok(),
        })
    }

    /// True when the shell has a child of its own: a command's leftover (a
    /// job, or, in a sandbox where the shell adopts the orphans of its
    /// commands, a `setsid` double fork). Unknown counts as yes.
    pub(crate) fn has_children(&self) -> bool {
        use std::os::unix::fs::FileExt as _;
        let Some(file) = &self.children else {
            return true;
        };
        // A pid and a space are enough to tell "none" from "some".
        let mut start = [0_u8; 16];
        file.read_at(&mut start, 0).map_or(true, |read| {
            start[..read].iter().any(|byte| !byte.is_ascii_whitespace())
        })
    }

    /// Writes driver lines. They wait in the FIFO until the shell reads
    /// them; writing never fails because the shell is gone (see
    /// [`Shell::unread_driver_bytes`]).
    pub(crate) async fn send(&mut self, lines: &str) -> std::io::Result<()> {
        self.driver.write_all(lines.as_bytes()).await
    }

    /// How many bytes written with [`Shell::send`] the shell has not read
    /// yet: after the shell died, this tells whether it took the call at
    /// all (the kernel's count, not the shell's word).
    pub(crate) fn unread_driver_bytes(&self) -> usize {
        let Ok(count) = rustix::io::ioctl_fionread(&self.driver) else {
            return 0;
        };
        usize::try_from(count).unwrap_or_default()
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

    /// Waits for the shell to exit and reaps it. Cancel-safe.
    pub(crate) async fn wait(&mut self) -> Option<ExitStatus> {
        if self.reaped.is_none() {
            self.root.exited().await;
            self.has_exited();
        }
        self.reaped
    }
}

/// Our exit status as the standard library's (`code()`, `signal()`).
fn std_status(status: bashtool_process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt as _;
    match status {
        bashtool_process::ExitStatus::Code(code) => ExitStatus::from_raw((code & 0xff) << 8),
        bashtool_process::ExitStatus::Signal(signal) => ExitStatus::from_raw(signal as i32),
        bashtool_process::ExitStatus::Running => ExitStatus::from_raw(0xff << 8),
    }
}

/// The arguments of the shell: the driver comes with `-c`, so that bash
/// never reads commands from its stdin (bash 5.2 crashes on `exec 3<&0`
/// in a sourced file while it does).
///
/// What the spawn needs, for whoever changes it: these arguments after the
/// program, stdin/stdout/stderr `/dev/null`, no other descriptor (the
/// FIFOs are opened by path), its own session (`setsid`).
fn shell_arguments(startup: &str) -> [&OsStr; 4] {
    [
        OsStr::new("--noprofile"),
        OsStr::new("--norc"),
        OsStr::new("-c"),
        OsStr::new(startup),
    ]
}

/// Names of the two FIFOs in the session directory.
pub(crate) const DRIVER_FIFO: &str = "driver";
pub(crate) const CONTROL_FIFO: &str = "control";

/// Rust's ends of a new shell's two FIFOs: `driver` (requests to the
/// shell) and `control` (records from it). The shell opens them by path
/// for each line, so it holds neither while a command runs.
///
/// Both are opened read-write: a FIFO with a reader and a writer on our
/// side never reports EOF or EPIPE, whether or not the shell has it open
/// right now (the shell's death is seen by waiting for it). They are made
/// anew for each shell, so that nothing a dead shell left unread, and no
/// leftover process still holding an old one, reaches the new shell.
struct Channels {
    driver: pipe::Sender,
    control: pipe::Receiver,
}

impl Channels {
    fn create(dir: &Path) -> std::io::Result<Self> {
        let make = |name: &str| -> std::io::Result<PathBuf> {
            let path = dir.join(name);
            let _ = std::fs::remove_file(&path);
            nix::unistd::mkfifo(
                &path,
                nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
            )?;
            Ok(path)
        };
        let driver = pipe::OpenOptions::new()
            .read_write(true)
            .open_sender(make(DRIVER_FIFO)?)?;
        let control = pipe::OpenOptions::new()
            .read_write(true)
            .open_receiver(make(CONTROL_FIFO)?)?;
        Ok(Self { driver, control })
    }
}

/// The read end of the control FIFO and a record cut by the last read.
pub(crate) struct Control {
    receiver: pipe::Receiver,
    pending: Vec<u8>,
}

/// Room for one read of the control pipe.
const CONTROL_READ: usize = 4096;

impl Control {
    /// Reads from the control pipe once; returns the complete records.
    /// Cancel-safe: a read that did not complete consumed nothing.
    pub(crate) async fn read_records(&mut self) -> Vec<Record> {
        // Straight into the spare room of `pending`: a buffer of its own
        // would be zeroed on every wait (4 KiB, a tenth of a call's
        // instructions) and make the future that large to move.
        self.pending.reserve(CONTROL_READ);
        match self.receiver.read_buf(&mut self.pending).await {
            // Never EOF (we hold a write end too); an error would repeat.
            Ok(0) | Err(_) => std::future::pending().await,
            Ok(_) => take_records(&mut self.pending),
        }
    }

    /// Waits for a record matching `wanted` (callers bound the wait: the
    /// shell may be gone).
    pub(crate) async fn wait_for(&mut self, wanted: impl Fn(&Record) -> bool) -> Record {
        loop {
            if let Some(record) = self.read_records().await.into_iter().find(&wanted) {
                return record;
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
