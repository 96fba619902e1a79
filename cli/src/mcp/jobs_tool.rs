//! The `bash_jobs` tool: the model lists, reads, waits on and stops the
//! background jobs it started with `mode: "background"`.
//!
//! The jobs live in the environment; [`JobControl`] is the little the tool
//! needs from it, so the tool does not depend on how the environment keeps
//! them.

use std::sync::Arc;
use std::time::Duration;

use bashtool_core::abbreviate_line;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::tools::object;

/// The tool's name in `tools/list`.
pub const NAME: &str = "bash_jobs";
/// Lines of a job's output shown by default.
const DEFAULT_TAIL_LINES: usize = 50;
/// Most lines the model may ask for.
const MAX_TAIL_LINES: usize = 1000;
/// How long `wait` waits by default.
const DEFAULT_WAIT_SECS: u64 = 30;
/// The longest `wait`.
const MAX_WAIT_SECS: u64 = 600;

/// How a job stands, as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobView {
    pub pid: u32,
    pub command: String,
    pub output_file: String,
    /// `running`, `exited` or `signaled`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    pub runtime_ms: u64,
}

impl JobView {
    fn status_text(&self) -> String {
        match (self.status.as_str(), self.exit_code, &self.signal) {
            ("exited", Some(code), _) => format!("exited with code {code}"),
            ("signaled", _, Some(signal)) => format!("terminated by {signal}"),
            (status, _, _) => status.to_owned(),
        }
    }

    fn line(&self) -> String {
        format!(
            "pid {} · {} · {} · {}\n  output: {}",
            self.pid,
            self.status_text(),
            human_runtime(self.runtime_ms),
            self.command,
            self.output_file
        )
    }
}

fn human_runtime(milliseconds: u64) -> String {
    let seconds = milliseconds / 1000;
    match seconds {
        0..60 => format!("{}.{}s", seconds, (milliseconds % 1000) / 100),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, (seconds % 3600) / 60),
    }
}

/// Which part of a job's output to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobRead {
    Tail { lines: usize },
    Since { offset: u64 },
}

/// A piece of a job's output.
#[derive(Debug, Clone)]
pub struct JobText {
    pub text: String,
    /// Pass as `since` to read what comes after this.
    pub next_offset: u64,
    pub job: JobView,
}

/// What the tool needs from the environment that owns the jobs.
#[async_trait::async_trait]
pub trait JobControl: Send + Sync {
    fn list(&self) -> Vec<JobView>;
    async fn output(&self, pid: u32, read: JobRead) -> anyhow::Result<JobText>;
    async fn wait(&self, pid: u32, timeout: Duration) -> anyhow::Result<JobView>;
    async fn stop(&self, pid: u32) -> anyhow::Result<JobView>;
    /// Stops every job still running (server shutdown).
    async fn stop_all(&self);
}

/// The tool definition.
pub fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["list", "output", "wait", "stop"],
                "description": "list: all jobs; output: read a job's output; wait: wait for a job to end; stop: stop a job and its whole process tree",
            },
            "pid": {
                "type": "integer",
                "minimum": 1,
                "description": "The job's pid, from the bash tool's background result or from list; needed by output, wait and stop",
            },
            "lines": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TAIL_LINES,
                "description": format!("output: the last N lines (default {DEFAULT_TAIL_LINES})"),
            },
            "since": {
                "type": "integer",
                "minimum": 0,
                "description": "output: what was written after this byte offset (the next_offset of the previous read) instead of the last lines",
            },
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_WAIT_SECS,
                "description": format!("wait: seconds to wait (default {DEFAULT_WAIT_SECS}); the job keeps running if it has not ended"),
            },
        },
        "required": ["action"],
        "additionalProperties": false,
    });
    let mut tool = Tool::new(
        NAME,
        "Background jobs started by the bash tool with mode \"background\" (servers, watchers, \
         long builds): list them, read a job's output (the last lines, or what is new since an \
         offset), wait for one to end, or stop one with its whole process tree. Jobs end when \
         this server stops.",
        object(schema),
    );
    tool.annotations = Some(ToolAnnotations::new().read_only(false).destructive(true));
    tool
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    action: Action,
    pid: Option<u32>,
    lines: Option<usize>,
    since: Option<u64>,
    timeout: Option<u64>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    List,
    Output,
    Wait,
    Stop,
}

fn error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn success(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// Runs one `bash_jobs` call. Mistakes in the arguments come back as error
/// results the model can read, not as protocol errors.
pub async fn call(
    jobs: &Arc<dyn JobControl>,
    arguments: Option<JsonObject>,
    max_line_chars: usize,
    budget_chars: usize,
) -> CallToolResult {
    let arguments: Arguments =
        match serde_json::from_value(Value::Object(arguments.unwrap_or_default())) {
            Ok(arguments) => arguments,
            Err(problem) => {
                return error(format!(
                    "invalid input: {problem}; send {{\"action\": \"list\"}} or {{\"action\": \
                     \"output\", \"pid\": 1234}}"
                ));
            }
        };
    let pid = match (arguments.action, arguments.pid) {
        (Action::List, _) => 0,
        (_, Some(pid)) => pid,
        (_, None) => {
            return error(
                "invalid input: pid is required for output, wait and stop; use action \"list\" \
                 to see the jobs",
            );
        }
    };
    match arguments.action {
        Action::List => {
            let jobs = jobs.list();
            let text = if jobs.is_empty() {
                "no background jobs".to_owned()
            } else {
                jobs.iter()
                    .map(JobView::line)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            success(text, json!({ "jobs": jobs }))
        }
        Action::Output => {
            if arguments.lines.is_some() && arguments.since.is_some() {
                return error("invalid input: give lines or since, not both");
            }
            let read = match arguments.since {
                Some(offset) => JobRead::Since { offset },
                None => JobRead::Tail {
                    lines: arguments
                        .lines
                        .unwrap_or(DEFAULT_TAIL_LINES)
                        .clamp(1, MAX_TAIL_LINES),
                },
            };
            match jobs.output(pid, read).await {
                Ok(output) => output_result(&output, max_line_chars, budget_chars),
                Err(problem) => error(format!("{problem:#}")),
            }
        }
        Action::Wait => {
            let seconds = arguments
                .timeout
                .unwrap_or(DEFAULT_WAIT_SECS)
                .clamp(1, MAX_WAIT_SECS);
            match jobs.wait(pid, Duration::from_secs(seconds)).await {
                Ok(job) => {
                    let text = if job.status == "running" {
                        format!(
                            "job {pid} is still running after waiting {seconds}s\n{}",
                            job.line()
                        )
                    } else {
                        job.line()
                    };
                    success(text, json!({ "job": job }))
                }
                Err(problem) => error(format!("{problem:#}")),
            }
        }
        Action::Stop => match jobs.stop(pid).await {
            Ok(job) => success(format!("stopped\n{}", job.line()), json!({ "job": job })),
            Err(problem) => error(format!("{problem:#}")),
        },
    }
}

/// The output of a job, shortened to the budget: a tail keeps its end, a
/// read since an offset keeps its beginning and says where to go on.
fn output_result(output: &JobText, max_line_chars: usize, budget_chars: usize) -> CallToolResult {
    let lines: Vec<String> = output
        .text
        .lines()
        .map(|line| abbreviate_line(line, max_line_chars).into_owned())
        .collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in lines.iter().rev() {
        let cost = line.chars().count() + 1;
        if used + cost > budget_chars && !kept.is_empty() {
            break;
        }
        used += cost;
        kept.push(line);
    }
    let omitted = lines.len() - kept.len();
    kept.reverse();
    let mut text = format!("[{}]\n", output.job.line().replace("\n  ", " · "));
    if omitted > 0 {
        text.push_str(&format!(
            "... ({omitted} earlier lines omitted; read {} for all of it) ...\n",
            output.job.output_file
        ));
    }
    if kept.is_empty() {
        text.push_str("(no output yet)\n");
    } else {
        text.push_str(&kept.join("\n"));
        text.push('\n');
    }
    text.push_str(&format!(
        "[next_offset {}: pass since={} to read only what comes next]",
        output.next_offset, output.next_offset
    ));
    success(
        text,
        json!({
            "job": output.job,
            "text": output.text,
            "next_offset": output.next_offset,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(status: &str) -> JobView {
        JobView {
            pid: 42,
            command: "npm run dev".into(),
            output_file: "/tmp/job-42.log".into(),
            status: status.into(),
            exit_code: (status == "exited").then_some(0),
            signal: None,
            runtime_ms: 12_300,
        }
    }

    #[test]
    fn job_line_says_what_the_model_needs() {
        assert_eq!(
            view("exited").line(),
            "pid 42 · exited with code 0 · 12.3s · npm run dev\n  output: /tmp/job-42.log"
        );
    }

    #[test]
    fn long_output_keeps_its_end_within_the_budget() {
        let text: String = (1..=100).map(|number| format!("line {number}\n")).collect();
        let result = output_result(
            &JobText {
                text,
                next_offset: 900,
                job: view("running"),
            },
            800,
            45,
        );
        let text = &result.content[0].as_text().expect("text").text;
        assert!(text.contains("(95 earlier lines omitted"));
        assert!(text.contains("line 96\nline 97\nline 98\nline 99\nline 100\n"));
        assert!(text.ends_with("pass since=900 to read only what comes next]"));
    }
}
