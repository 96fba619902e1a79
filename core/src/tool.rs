//! The bash tool: validates a call, checks it against the policy and the
//! approval port, runs it through [`CommandExec`], and formats the result.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval::{Approval, ApproveAll};
use crate::config::ToolConfig;
use crate::error::ExecError;
use crate::exec::{CommandExec, ExecMode, SpawnOptions};
use crate::input::{Commands, Mode, ToolInput, validate_input};
use crate::output::OutputCapture;
use crate::output::OutputSink;
use crate::policy;
use crate::report::{
    background_text, batch_item, command_details, command_section, share_budget, telemetry_line,
};
use crate::result::{BatchItemDetails, Content, Details, ToolResult};
use crate::spec::{ToolSpec, tool_spec_for};

/// Seed 000's refusal when the approval port says no.
pub const NOT_CONFIRMED: &str = "Command was not confirmed by the user.";

/// The bash tool bound to an environment. Cheap to clone.
#[derive(Clone)]
pub struct BashTool {
    config: Arc<ToolConfig>,
    exec: Arc<dyn CommandExec>,
    approval: Arc<dyn Approval>,
}

impl std::fmt::Debug for BashTool {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BashTool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// How a caller follows and stops one call.
#[derive(Clone, Default)]
pub struct CallContext {
    /// Cancelling it stops the command's process tree (and skips the rest of
    /// a batch).
    pub cancel: CancellationToken,
    /// Receives output as it arrives.
    pub on_output: Option<OutputSink>,
}

impl BashTool {
    /// The tool with `config`, running commands in `exec`.
    pub fn new(config: ToolConfig, exec: Arc<dyn CommandExec>) -> Self {
        Self {
            config: Arc::new(config),
            exec,
            approval: Arc::new(ApproveAll),
        }
    }

    /// Asks `approval` before each command runs (seed 000's `confirm_fn`).
    #[must_use]
    pub fn with_approval(mut self, approval: Arc<dyn Approval>) -> Self {
        self.approval = approval;
        self
    }

    /// The tool's configuration.
    pub fn config(&self) -> &ToolConfig {
        &self.config
    }

    /// The definition to give the model.
    pub fn spec(&self) -> ToolSpec {
        tool_spec_for(&self.config, &self.exec.environment())
    }

    /// Runs a call to its end.
    pub async fn call(&self, input: Value) -> ToolResult {
        self.call_with(&input, CallContext::default()).await
    }

    /// Runs a call to its end with cancellation and live output.
    pub async fn call_with(&self, input: &Value, context: CallContext) -> ToolResult {
        let input = match validate_input(input, &self.config) {
            Ok(input) => input,
            Err(error) => {
                let command = echoed_command(crate::input::raw_command(input));
                let mut result = ToolResult::refused(
                    &command,
                    "invalid_input",
                    format!("invalid input: {}", error.message),
                );
                result.details.field = Some(error.field);
                return result;
            }
        };
        self.run_input(&input, context).await
    }

    /// Runs an already validated input.
    pub async fn run_input(&self, input: &ToolInput, context: CallContext) -> ToolResult {
        let display = input.display_command();
        for command in input.commands.as_slice() {
            if let Err(violation) = policy::check(command, &self.config.policy) {
                let mut result = ToolResult::refused(&display, "blocked", violation.message);
                result.details.rule = Some(violation.rule);
                return result;
            }
        }
        for command in input.commands.as_slice() {
            if !self.approval.approve(command).await {
                return ToolResult::refused(&display, "not_approved", NOT_CONFIRMED);
            }
        }
        match &input.commands {
            Commands::Single(command) => self.run_single(command, input, context).await,
            Commands::Batch(commands) => self.run_batch(commands, input, context).await,
        }
    }

    /// The options of one command; each gets its own output capture, with
    /// this tool's output settings.
    fn spawn_options(&self, input: &ToolInput, context: &CallContext) -> SpawnOptions {
        SpawnOptions {
            cwd: input.working_directory.clone(),
            timeout: input.effective_timeout(&self.config),
            env: input.environment.clone(),
            cancel: context.cancel.clone(),
            output: OutputCapture::new(&self.config.output, context.on_output.clone())
                .redacting(self.config.redactor.clone()),
            mode: match input.mode {
                Mode::Background => ExecMode::Background,
                Mode::Interactive => ExecMode::Interactive,
                Mode::Default | Mode::Slow => ExecMode::Foreground,
            },
            yield_after: (input.mode == Mode::Interactive).then_some(self.config.interactive_yield),
        }
    }

    async fn run_single(
        &self,
        command: &str,
        input: &ToolInput,
        context: CallContext,
    ) -> ToolResult {
        let options = self.spawn_options(input, &context);
        let timeout_secs = options.timeout.map(|timeout| timeout.as_secs());
        let mut result = match self.exec.spawn(command, options).await {
            Ok(result) => result,
            Err(error) => return exec_error_result(command, &error),
        };
        note_redactions(&mut result);
        // A screen is rendered from the terminal's own state: masked here.
        if let (Some(redactor), Some(status)) = (&self.config.redactor, &mut result.interactive)
            && let Some(screen) = &status.screen
        {
            status.screen = Some(redactor.redact(screen).into_owned());
        }
        let environment = self.exec.environment();
        if let Some(job) = &result.background {
            let mut details = command_details(command, &result, None, false);
            details.environment = environment_name(&environment);
            details.sandbox.clone_from(&environment.sandbox);
            return ToolResult {
                content: vec![Content::text(background_text(job, &self.config))],
                is_error: false,
                details,
            };
        }
        if let Some(status) = &result.interactive {
            let mut details = command_details(command, &result, None, false);
            details.environment = environment_name(&environment);
            details.sandbox.clone_from(&environment.sandbox);
            details.job = Some(status.job.clone());
            details.state = Some(status.state.as_str().to_owned());
            details.success = true;
            return ToolResult {
                content: vec![Content::text(crate::report::interactive_text(
                    &result,
                    status,
                    &self.config,
                ))],
                is_error: false,
                details,
            };
        }
        let section = command_section(
            &result,
            timeout_secs,
            &self.config,
            &environment,
            self.config.output.budget_chars(),
        );
        let mut text = section.text;
        if self.config.shell_telemetry
            && let Some(shell) = &result.shell
        {
            text.push('\n');
            text.push_str(&telemetry_line(shell));
        }
        let mut details = command_details(command, &result, timeout_secs, section.truncated);
        details.environment = environment_name(&environment);
        details.sandbox = environment.sandbox;
        ToolResult {
            content: vec![Content::text(text)],
            is_error: !result.success(),
            details,
        }
    }

    async fn run_batch(
        &self,
        commands: &[String],
        input: &ToolInput,
        context: CallContext,
    ) -> ToolResult {
        enum Outcome {
            Ran(crate::exec::CommandResult),
            Failed(ExecError),
            Skipped,
        }
        let options = self.spawn_options(input, &context);
        let timeout_secs = options.timeout.map(|timeout| timeout.as_secs());
        let mut outcomes = Vec::with_capacity(commands.len());
        for command in commands {
            if context.cancel.is_cancelled() {
                outcomes.push(Outcome::Skipped);
                continue;
            }
            // Each command its own capture (a clone would share one).
            let options = SpawnOptions {
                output: OutputCapture::new(&self.config.output, context.on_output.clone())
                    .redacting(self.config.redactor.clone()),
                ..options.clone()
            };
            outcomes.push(match self.exec.spawn(command, options).await {
                Ok(mut result) => {
                    note_redactions(&mut result);
                    Outcome::Ran(result)
                }
                Err(error) => Outcome::Failed(error),
            });
        }
        let needs: Vec<u64> = outcomes
            .iter()
            .map(|outcome| match outcome {
                Outcome::Ran(result) => result.output.total_cost(),
                _ => 0,
            })
            .collect();
        let shares = share_budget(&needs, self.config.output.budget_chars());
        let environment = self.exec.environment();
        let total = commands.len();
        let mut sections = Vec::with_capacity(total);
        let mut items: Vec<BatchItemDetails> = Vec::with_capacity(total);
        let mut last_ran: Option<Details> = None;
        let mut any_failed = false;
        let mut truncated = false;
        let mut shell = None;
        for (index, (command, outcome)) in commands.iter().zip(&outcomes).enumerate() {
            let header = format!("[{}/{total}] $ {command}", index + 1);
            match outcome {
                Outcome::Ran(result) => {
                    let section = command_section(
                        result,
                        timeout_secs,
                        &self.config,
                        &environment,
                        shares[index],
                    );
                    sections.push(format!("{header}\n{}", section.text));
                    let details = command_details(command, result, timeout_secs, section.truncated);
                    items.push(batch_item(&details));
                    any_failed |= !details.success;
                    truncated |= section.truncated;
                    if result.shell.is_some() {
                        shell.clone_from(&result.shell);
                    }
                    last_ran = Some(details);
                }
                Outcome::Failed(error) => {
                    sections.push(format!("{header}\n{error}"));
                    any_failed = true;
                    items.push(not_run_item(command, false));
                }
                Outcome::Skipped => {
                    sections.push(format!("{header}\n(skipped — cancelled)"));
                    any_failed = true;
                    items.push(not_run_item(command, true));
                }
            }
        }
        let mut text = sections.join("\n\n");
        if self.config.shell_telemetry
            && let Some(shell) = &shell
        {
            text.push_str("\n\n");
            text.push_str(&telemetry_line(shell));
        }
        let last = last_ran.unwrap_or_default();
        let details = Details {
            command: commands.join("\n"),
            exit_code: last.exit_code,
            signal: last.signal,
            success: !any_failed,
            timed_out: items.iter().any(|item| item.timed_out),
            cancelled: context.cancel.is_cancelled(),
            execution_time_ms: items.iter().map(|item| item.execution_time_ms).sum(),
            working_directory: last.working_directory,
            log_file: None,
            truncated,
            total_lines: items.iter().map(|item| item.total_lines).sum(),
            total_bytes: items.iter().map(|item| item.total_bytes).sum(),
            shell,
            batch: Some(items),
            environment: environment_name(&environment),
            sandbox: environment.sandbox.clone(),
            ..Details::default()
        };
        ToolResult {
            content: vec![Content::text(text)],
            is_error: any_failed,
            details,
        }
    }
}

/// Tells the model how many secrets its output had masked.
fn note_redactions(result: &mut crate::exec::CommandResult) {
    match result.output.redacted() {
        0 => {}
        1 => result
            .notes
            .push("1 secret was masked in this output as [redacted: …]".to_owned()),
        count => result.notes.push(format!(
            "{count} secrets were masked in this output as [redacted: …]"
        )),
    }
}

/// The environment's name for the details; an unnamed one is left out.
fn environment_name(environment: &crate::environment::EnvironmentInfo) -> Option<String> {
    (!environment.name.is_empty()).then(|| environment.name.clone())
}

/// Longest rejected command echoed back whole in the details.
const ECHOED_COMMAND_BYTES: usize = 1024;
/// How much of a longer one is echoed, before its size.
const ECHOED_PREFIX_CHARS: usize = 200;

/// The command of a rejected input as the details show it: whole when
/// short, else a prefix and its size, so a 4 MiB command refused for its
/// size does not come back as 4 MiB of result.
fn echoed_command(command: String) -> String {
    if command.len() <= ECHOED_COMMAND_BYTES {
        return command;
    }
    let prefix: String = command.chars().take(ECHOED_PREFIX_CHARS).collect();
    format!("{prefix}... [{} bytes in all]", command.len())
}

/// The details of a batch command that did not run: the environment could
/// not start it, or the batch was cancelled before it (`skipped`).
fn not_run_item(command: &str, skipped: bool) -> BatchItemDetails {
    BatchItemDetails {
        command: command.to_owned(),
        exit_code: None,
        signal: None,
        success: false,
        timed_out: false,
        cancelled: skipped,
        skipped,
        execution_time_ms: 0,
        log_file: None,
        truncated: false,
        total_lines: 0,
        total_bytes: 0,
    }
}

/// The result when the environment could not run the command at all.
pub(crate) fn exec_error_result(command: &str, error: &ExecError) -> ToolResult {
    let mut result = ToolResult::refused(command, "spawn_failed", error.to_string());
    if matches!(
        error,
        ExecError::MissingDirectory { .. } | ExecError::NotADirectory { .. }
    ) {
        result.details.error_kind = Some("invalid_input".to_owned());
        result.details.field = Some("working_directory".to_owned());
        result.content = vec![Content::text(format!("invalid input: {error}"))];
    }
    result
}

#[cfg(test)]
mod echo_tests {
    use super::*;

    #[test]
    fn a_long_rejected_command_is_echoed_as_a_prefix_and_its_size() {
        assert_eq!(echoed_command("ls".to_owned()), "ls");
        let long = "é".repeat(ECHOED_COMMAND_BYTES);
        assert_eq!(
            echoed_command(long),
            format!("{}... [2048 bytes in all]", "é".repeat(ECHOED_PREFIX_CHARS))
        );
    }
}
