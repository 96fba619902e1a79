//! Shells started before the call that will use them
//! ([`crate::LocalConfig::warm_shells`]).
//!
//! Starting `bash` is most of a stateless call: about 1 ms of exec, dynamic
//! linking and start-up, against ~0.2 ms of our own work. A warm shell is a
//! fresh `bash -c`, started like any command (same environment, directory,
//! wrappers, sandbox, run marker), that first reads its command from a
//! pipe at fd 3 and then `eval`s it. Each shell runs one command and exits;
//! the next call takes the next one, and a new one is started behind it.
//!
//! What a command can tell (checked against `bash -c` by a test):
//! - a syntax error is reported as `bash: eval: line N:` where `bash -c`
//!   says `bash: -c: line N:` (same line, same status 2);
//! - `/proc/$$/cmdline` shows the reading script, not the command (so
//!   `pkill -f <pattern>` no longer matches the shell running it);
//! - a command that is one simple command runs as a child of the shell
//!   (`bash -c` execs it in the shell's place): one process more;
//! - `PIPESTATUS` is set before the command's first pipeline (`bash -c`
//!   sets it after);
//! - the shell started before the call: a variable of our own environment
//!   set in between is not seen, `$SECONDS` counts from the start.
//!
//! Everything else is `bash -c`'s: `$0`, `$#`, `$-`, `$_`, `$LINENO`,
//! `$BASH_EXECUTION_STRING`, `return` and `exit`, traps, no extra variable
//! or descriptor.
//!
//! A shell is started ahead only while at most one call runs (see
//! `LocalExec::fill_warm_shells`): with several in flight the CPU is what
//! limits them, and a warm shell adds its reading script's work to the same
//! start-up (measured: 8 in flight, 4.7–6.7% more calls/s without it).
//!
//! Only calls that match what the shell was started with take one: the
//! default working directory (the same directory, not only the same path),
//! no variables of their own, bash as the shell with `-c`. The others start
//! their shell as before.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::AsyncWriteExt as _;

use crate::config::LocalConfig;
use crate::spawn::{self, Spawned};
use bashtool_process::Launch;
use bashtool_process::RunMarker;
use bashtool_process::{ChildIo, Sink};

/// The script a warm shell runs: read the command's length (ten digits)
/// and then the command from fd 3, close fd 3, put `$_` back to what bash
/// started with, and run the command. The command is kept in
/// `BASH_EXECUTION_STRING`, where `bash -c` has it, so no variable of ours
/// is left. `read -N` takes bytes in one read(2) each (a line would take
/// one per byte), counted as bytes under `LC_ALL=C` whatever the locale;
/// `TMOUT=`: an inherited `TMOUT` must not time the wait out. A shell whose
/// pipe closes before a whole command arrived exits without running
/// anything. `exec`, not `builtin exec`: the close must outlast the line.
const BOOTSTRAP: &str = "TMOUT= LC_ALL=C IFS= builtin read -r -N 10 -u 3 BASH_EXECUTION_STRING && \
     TMOUT= LC_ALL=C IFS= builtin read -r -N \"$((10#$BASH_EXECUTION_STRING))\" -u 3 BASH_EXECUTION_STRING \
     || builtin exit 0; exec 3<&-; builtin : ";

/// The length header's width: `read -N 10`.
const LENGTH_DIGITS: usize = 10;

/// How long a call that finds no shell waiting waits for one a fill is
/// starting: a launch takes well under a millisecond; past this, something
/// holds it up and the call starts its own.
const FILL_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// The pool of warm shells of one environment.
#[derive(Debug)]
pub(crate) struct WarmShells {
    capacity: usize,
    spares: Mutex<Vec<Spare>>,
    /// A fill is due or under way (one at a time, so that the pool never
    /// overfills): a call that finds the pool empty waits for it.
    filling: AtomicBool,
    /// Told when a fill put a shell in the pool or ended.
    filled: tokio::sync::Notify,
    /// Set by [`WarmShells::clear`] (the environment shut down): no shell
    /// is started any more, not even by a call that ends afterwards.
    closed: AtomicBool,
}

/// A started shell waiting for its command.
#[derive(Debug)]
struct Spare {
    spawned: Option<Spawned>,
    /// Our end of the command pipe.
    command: Option<OwnedFd>,
    marker: RunMarker,
    /// The working directory it was started in: device and inode.
    directory: (u64, u64),
    /// Its cgroup (its limits), joined when it started.
    cgroup: Option<crate::limits::CallCgroup>,
}

impl Drop for Spare {
    /// An unused shell is killed (it is alone in its session, and unreaped,
    /// so its pid cannot have been reused).
    fn drop(&mut self) {
        if let Some(spawned) = self.spawned.take() {
            let pid = nix::unistd::Pid::from_raw(spawned.root.pid() as i32);
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
            drop(spawned);
        }
    }
}

/// A warm shell given its command: it now runs like a fresh one.
pub(crate) struct Started {
    pub spawned: Spawned,
    pub marker: RunMarker,
    pub cgroup: Option<crate::limits::CallCgroup>,
}

impl WarmShells {
    /// A pool for `config`, or `None` when it asks for none or its shell is
    /// not bash run with `-c`.
    pub(crate) fn for_config(config: &LocalConfig) -> Option<Arc<Self>> {
        let bash = config.shell.file_name().is_some_and(|name| name == "bash");
        let dash_c = matches!(
            config
                .shell_args
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()[..],
            ["-c"] | ["-c", "--"]
        );
        (config.warm_shells > 0 && bash && dash_c).then(|| {
            Arc::new(Self {
                capacity: config.warm_shells,
                spares: Mutex::new(Vec::new()),
                filling: AtomicBool::new(false),
                filled: tokio::sync::Notify::new(),
                closed: AtomicBool::new(false),
            })
        })
    }

    /// Whether a call with these settings may take a warm shell.
    pub(crate) fn fits(
        config: &LocalConfig,
        command: &str,
        cwd: &Path,
        call_env: &BTreeMap<String, String>,
    ) -> bool {
        call_env.is_empty() && cwd == config.working_directory && !command.contains('\0')
    }

    /// Gives `command` to a warm shell started in `cwd`, if one is still
    /// alive; `None`: start a fresh one.
    pub(crate) async fn start(&self, command: &str, cwd: &Path) -> Option<Started> {
        let directory = std::fs::metadata(cwd)
            .ok()
            .map(|metadata| (metadata.dev(), metadata.ino()))?;
        loop {
            let mut spare = self.next_spare().await?;
            // Started in a directory that has since been replaced, or gone:
            // dropping it kills it.
            let alive = spare.spawned.as_ref().is_some_and(|spawned| {
                spawned.root.status() == bashtool_process::ExitStatus::Running
            });
            if !alive || spare.directory != directory {
                continue;
            }
            let Some(command_pipe) = spare.command.take() else {
                continue;
            };
            let mut message = format!("{:0width$}", command.len(), width = LENGTH_DIGITS);
            message.push_str(command);
            let Ok(mut sender) = tokio::net::unix::pipe::Sender::from_owned_fd(command_pipe) else {
                continue;
            };
            // A shell that died meanwhile takes nothing: EPIPE, and the
            // call starts a fresh one. One that dies halfway through runs
            // nothing (its `read -N` comes up short).
            if sender.write_all(message.as_bytes()).await.is_err() {
                continue;
            }
            drop(sender);
            let spawned = spare.spawned.take()?;
            let marker = spare.marker.clone();
            let cgroup = spare.cgroup.take();
            return Some(Started {
                spawned,
                marker,
                cgroup,
            });
        }
    }

    /// A waiting shell; with none, the one a fill due or under way is
    /// starting (its launch is most of a fresh start already done), for
    /// at most [`FILL_WAIT`].
    async fn next_spare(&self) -> Option<Spare> {
        let deadline = tokio::time::Instant::now() + FILL_WAIT;
        loop {
            let filled = self.filled.notified();
            tokio::pin!(filled);
            // Registered before the checks: a fill that ends in between
            // still wakes this wait.
            filled.as_mut().enable();
            if let Some(spare) = self
                .spares
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop()
            {
                return Some(spare);
            }
            if !self.filling.load(Ordering::Acquire) || self.closed.load(Ordering::Acquire) {
                return None;
            }
            tokio::time::timeout_at(deadline, filled).await.ok()?;
        }
    }

    /// Whether the pool has room for another shell (never once closed).
    pub(crate) fn has_room(&self) -> bool {
        !self.closed.load(Ordering::Acquire)
            && self
                .spares
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len()
                < self.capacity
    }

    /// Takes the filler's role, `false` when a fill is already due or
    /// under way; whoever takes it must call [`WarmShells::fill`].
    pub(crate) fn claim_fill(&self) -> bool {
        !self.filling.swap(true, Ordering::AcqRel)
    }

    /// Starts shells until the pool is full, asking `may_start` before
    /// each (the calls running may have changed meanwhile), and gives up
    /// the filler's role claimed with [`WarmShells::claim_fill`]. Errors
    /// are left to the calls, which then start their own shell and report
    /// them.
    pub(crate) fn fill(
        &self,
        config: &LocalConfig,
        limits: &crate::limits::Limits,
        may_start: impl Fn() -> bool,
    ) {
        self.fill_alone(config, limits, may_start);
        self.filling.store(false, Ordering::Release);
        self.filled.notify_waiters();
    }

    fn fill_alone(
        &self,
        config: &LocalConfig,
        limits: &crate::limits::Limits,
        may_start: impl Fn() -> bool,
    ) {
        loop {
            if self.closed.load(Ordering::Acquire) || !may_start() {
                return;
            }
            let count = self
                .spares
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len();
            if count >= self.capacity {
                return;
            }
            let Ok(spare) = start_spare(config, limits) else {
                return;
            };
            {
                let mut spares = self.spares.lock().unwrap_or_else(PoisonError::into_inner);
                // Closed while it started: dropping it kills it.
                if self.closed.load(Ordering::Acquire) {
                    return;
                }
                spares.push(spare);
            }
            self.filled.notify_waiters();
        }
    }

    /// Kills the shells that wait and starts none any more.
    pub(crate) fn clear(&self) {
        self.closed.store(true, Ordering::Release);
        let spares =
            std::mem::take(&mut *self.spares.lock().unwrap_or_else(PoisonError::into_inner));
        drop(spares);
        self.filled.notify_waiters();
    }
}

/// `text` as one bash word in single quotes.
fn quote(text: &[u8]) -> Vec<u8> {
    let mut quoted = Vec::with_capacity(text.len() + 2);
    quoted.push(b'\'');
    for &byte in text {
        if byte == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(byte);
        }
    }
    quoted.push(b'\'');
    quoted
}

fn start_spare(
    config: &LocalConfig,
    limits: &crate::limits::Limits,
) -> Result<Spare, bashtool_core::ExecError> {
    use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
    let spawn_error = |source: std::io::Error| bashtool_core::ExecError::Spawn {
        program: config.shell.display().to_string(),
        source,
    };
    let cwd = config.working_directory.clone();
    let metadata = std::fs::metadata(&cwd).map_err(&spawn_error)?;
    let marker = RunMarker::new();
    let env = spawn::child_environment(
        &[&config.env_policy.set, &config.env],
        &config.env_policy,
        config.non_interactive,
        &marker,
    );
    // `$_` starts as bash would have it: the inherited `_`, else argv[0].
    let initial_underscore = env.iter().find(|(name, _)| name == "_").map_or_else(
        || config.shell.as_os_str().to_owned(),
        |(_, value)| value.clone(),
    );
    let mut script = BOOTSTRAP.as_bytes().to_vec();
    script.extend(quote(initial_underscore.as_bytes()));
    script.extend_from_slice(b"; builtin eval \"$BASH_EXECUTION_STRING\"");
    let mut argv: Vec<OsString> = vec![config.shell.as_os_str().to_owned()];
    argv.extend(config.shell_args.iter().map(OsString::from));
    argv.push(OsString::from_vec(script));
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|error| spawn_error(error.into()))?;
    // Its call's cgroup, joined now: the limits hold from the start.
    let cgroup = limits.for_call()?;
    let wrappers = cgroup.as_ref().map_or_else(
        || config.wrappers.clone(),
        |cgroup| cgroup.wrappers(&config.wrappers),
    );
    let spawned = spawn::launch(
        Launch { argv, env, cwd },
        &wrappers,
        ChildIo {
            stdin_pipe: false,
            stdout: Sink::Pipe,
            stderr: Sink::Pipe,
            extra: vec![(read_end, 3)],
            terminal: None,
        },
        Some(&marker),
    )?;
    Ok(Spare {
        spawned: Some(spawned),
        command: Some(write_end),
        marker,
        directory: (metadata.dev(), metadata.ino()),
        cgroup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bash_with_dash_c_gets_warm_shells() {
        let with = |shell: &str, args: &[&str], count: usize| LocalConfig {
            shell: shell.into(),
            shell_args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            warm_shells: count,
            ..LocalConfig::default()
        };
        assert!(WarmShells::for_config(&with("bash", &["-c", "--"], 1)).is_some());
        assert!(WarmShells::for_config(&with("/usr/bin/bash", &["-c"], 2)).is_some());
        assert!(WarmShells::for_config(&with("bash", &["-c", "--"], 0)).is_none());
        assert!(WarmShells::for_config(&with("sh", &["-c", "--"], 1)).is_none());
        assert!(WarmShells::for_config(&with("bash", &["-ec"], 1)).is_none());
    }
}
