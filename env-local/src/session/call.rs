//! Running one foreground call in the session's shell: hand it over, read
//! its output until its status arrives (or the shell dies, the deadline
//! passes, the caller cancels), then account for what it left behind.

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bashtool_core::{CommandResult, ExecError, ShellState, SpawnOptions, Stream};

use super::protocol::Record;
use super::shell::Shell;
use super::{CallPipes, Session, State, driver, nonce, procs, state};
use bashtool_process::RunMarker;

/// How a call's wait ended.
enum Ending {
    Status {
        status: i32,
        jobs: Vec<u32>,
        cwd: PathBuf,
    },
    ShellExited(Option<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
    /// The command (or the shell) stopped itself: it can never go on.
    Stopped,
}

/// What the shell is asked to run, ready to send.
struct Prepared {
    request: String,
    nonce: String,
}

impl Session {
    pub(super) async fn run_foreground(
        &self,
        command: &str,
        options: &SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let start = Instant::now();
        let inner = &self.inner;
        let mut state = inner.state.lock().await;
        let call_cwd = match &options.cwd {
            Some(cwd) => {
                let cwd = state.cwd.join(cwd);
                check_directory(&cwd)?;
                Some(cwd)
            }
            None => None,
        };
        let mut restarted = self.ensure_shell(&mut state, options.timeout).await?;
        let id = state.next_call;
        state.next_call += 1;
        let io_error = |source: std::io::Error| ExecError::Other {
            message: format!("could not prepare the session call: {source}"),
        };
        let dir = &inner.dir;
        let mut pipes = match state.pipes.take() {
            Some(pipes) => pipes,
            None => CallPipes::new(&dir.join(driver::COMMAND_FILE)).map_err(io_error)?,
        };
        pipes.prepare(&dir.path, id).map_err(io_error)?;
        let marker = RunMarker::new();
        let prepared = self
            .prepare(
                &mut state,
                id,
                command,
                &pipes,
                call_cwd.as_deref(),
                options,
                &marker,
            )
            .map_err(io_error)?;
        let output = &options.output;
        let log = crate::call_log::CallLog::open(&inner.logs, output, command);

        // A repository made or a config replaced since the shell started
        // is protected before the command runs.
        crate::realm::before_call(&inner.config.local.wrappers)?;
        let mut shell = state.shell.take().ok_or_else(|| ExecError::Other {
            message: "the session shell is not running".to_owned(),
        })?;
        // A dropped call (its future cancelled) stops its whole tree,
        // setsid escapees included.
        let adopter = crate::realm::adopter(&inner.config.local.wrappers);
        let mut dropped = procs::KillCallOnDrop {
            shell_pid: shell.pid,
            marker: marker.clone(),
            adopter,
            armed: true,
            cgroup: inner.cgroup.as_ref(),
        };
        let mut ending = send_and_wait(&mut shell, id, &prepared, &mut pipes, options).await;
        if matches!(ending, Ending::ShellExited(_))
            && shell.unread_driver_bytes() > driver::STAMP_WIDTH
        {
            // The shell died (killed from outside) before it read all of
            // the request: the command never ran. (A shell killed while
            // blocked in the read of the kind still takes the kind; one
            // that read the rest too was alive after the request was
            // written, so the signal came with the call.) Start a new
            // shell and run it there.
            drop(shell);
            restarted |= self.ensure_shell(&mut state, options.timeout).await?;
            shell = state.shell.take().ok_or_else(|| ExecError::Other {
                message: "the session shell is not running".to_owned(),
            })?;
            dropped.shell_pid = shell.pid;
            ending = send_and_wait(&mut shell, id, &prepared, &mut pipes, options).await;
        }
        dropped.armed = false;

        let grace = inner.config.local.kill_grace;
        let mut notes = Vec::new();
        let mut exit_code = None;
        let mut signal = None;
        let (mut timed_out, mut cancelled) = (false, false);
        match ending {
            Ending::Status { status, jobs, cwd } => {
                exit_code = Some(status);
                state.cwd = cwd;
                let held = pipes.drain(output);
                if !jobs.is_empty() || held || shell.has_children() {
                    let leftovers = procs::leftovers(shell.pid, &marker, adopter);
                    let stopped = procs::stop(&leftovers, grace).await;
                    if stopped > 0 {
                        notes.push(leftover_note(stopped));
                    }
                    pipes.drain(output);
                }
                state.shell = Some(shell);
            }
            Ending::ShellExited(status) => {
                pipes.drain(output);
                if let Some(status) = status {
                    exit_code = status.code();
                    signal = status.signal().map(signal_name);
                }
                // What the command (or an `exec`ed program) left running.
                let stopped = procs::stop(&procs::marked(&marker, adopter), grace).await;
                if stopped > 0 {
                    notes.push(leftover_note(stopped));
                }
                notes.push(
                    "the command ended the session's shell (exit, exec or a signal); the next call starts a new shell with the state saved last"
                        .to_owned(),
                );
            }
            Ending::TimedOut | Ending::Cancelled | Ending::Stopped => {
                timed_out = matches!(ending, Ending::TimedOut);
                cancelled = matches!(ending, Ending::Cancelled);
                if matches!(ending, Ending::Stopped) {
                    signal = Some("SIGSTOP".to_owned());
                    notes.push(
                        "the command stopped itself (SIGSTOP or a terminal stop signal); a stopped command can never go on here, so its process tree was stopped"
                            .to_owned(),
                    );
                }
                // The command may be a loop inside the shell itself: the
                // only sure stop is the shell's whole tree. Its EXIT trap
                // (run on SIGTERM) saves the state it reached.
                procs::stop_shell_tree(shell.pid, &marker, adopter, grace).await;
                if let Some(cgroup) = &inner.cgroup {
                    cgroup.kill_rest();
                }
                shell.wait().await;
                pipes.drain(output);
                notes.push(
                    "the session's shell was stopped with the command; the next call starts a new shell with the state saved last"
                        .to_owned(),
                );
            }
        }
        pipes.finish(output);
        let output = output.finish();
        if let Some(cgroup) = &inner.cgroup {
            let killed = signal.as_deref() == Some("SIGKILL") || exit_code == Some(137);
            notes.extend(cgroup.notes(killed));
        }
        notes.extend(crate::realm::after_call(&inner.config.local.wrappers));
        notes.extend(log.truncation_note());
        state.pipes = Some(pipes);
        let state = &mut *state;
        let shell_state = inner.config.telemetry.then(|| ShellState {
            git_branch: state.head.git_branch(&state.cwd),
            cwd: state.cwd.clone(),
            restarted,
        });
        Ok(CommandResult {
            exit_code,
            signal,
            duration: start.elapsed(),
            timed_out,
            cancelled,
            output,
            log_file: log.path(),
            notes,
            background: None,
            interactive: None,
            shell: shell_state,
            working_directory: Some(call_cwd.unwrap_or_else(|| state.cwd.clone())),
        })
    }

    /// Writes the command file and the call script, and makes the request.
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        state: &mut State,
        id: u64,
        command: &str,
        pipes: &CallPipes,
        cwd: Option<&Path>,
        options: &SpawnOptions,
        marker: &RunMarker,
    ) -> std::io::Result<Prepared> {
        let dir = &self.inner.dir;
        let command_file = dir.join(driver::COMMAND_FILE);
        write_in_place(&command_file, command.as_bytes())?;
        // The driver's own call line runs the common call; one with a
        // working directory or variables of its own goes through a script.
        let through_script = cwd.is_some() || !options.env.is_empty();
        if through_script {
            let script = driver::call_script(&driver::CallLine {
                command_file: &command_file,
                stdout_fifo: pipes.path(Stream::Stdout),
                stderr_fifo: pipes.path(Stream::Stderr),
                cwd,
                env: &options.env,
                marker: marker.value(),
            });
            write_in_place(&dir.join(driver::CALL_SCRIPT), script.as_bytes())?;
        }
        let effect = state::state_effect(command);
        state.save_every_call |= effect == state::StateEffect::Names;
        let save = state.save_every_call || effect != state::StateEffect::None;
        let nonce = nonce::next()?;
        let request = driver::call_request(&driver::CallRequest {
            id,
            save,
            through_script,
            pipes: (pipes.number(Stream::Stdout), pipes.number(Stream::Stderr)),
            marker: marker.value(),
            nonce: &nonce,
            key: &dir.key,
        });
        Ok(Prepared { request, nonce })
    }
}

/// Writes `bytes` over the session file at `path` and cuts it to their
/// length.
/// Not truncated first: on tmpfs that frees the file's page and the write
/// allocates a new one (~2.5 µs a call, measured). Never through a symlink.
fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)
}

/// Sends the request and waits for the call's end.
async fn send_and_wait(
    shell: &mut Shell,
    id: u64,
    prepared: &Prepared,
    pipes: &mut CallPipes,
    options: &SpawnOptions,
) -> Ending {
    if shell.send(&prepared.request).await.is_err() {
        return Ending::ShellExited(shell.wait().await);
    }
    pipes.hold();
    wait_for_end(shell, id, &prepared.nonce, pipes, options).await
}

/// Reads the call's output until its status arrives, the shell exits, the
/// deadline passes or the caller cancels.
async fn wait_for_end(
    shell: &mut Shell,
    id: u64,
    nonce: &str,
    pipes: &mut CallPipes,
    options: &SpawnOptions,
) -> Ending {
    let output = &options.output;
    let deadline = options
        .timeout
        .map(|timeout| tokio::time::Instant::now() + timeout);
    loop {
        let sleep = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            records = shell.control.read_records() => {
                for record in records {
                    if let Record::Status { id: record_id, nonce: record_nonce, status, jobs, cwd } = record
                        && record_id == id
                        && record_nonce == nonce
                    {
                        return Ending::Status { status, jobs, cwd };
                    }
                }
            }
            () = pipes.read_some(output) => {}
            () = shell.root.exited(), if shell.reaped.is_none() => {
                return Ending::ShellExited(shell.wait().await);
            }
            () = sleep => return Ending::TimedOut,
            () = options.cancel.cancelled() => return Ending::Cancelled,
            () = crate::exec::stopped(shell.pid) => return Ending::Stopped,
        }
    }
}

pub(super) fn check_directory(path: &Path) -> Result<(), ExecError> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(ExecError::NotADirectory {
            path: path.to_path_buf(),
        }),
        Err(_) => Err(ExecError::MissingDirectory {
            path: path.to_path_buf(),
        }),
    }
}

fn leftover_note(count: usize) -> String {
    if count == 1 {
        "1 leftover process was stopped; servers belong in mode \"background\"".to_owned()
    } else {
        format!("{count} leftover processes were stopped; servers belong in mode \"background\"")
    }
}

fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal).map_or_else(
        |_| format!("signal {signal}"),
        |signal| signal.as_str().to_owned(),
    )
}
