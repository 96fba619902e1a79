//! Background jobs of a [`LocalExec`]: detached under their supervisor.

use std::time::Instant;

use bashtool_core::{BackgroundJob, CommandResult, ExecError, SpawnOptions};

use super::LocalExec;
use crate::jobs::{StartedJob, supervised_argv};
use crate::kill::RunMarker;
use crate::spawn::{self, ChildIo, Sink};
use crate::wrap::Launch;

impl LocalExec {
    /// Starts a detached job under its supervisor (see
    /// [`crate::supervised_argv`]), output to a new file in the log
    /// directory. The job outlives the call, and with
    /// `keep_jobs_on_drop` this process too.
    pub(super) fn run_background(
        &self,
        command: &str,
        options: &SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let started = Instant::now();
        let config = &self.inner.config;
        let cwd = spawn::resolve_cwd(&config.working_directory, options.cwd.as_deref())?;
        let (output_file, file) = self
            .inner
            .logs
            .create_job_output(command)
            .map_err(|error| ExecError::Other {
                message: format!(
                    "could not create an output file for the background job in {}: {error}",
                    self.inner.logs.path().display()
                ),
            })?;
        let marker = RunMarker::new();
        let spawn_error = |source: std::io::Error| ExecError::Spawn {
            program: config.shell.display().to_string(),
            source,
        };
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
        let second = file.try_clone().map_err(&spawn_error)?;
        let wrappers: Vec<_> = config
            .wrappers
            .iter()
            .filter(|wrapper| !config.keep_jobs_on_drop || wrapper.applies_to_kept_jobs())
            .cloned()
            .collect();
        let spawned = spawn::launch(
            Launch {
                argv: supervised_argv(&config.shell, command, script.as_deref()),
                env,
                cwd: cwd.clone(),
            },
            &wrappers,
            ChildIo {
                stdin_pipe: false,
                stdout: Sink::Fd(file.into()),
                stderr: Sink::Fd(second.into()),
                extra: Vec::new(),
                terminal: None,
            },
            Some(&marker),
        );
        let spawned = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                let _ = std::fs::remove_file(&output_file);
                if let Some(script) = &script {
                    let _ = std::fs::remove_file(script);
                }
                return Err(error);
            }
        };
        let pid = spawned.root.pid();
        let tree = config
            .containment
            .contain(pid, &marker, crate::wrap::adopter(&config.wrappers));
        let id = self.inner.jobs.add(StartedJob {
            root: spawned.root,
            tree,
            command: command.to_owned(),
            output_file: output_file.clone(),
            working_directory: Some(cwd.display().to_string()),
        });
        Ok(CommandResult {
            exit_code: None,
            signal: None,
            duration: started.elapsed(),
            timed_out: false,
            cancelled: false,
            output: options.output.finish(),
            log_file: None,
            notes: Vec::new(),
            background: Some(BackgroundJob {
                id,
                pid: Some(pid),
                // A sandbox's pid namespace has its own numbers: the model
                // stops the job from inside.
                pid_in_sandbox: crate::wrap::inner_pid(&config.wrappers, pid),
                output_file: Some(output_file),
            }),
            interactive: None,
            shell: None,
            working_directory: Some(cwd),
        })
    }
}
