//! The bash tool: validates a call, checks it against the policy and the
//! approval port, runs it through [`CommandExec`], and formats the result.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval::Approval;
use crate::asking::{Asker, Grants, approved_line};
use crate::config::ToolConfig;
use crate::error::ExecError;
use crate::exec::{CommandExec, ExecMode, SpawnOptions};
use crate::input::{Commands, Mode, ToolInput, validate_input};
use crate::output::OutputCapture;
use crate::output::OutputSink;
use crate::report::{
    background_text, batch_item, command_details, command_section, share_budget, telemetry_line,
};
use crate::result::{BatchItemDetails, Content, Details, ToolResult};
use crate::spec::{ToolSpec, tool_spec_for};

/// The bash tool bound to an environment. Cheap to clone; clones share
/// the session's standing approvals.
#[derive(Clone)]
pub struct BashTool {
    config: Arc<ToolConfig>,
    /// `config` with the fields a call that can ask a person may use.
    asking_config: Arc<ToolConfig>,
    exec: Arc<dyn CommandExec>,
    /// Runs the calls approved `outside_sandbox`.
    unsandboxed: Option<Arc<dyn CommandExec>>,
    approval: Option<Arc<dyn Approval>>,
    grants: Arc<Grants>,
    no_approval_hint: Option<Arc<str>>,
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
        let mut tool = Self {
            asking_config: Arc::new(config.clone()),
            config: Arc::new(config),
            exec,
            unsandboxed: None,
            approval: None,
            grants: Arc::default(),
            no_approval_hint: None,
        };
        tool.update_asking_config();
        tool
    }

    /// Asks `approval` when a command needs a person's yes: the policy
    /// blocks it, or the model set `outside_sandbox`. The schema then
    /// offers `justification` (and `outside_sandbox` with
    /// [`Self::with_unsandboxed`]). Without it, nobody is asked and the
    /// policy's refusals stand.
    #[must_use]
    pub fn with_approval(mut self, approval: Arc<dyn Approval>) -> Self {
        self.approval = Some(approval);
        self
    }

    /// Where calls approved `outside_sandbox` run: the same environment
    /// without the sandbox, a fresh shell per call. Without it the field
    /// is never offered.
    #[must_use]
    pub fn with_unsandboxed(mut self, exec: Arc<dyn CommandExec>) -> Self {
        self.unsandboxed = Some(exec);
        self.update_asking_config();
        self
    }

    /// Why nobody can be asked here and what the user could do instead,
    /// added to a policy refusal, and to the error of a call that sends
    /// `outside_sandbox` or `justification`, when no approval is given.
    #[must_use]
    pub fn with_no_approval_hint(mut self, hint: impl Into<String>) -> Self {
        self.no_approval_hint = Some(hint.into().into());
        self
    }

    fn update_asking_config(&mut self) {
        let mut config = (*self.config).clone();
        config.fields.justification = true;
        config.fields.outside_sandbox = self.unsandboxed.is_some();
        self.asking_config = Arc::new(config);
    }

    /// What the environment says of itself (where, which sandbox).
    pub fn environment(&self) -> crate::environment::EnvironmentInfo {
        self.exec.environment()
    }

    /// The tool's configuration.
    pub fn config(&self) -> &ToolConfig {
        &self.config
    }

    /// The definition to give the model: with the approval fields when
    /// the tool has an [`Approval`].
    pub fn spec(&self) -> ToolSpec {
        self.spec_for(self.approval.is_some())
    }

    /// The definition for calls that can ask a person (`asking`: see
    /// [`Self::call_asking`]) or not.
    pub fn spec_for(&self, asking: bool) -> ToolSpec {
        let config = if asking {
            &self.asking_config
        } else {
            &self.config
        };
        tool_spec_for(config, &self.exec.environment())
    }

    /// Runs a call to its end.
    pub async fn call(&self, input: Value) -> ToolResult {
        self.call_with(&input, CallContext::default()).await
    }

    /// Runs a call to its end with cancellation and live output, asking
    /// the tool's [`Approval`] when one is needed.
    pub async fn call_with(&self, input: &Value, context: CallContext) -> ToolResult {
        self.call_asking(input, context, self.approval.clone())
            .await
    }

    /// [`Self::call_with`], asking `approval` instead of the tool's own (a
    /// front end whose person is reached per connection, as an MCP
    /// client's); `None`: nobody is asked, and the approval fields are
    /// unknown to this call.
    pub async fn call_asking(
        &self,
        input: &Value,
        context: CallContext,
        approval: Option<Arc<dyn Approval>>,
    ) -> ToolResult {
        let config = if approval.is_some() {
            &self.asking_config
        } else {
            &self.config
        };
        let input = match validate_input(input, config) {
            Ok(input) => input,
            Err(error) => {
                let command = echoed_command(crate::input::raw_command(input));
                let mut message = format!("invalid input: {}", error.message);
                if approval.is_none()
                    && matches!(error.field.as_str(), "outside_sandbox" | "justification")
                    && let Some(hint) = &self.no_approval_hint
                {
                    message.push_str(&format!(" ({hint})"));
                } else if approval.is_some()
                    && self.unsandboxed.is_none()
                    && error.field == "outside_sandbox"
                {
                    message.push_str(
                        " ('outside_sandbox' is not available here: the sandbox is already off, \
                         or the commands run in a remote environment whose sandbox cannot be \
                         lifted from here)",
                    );
                }
                let mut result = ToolResult::refused(&command, "invalid_input", message);
                result.details.field = Some(error.field);
                return result;
            }
        };
        self.run_asking(&input, context, approval.as_deref()).await
    }

    /// Runs an already validated input, asking the tool's [`Approval`].
    pub async fn run_input(&self, input: &ToolInput, context: CallContext) -> ToolResult {
        self.run_asking(input, context, self.approval.as_deref())
            .await
    }

    async fn run_asking(
        &self,
        input: &ToolInput,
        context: CallContext,
        approval: Option<&dyn Approval>,
    ) -> ToolResult {
        let cancel = context.cancel.clone();
        let asker = Asker {
            approval,
            grants: &self.grants,
            no_approval_hint: self.no_approval_hint.as_deref(),
            cancel: &cancel,
        };
        // Checked before asking: a person is never asked about a call that
        // could not run anyway.
        let exec = if input.outside_sandbox {
            match &self.unsandboxed {
                Some(exec) => exec,
                None => {
                    return ToolResult::refused(
                        &input.display_command(),
                        "not_approved",
                        "Not run: this environment cannot run a call outside its sandbox.",
                    );
                }
            }
        } else {
            &self.exec
        };
        let approvals = match asker.clear(input, &self.config).await {
            Ok(approvals) => approvals,
            Err(refused) => return refused,
        };
        let mut result = match &input.commands {
            Commands::Single(command) => self.run_single(exec, command, input, context).await,
            Commands::Batch(commands) => self.run_batch(exec, commands, input, context).await,
        };
        for approval in &approvals {
            let line = approved_line(approval);
            if let Some(Content::Text { text }) = result.content.last_mut() {
                text.push('\n');
                text.push_str(&line);
            }
            result.details.notes.push(line);
        }
        if !approvals.is_empty() {
            result.details.approvals = approvals;
        } else if asker.approval.is_some()
            && self.unsandboxed.is_some()
            && result
                .details
                .notes
                .iter()
                .any(|note| note.starts_with("sandbox"))
        {
            result.details.notes.push(
                "You may call again with outside_sandbox: true and a justification if the task \
                 really needs this: the user will be asked."
                    .to_owned(),
            );
        }
        result
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
        exec: &Arc<dyn CommandExec>,
        command: &str,
        input: &ToolInput,
        context: CallContext,
    ) -> ToolResult {
        let options = self.spawn_options(input, &context);
        let timeout_secs = options.timeout.map(|timeout| timeout.as_secs());
        let mut result = match exec.spawn(command, options).await {
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
        let environment = exec.environment();
        if let Some(job) = &result.background {
            let mut details = command_details(command, &result, None, false);
            details.environment = environment_name(&environment);
            details.sandbox.clone_from(&environment.sandbox);
            details.limits.clone_from(&environment.limits);
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
            details.limits.clone_from(&environment.limits);
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
        details.limits = environment.limits;
        ToolResult {
            content: vec![Content::text(text)],
            is_error: !result.success(),
            details,
        }
    }

    async fn run_batch(
        &self,
        exec: &Arc<dyn CommandExec>,
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
            outcomes.push(match exec.spawn(command, options).await {
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
        let environment = exec.environment();
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
            limits: environment.limits.clone(),
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
