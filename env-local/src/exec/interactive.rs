//! Interactive calls of a [`LocalExec`]: a command in its own terminal.

use std::time::Instant;

use bashtool_core::{CommandResult, ExecError, SpawnOptions};

use super::LocalExec;
use crate::jobs::{detection_note, new_job_id, port_state};
use crate::spawn;
use bashtool_process::RunMarker;

impl LocalExec {
    /// Runs `command` in a terminal (`mode: "interactive"`): returns when it
    /// exits (an ordinary result), when it waits for input, or at the yield
    /// time; a job that runs on is kept for the jobs port.
    pub(super) async fn run_interactive(
        &self,
        command: &str,
        options: &SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        use crate::interactive::{
            DEFAULT_YIELD, InteractiveJob, InteractiveOptions, interactive_launch,
        };
        let started = Instant::now();
        let config = &self.inner.config;
        let cwd = spawn::resolve_cwd(&config.working_directory, options.cwd.as_deref())?;
        let marker = RunMarker::new();
        let launch = interactive_launch(config, command, &cwd, &options.env, &marker);
        let redactor = options.output.redactor();
        // What is written down of the command (the transcript's name, the
        // job's entry) is masked too.
        let recorded = redactor.as_ref().map_or_else(
            || command.to_owned(),
            |redactor| redactor.redact(command).into_owned(),
        );
        let (log_file, file) = match self.inner.logs.create_job_output(&recorded) {
            Ok((path, file)) => (Some(path), Some(file)),
            Err(_) => (None, None),
        };
        let cgroup = self.inner.limits.for_job()?;
        let mut job = InteractiveJob::start_in(
            launch,
            &config.wrappers,
            marker,
            InteractiveOptions {
                timeout: options.timeout,
                kill_grace: config.kill_grace,
                log_file: file,
                redactor,
                ..InteractiveOptions::default()
            },
            cgroup,
        )?;
        let yield_at = tokio::time::Instant::now() + options.yield_after.unwrap_or(DEFAULT_YIELD);
        let (snapshot, cancelled) = tokio::select! {
            snapshot = job.wait_until(yield_at) => (snapshot, false),
            () = options.cancel.cancelled() => (job.stop().await, true),
        };
        options
            .output
            .push_text(bashtool_core::Stream::Stdout, &snapshot.text);
        // Masked in the transcript already: counted there.
        options.output.add_redacted(job.masked());
        let mut notes = Vec::new();
        if snapshot.dropped > 0 {
            notes.push(format!(
                "{} of earlier output did not fit in memory; it is in the log file",
                bashtool_core::format_bytes(snapshot.dropped)
            ));
        }
        // What the realm has to say (a connection its proxy refused, a git
        // file moved aside), as after any call.
        notes.extend(crate::realm::after_call(&config.wrappers));
        let running = !matches!(snapshot.state, crate::interactive::JobState::Exited(_));
        let (state, exit_code, signal) = port_state(&snapshot.state);
        let timed_out =
            matches!(&snapshot.state, crate::interactive::JobState::Exited(exit) if exit.timed_out);
        let interactive = if running {
            let id = new_job_id(job.pid());
            let status = bashtool_core::InteractiveStatus {
                job: id.clone(),
                state,
                screen: snapshot.screen.clone(),
                detection_note: detection_note(snapshot.detection),
            };
            self.inner
                .interactive
                .add(id, job, &recorded, log_file.clone());
            Some(status)
        } else {
            None
        };
        Ok(CommandResult {
            exit_code,
            signal,
            duration: started.elapsed(),
            timed_out,
            cancelled,
            output: options.output.finish(),
            log_file,
            notes,
            background: None,
            interactive,
            shell: None,
            working_directory: Some(cwd),
        })
    }
}
