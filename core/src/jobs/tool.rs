//! The `bash_jobs` tool: the model lists, reads, waits on, stops and (for
//! interactive jobs) types into the jobs it started with the bash tool.
//! Validation, the schema and the rendering live here; the jobs themselves
//! live behind the [`Jobs`] port.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::ToolConfig;
use crate::jobs::port::{JobError, JobInput, JobOutput, Jobs, ReadFrom};
use crate::jobs::render::{info_line, list_text, output_text, wait_text};
use crate::result::{Content, Details, ToolResult};
use crate::spec::ToolSpec;

/// The tool's name.
pub const JOBS_TOOL_NAME: &str = "bash_jobs";
/// Lines of a job's output shown by a tail read by default.
pub const DEFAULT_TAIL_LINES: usize = 50;
/// Most lines a tail read may ask for.
pub const MAX_TAIL_LINES: usize = 1000;
/// How long `wait` waits by default.
pub const DEFAULT_WAIT_SECS: u64 = 30;
/// The longest `wait`.
pub const MAX_WAIT_SECS: u64 = 600;
/// How long `write` waits for the program to answer by default.
pub const DEFAULT_YIELD_SECS: u64 = 10;

/// The `bash_jobs` tool bound to an environment's jobs. Cheap to clone.
#[derive(Clone)]
pub struct JobsTool {
    config: Arc<ToolConfig>,
    jobs: Arc<dyn Jobs>,
}

impl std::fmt::Debug for JobsTool {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("JobsTool").finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    action: Action,
    job: Option<String>,
    lines: Option<usize>,
    since: Option<u64>,
    timeout: Option<u64>,
    text: Option<String>,
    keys: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    List,
    #[serde(alias = "output")]
    Read,
    Wait,
    Stop,
    Write,
}

impl JobsTool {
    /// The tool over `jobs`, with the output budget and line cap of `config`.
    pub fn new(config: ToolConfig, jobs: Arc<dyn Jobs>) -> Self {
        Self {
            config: Arc::new(config),
            jobs,
        }
    }

    /// The definition to give the model.
    pub fn spec(&self) -> ToolSpec {
        jobs_tool_spec(&self.config)
    }

    /// Stops every job still running (an MCP server shutting down).
    pub async fn stop_all(&self) {
        self.jobs.stop_all().await;
    }

    /// Runs one call to its end. Mistakes in the input come back as error
    /// results naming the field, and nothing happens.
    pub async fn call(&self, input: &Value) -> ToolResult {
        self.call_with(input, CancellationToken::new()).await
    }

    /// Runs one call; `cancel` ends a `wait` early (the job keeps running).
    pub async fn call_with(&self, input: &Value, cancel: CancellationToken) -> ToolResult {
        let arguments: Arguments = match serde_json::from_value(input.clone()) {
            Ok(arguments) => arguments,
            Err(problem) => {
                return invalid(
                    None,
                    format!(
                        "{problem}; send {{\"action\": \"list\"}} or {{\"action\": \"read\", \"job\": \"ID\"}}"
                    ),
                );
            }
        };
        if arguments.action == Action::Write && !self.config.fields.interactive {
            return invalid(
                Some("action"),
                "write needs interactive mode, which is off in this environment; allowed: list, read, wait, stop".to_owned(),
            );
        }
        let id = match (arguments.action, &arguments.job) {
            (Action::List, _) => String::new(),
            (_, Some(id)) if !id.is_empty() => id.clone(),
            _ => {
                return invalid(
                    Some("job"),
                    "job is required for read, wait, stop and write: the id from the bash tool's result or from action \"list\"".to_owned(),
                );
            }
        };
        match arguments.action {
            Action::List => {
                let jobs = self.jobs.list().await;
                success(
                    list_text(&jobs),
                    Details {
                        jobs: Some(jobs),
                        ..Details::default()
                    },
                )
            }
            Action::Read => self.read(&id, &arguments).await,
            Action::Wait => self.wait(&id, arguments.timeout, cancel).await,
            Action::Stop => match self.jobs.stop(&id).await {
                // An environment that returns a job still running did not
                // stop it, whatever it meant: never report that as done.
                Ok(job) if job.state.is_running() => job_error(&JobError::Environment {
                    message: format!(
                        "job `{id}` could not be stopped: it is still running{}",
                        job.pid
                            .map(|pid| format!(" (pid {pid})"))
                            .unwrap_or_default()
                    ),
                }),
                Ok(job) => success(
                    format!("stopped (with its whole process tree)\n{}", info_line(&job)),
                    job_details(&job, None),
                ),
                Err(error) => job_error(&error),
            },
            Action::Write => self.write(&id, arguments).await,
        }
    }

    async fn read(&self, id: &str, arguments: &Arguments) -> ToolResult {
        let from = match (arguments.lines, arguments.since) {
            (Some(_), Some(_)) => {
                return invalid(Some("since"), "give lines or since, not both".to_owned());
            }
            (_, Some(cursor)) => ReadFrom::Cursor(cursor),
            (lines, None) => {
                let lines = lines.unwrap_or(DEFAULT_TAIL_LINES);
                if !(1..=MAX_TAIL_LINES).contains(&lines) {
                    return invalid(Some("lines"), format!("lines must be 1..={MAX_TAIL_LINES}"));
                }
                ReadFrom::Tail { lines }
            }
        };
        let budget = self.config.output.budget_chars();
        match self.jobs.read(id, from, budget).await {
            Ok(output) => {
                let output = self.masked(output);
                let text = output_text(&output, self.config.output.max_line_chars);
                let mut details = job_details(&output.job, Some(&output));
                details.truncated = output.skipped > 0 || output.more;
                with_masked_note(success(text, details), &output)
            }
            Err(error) => job_error(&error),
        }
    }

    async fn wait(&self, id: &str, timeout: Option<u64>, cancel: CancellationToken) -> ToolResult {
        let seconds = timeout.unwrap_or(DEFAULT_WAIT_SECS);
        if !(1..=MAX_WAIT_SECS).contains(&seconds) {
            return invalid(
                Some("timeout"),
                format!("timeout must be 1..={MAX_WAIT_SECS} seconds"),
            );
        }
        match self
            .jobs
            .wait(id, Duration::from_secs(seconds), cancel)
            .await
        {
            Ok(job) => success(wait_text(&job, seconds), job_details(&job, None)),
            Err(error) => job_error(&error),
        }
    }

    async fn write(&self, id: &str, arguments: Arguments) -> ToolResult {
        let input = JobInput {
            text: arguments.text.unwrap_or_default(),
            keys: arguments.keys.unwrap_or_default(),
        };
        if input.text.is_empty() && input.keys.is_empty() {
            return invalid(
                Some("text"),
                "write needs text, keys or both (e.g. {\"text\": \"yes\", \"keys\": [\"Enter\"]})"
                    .to_owned(),
            );
        }
        let seconds = arguments.timeout.unwrap_or(DEFAULT_YIELD_SECS);
        if !(1..=MAX_WAIT_SECS).contains(&seconds) {
            return invalid(
                Some("timeout"),
                format!("timeout must be 1..={MAX_WAIT_SECS} seconds"),
            );
        }
        match self
            .jobs
            .write(id, input, Duration::from_secs(seconds))
            .await
        {
            Ok(output) => {
                let output = self.masked(output);
                let text = output_text(&output, self.config.output.max_line_chars);
                with_masked_note(
                    success(text, job_details(&output.job, Some(&output))),
                    &output,
                )
            }
            Err(error) => job_error(&error),
        }
    }
}

impl JobsTool {
    /// `output` with its text and screen masked, when the tool masks
    /// secrets: a job's output file is masked as it is written where the
    /// environment can, and this catches what reached it otherwise.
    fn masked(&self, mut output: JobOutput) -> JobOutput {
        if let Some(redactor) = &self.config.redactor {
            output.text = redactor.redact(&output.text).into_owned();
            if let Some(screen) = &output.screen {
                output.screen = Some(redactor.redact(screen).into_owned());
            }
        }
        output
    }
}

/// How a mask starts (see [`crate::Redactor`]).
const MASK_START: &str = "[redacted: ";

/// Says in the text and the notes how many masked secrets the output
/// shows (masked now or when the job's output was written).
fn with_masked_note(mut result: ToolResult, output: &JobOutput) -> ToolResult {
    let count = output.text.matches(MASK_START).count()
        + output
            .screen
            .as_deref()
            .map_or(0, |screen| screen.matches(MASK_START).count());
    let note = match count {
        0 => return result,
        1 => "1 secret is masked in this output as [redacted: …]".to_owned(),
        count => format!("{count} secrets are masked in this output as [redacted: …]"),
    };
    if let Some(Content::Text { text }) = result.content.first_mut() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[{note}]"));
    }
    result.details.notes.push(note);
    result
}

/// The `bash_jobs` definition for `config`.
pub fn jobs_tool_spec(config: &ToolConfig) -> ToolSpec {
    let interactive = config.fields.interactive;
    let mut actions = vec!["list", "read", "wait", "stop"];
    let mut action_help = "list: all jobs; read: a job's output (the last lines, or the window after a cursor); wait: until a job ends; stop: a job and its whole process tree".to_owned();
    if interactive {
        actions.push("write");
        action_help.push_str(
            "; write: type text and keys into an interactive job, then see what it answers",
        );
    }
    let mut properties = json!({
        "action": {"type": "string", "enum": actions, "description": action_help},
        "job": {"type": "string", "description": "The job id, from the bash tool's result or from list; needed by every action but list"},
        "lines": {"type": "integer", "minimum": 1, "maximum": MAX_TAIL_LINES, "description": format!("read: the last N lines (default {DEFAULT_TAIL_LINES})")},
        "since": {"type": "integer", "minimum": 0, "description": "read: the output after this cursor (0 for the start, then the next_cursor of the previous read); pages through everything without skipping"},
        "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_WAIT_SECS, "description": format!("wait: seconds to wait (default {DEFAULT_WAIT_SECS}); the job keeps running if it has not ended")},
    });
    if interactive {
        properties["text"] = json!({"type": "string", "description": "write: text to type (include \\n to press Enter, or use keys)"});
        properties["keys"] = json!({"type": "array", "items": {"type": "string"}, "description": "write: keys pressed after the text, in order: Enter, Tab, Esc, Backspace, Up, Down, Left, Right, Home, End, PageUp, PageDown, Delete, Space, C-a..C-z (C-c interrupts, C-d ends input), F1..F12"});
        properties["timeout"]["description"] = json!(format!(
            "wait: seconds to wait (default {DEFAULT_WAIT_SECS}); write: how long to wait for the answer (default {DEFAULT_YIELD_SECS})"
        ));
    }
    let mut description = format!(
        "Jobs started by the {} tool with mode \"background\"{}: list them, read a job's output \
         (the last lines, or page through all of it with since/next_cursor), wait for one to end, \
         or stop one with its whole process tree.",
        config.name,
        if interactive {
            " or \"interactive\""
        } else {
            ""
        }
    );
    if interactive {
        description.push_str(
            " For an interactive job, write types text and keys and returns what the program \
             shows next: its new output, or its rendered screen for full-screen programs, and \
             whether it now waits for input.",
        );
    }
    ToolSpec {
        name: JOBS_TOOL_NAME.to_owned(),
        description,
        input_schema: json!({
            "type": "object",
            "properties": properties,
            "required": ["action"],
            "additionalProperties": false,
        }),
    }
}

fn success(text: String, mut details: Details) -> ToolResult {
    details.success = true;
    ToolResult {
        content: vec![Content::text(text)],
        is_error: false,
        details,
    }
}

fn invalid(field: Option<&str>, message: impl std::fmt::Display) -> ToolResult {
    let mut result = ToolResult::refused("", "invalid_input", format!("invalid input: {message}"));
    result.details.field = field.map(str::to_owned);
    result
}

fn job_error(error: &JobError) -> ToolResult {
    let kind = match error {
        JobError::InvalidInput { .. } => "invalid_input",
        JobError::UnknownJob { .. } => "unknown_job",
        JobError::NotInteractive { .. } | JobError::Ended { .. } => "not_interactive",
        JobError::Environment { .. } => "environment",
    };
    let mut result = ToolResult::refused("", kind, error.to_string());
    if let JobError::InvalidInput { field, .. } = error {
        result.details.field = Some(field.clone());
    }
    result
}

fn job_details(
    job: &crate::jobs::port::JobInfo,
    output: Option<&crate::jobs::port::JobOutput>,
) -> Details {
    Details {
        command: job.command.clone(),
        exit_code: job.exit_code,
        signal: job.signal.clone(),
        execution_time_ms: job.runtime_ms,
        pid: job.pid,
        output_file: job.output_file.clone(),
        job: Some(job.id.clone()),
        state: Some(job.state.as_str().to_owned()),
        next_cursor: output.map(|output| output.next_cursor),
        ..Details::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::port::{JobInfo, JobOutput, JobState};

    /// Jobs whose `stop` answers with the job in `state`.
    struct StopsAs(JobState);

    #[async_trait::async_trait]
    impl Jobs for StopsAs {
        async fn list(&self) -> Vec<JobInfo> {
            Vec::new()
        }
        async fn read(&self, id: &str, _: ReadFrom, _: usize) -> Result<JobOutput, JobError> {
            Err(JobError::UnknownJob { id: id.to_owned() })
        }
        async fn wait(
            &self,
            id: &str,
            _: Duration,
            _: CancellationToken,
        ) -> Result<JobInfo, JobError> {
            Err(JobError::UnknownJob { id: id.to_owned() })
        }
        async fn stop(&self, id: &str) -> Result<JobInfo, JobError> {
            Ok(JobInfo {
                id: id.to_owned(),
                command: "sleep 300".to_owned(),
                state: self.0,
                exit_code: None,
                signal: (self.0 == JobState::Signaled).then(|| "SIGTERM".to_owned()),
                runtime_ms: 1500,
                pid: Some(4242),
                output_file: None,
                interactive: false,
            })
        }
        async fn stop_all(&self) {}
    }

    async fn stop_with(state: JobState) -> ToolResult {
        JobsTool::new(ToolConfig::default(), Arc::new(StopsAs(state)))
            .call(&json!({"action": "stop", "job": "j1"}))
            .await
    }

    #[tokio::test]
    async fn a_stop_is_reported_only_for_a_job_that_ended() {
        let stopped = stop_with(JobState::Signaled).await;
        assert!(!stopped.is_error);
        assert_eq!(
            stopped.text(),
            "stopped (with its whole process tree)\njob j1 · terminated by SIGTERM · 1.5s · sleep 300"
        );
        let running = stop_with(JobState::Running).await;
        assert!(running.is_error);
        assert_eq!(
            running.text(),
            "job `j1` could not be stopped: it is still running (pid 4242)"
        );
    }
}
