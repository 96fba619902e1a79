//! Background jobs of a [`LocalExec`]: detached under their supervisor.

use std::time::{Duration, Instant};

use std::os::fd::OwnedFd;

use bashtool_core::{BackgroundJob, CommandResult, ExecError, SpawnOptions};

use super::LocalExec;
use crate::jobs::{StartedJob, copier, supervised_argv};
use crate::spawn;
use bashtool_process::Launch;
use bashtool_process::RunMarker;
use bashtool_process::{ChildIo, RootProcess, Sink};

/// The size asked for the pipe between a job and its copier.
const PIPE_SIZE: i32 = 1024 * 1024;
/// How long a copier whose job could not start gets to end.
const COPIER_END: Duration = Duration::from_secs(1);

impl LocalExec {
    /// Where the copier reads the job's output from: the job's pipe, or,
    /// when `options` mask secrets and a filter program is configured, the
    /// output of a masking filter started on that pipe, to which the
    /// secrets line is written now, before anything of the job.
    fn start_filter(
        &self,
        options: &SpawnOptions,
        job_output: OwnedFd,
        job_input: &OwnedFd,
    ) -> Result<(OwnedFd, Option<RootProcess>), ExecError> {
        let (Some(redactor), Some(program)) =
            (options.output.redactor(), &self.inner.config.redact_filter)
        else {
            return Ok((job_output, None));
        };
        let program_name = program
            .first()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let spawn_error = |source: std::io::Error| ExecError::Spawn {
            program: program_name.clone(),
            source,
        };
        let wire = redactor.to_wire();
        if wire.len() as u64 >= crate::redact_filter::MAX_WIRE {
            return Err(ExecError::Other {
                message: "the secrets to mask are too large to hand to the background job's output filter; mask fewer variables (--redact-env, --drop-env)".to_owned(),
            });
        }
        let (filtered_read, filtered_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|errno| spawn_error(errno.into()))?;
        let spawned = spawn::launch(
            Launch {
                argv: program.clone(),
                env: Vec::new(),
                cwd: std::path::PathBuf::from("/"),
            },
            &[],
            ChildIo {
                stdin_pipe: false,
                stdout: Sink::Fd(filtered_write),
                stderr: Sink::Null,
                extra: vec![(job_output, 0)],
                terminal: None,
            },
            None,
        )?;
        // The pipe holds at least 64 KiB, and the filter reads this first:
        // a write that does not fit waits for it, never for the job.
        let mut input = std::fs::File::from(job_input.try_clone().map_err(&spawn_error)?);
        std::io::Write::write_all(&mut input, wire.as_bytes()).map_err(&spawn_error)?;
        Ok((filtered_read, Some(spawned.root)))
    }

    /// Starts a detached job under its supervisor (see
    /// [`crate::supervised_argv`]), its output through a pipe to its copier
    /// (see `jobs::copier`), which writes a new file in the log directory
    /// within the file cap. The job outlives the call, and with
    /// `keep_jobs_on_drop` this process too.
    pub(super) async fn run_background(
        &self,
        command: &str,
        options: &SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let started = Instant::now();
        let config = &self.inner.config;
        let cwd = spawn::resolve_cwd(&config.working_directory, options.cwd.as_deref())?;
        // What is written down of the command (the file's name, the job's
        // record) is masked too.
        let recorded = options.output.redactor().map_or_else(
            || command.to_owned(),
            |redactor| redactor.redact(command).into_owned(),
        );
        let output = self
            .inner
            .logs
            .create_background_output(&recorded)
            .map_err(|error| ExecError::Other {
                message: format!(
                    "could not create an output file for the background job in {}: {error}",
                    self.inner.logs.path().display()
                ),
            })?;
        let output_file = output.path.clone();
        let marker = RunMarker::new();
        let spawn_error = |source: std::io::Error| ExecError::Spawn {
            program: config.shell.display().to_string(),
            source,
        };
        // Its own cgroup (not one kept for calls: the job may outlive this
        // process), made before the copier, which removes it at the end.
        let cgroup = self.inner.limits.for_job()?;
        let cgroup_dirs = cgroup
            .as_ref()
            .map_or_else(Vec::new, |cgroup| cgroup.cgroup().dirs());
        let (pipe_read, pipe_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|errno| spawn_error(errno.into()))?;
        // A bigger pipe: a burst of output waits less on the copier. Best
        // effort (the system caps what an unprivileged process may ask).
        let _ = nix::fcntl::fcntl(&pipe_write, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
        // With secrets masked, a filter sits between the job and its copier
        // (see `redact_filter`): the file never holds a secret.
        let (copier_input, filter) = match self.start_filter(options, pipe_read, &pipe_write) {
            Ok(started) => started,
            Err(error) => {
                self.inner.logs.discard(&output_file);
                return Err(error);
            }
        };
        let copier = match copier::start(&output, copier_input, &cgroup_dirs) {
            Ok(copier) => copier,
            Err(error) => {
                self.inner.logs.discard(&output_file);
                return Err(error);
            }
        };
        // Ours goes: the copier holds the lock until the output ends.
        drop(output);
        // The supervisor removes a long command's script file when done:
        // this process may be gone by then.
        let script = if command.len() > spawn::MAX_INLINE_SCRIPT {
            Some(
                spawn::script_file(command)
                    .and_then(|path| path.keep().map_err(|error| error.error))
                    .map_err(&spawn_error)?,
            )
        } else {
            None
        };
        let env = spawn::child_environment(
            &[&config.env_policy.set, &config.env, &options.env],
            &config.env_policy,
            config.non_interactive,
            &marker,
        );
        let second = pipe_write.try_clone().map_err(&spawn_error)?;
        let mut wrappers: Vec<_> = config
            .wrappers
            .iter()
            .filter(|wrapper| !config.keep_jobs_on_drop || wrapper.applies_to_detached_jobs())
            .cloned()
            .collect();
        let limit_checks = cgroup.as_ref().map_or_else(Vec::new, |cgroup| {
            wrappers = cgroup.wrappers(&wrappers);
            cgroup.job_checks()
        });
        let spawned = spawn::launch(
            Launch {
                argv: supervised_argv(&config.shell, command, script.as_deref(), &limit_checks),
                env,
                cwd: cwd.clone(),
            },
            &wrappers,
            ChildIo {
                stdin_pipe: false,
                stdout: Sink::Fd(pipe_write),
                stderr: Sink::Fd(second),
                extra: Vec::new(),
                terminal: None,
            },
            Some(&marker),
        );
        let spawned = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                // The pipe's last writer is gone: the filter and the copier
                // end at once.
                if let Some(filter) = &filter {
                    let _ = tokio::time::timeout(COPIER_END, filter.exited()).await;
                }
                let _ = tokio::time::timeout(COPIER_END, copier.exited()).await;
                drop(copier);
                self.inner.logs.discard(&output_file);
                if let Some(script) = &script {
                    let _ = std::fs::remove_file(script);
                }
                return Err(error);
            }
        };
        let pid = spawned.root.pid();
        let mut tree =
            config
                .containment
                .contain(pid, &marker, crate::realm::adopter(&config.wrappers));
        if let Some(cgroup) = &cgroup {
            tree = cgroup.contain(tree, pid);
        }
        let (id, note) = self
            .inner
            .jobs
            .add(StartedJob {
                root: spawned.root,
                tree,
                command: recorded,
                output_file: output_file.clone(),
                working_directory: Some(cwd.display().to_string()),
                copier: Some(copier),
                filter,
                output_head: Some(self.inner.logs.layout().head),
                cgroup,
            })
            .await;
        Ok(CommandResult {
            exit_code: None,
            signal: None,
            duration: started.elapsed(),
            timed_out: false,
            cancelled: false,
            output: options.output.finish(),
            log_file: None,
            notes: note.into_iter().collect(),
            background: Some(BackgroundJob {
                id,
                pid: Some(pid),
                // A sandbox's pid namespace has its own numbers: the model
                // stops the job from inside.
                pid_in_sandbox: crate::realm::inner_pid(&config.wrappers, pid),
                output_file: Some(output_file),
            }),
            interactive: None,
            shell: None,
            working_directory: Some(cwd),
        })
    }
}
