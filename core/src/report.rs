//! Turns what the environment reported into the model's text and details.

use std::fmt::Write as _;

use crate::config::ToolConfig;
use crate::environment::EnvironmentInfo;
use crate::exec::{BackgroundJob, CommandResult, ShellState};
use crate::output::{FormattedOutput, format_bytes, format_output_with_budget};
use crate::result::{BatchItemDetails, Details};

/// The model text of one command's output and status, and whether it was
/// shortened.
pub(crate) struct Section {
    pub text: String,
    pub truncated: bool,
}

/// The status line: how the command ended.
pub(crate) fn status_line(
    result: &CommandResult,
    timeout_secs: Option<u64>,
    config: &ToolConfig,
) -> String {
    if result.timed_out {
        let after = timeout_secs.map_or_else(String::new, |seconds| format!(" after {seconds}s"));
        format!(
            "[command timed out{after}; its process tree was stopped and the output so far is above.{}]",
            slow_hint(config)
        )
    } else if result.cancelled {
        "[command cancelled; its process tree was stopped]".to_owned()
    } else if let Some(signal) = &result.signal {
        format!("terminated by signal {signal}")
    } else {
        match result.exit_code {
            Some(code) => format!("exit code {code}"),
            None => "exit code unknown".to_owned(),
        }
    }
}

fn slow_hint(config: &ToolConfig) -> String {
    let fields = &config.fields;
    match (fields.mode, fields.background) {
        (true, true) => format!(
            " Use mode \"slow\" (up to {} min) for builds and tests, or mode \"background\" for servers and watchers.",
            config.slow_timeout.as_secs() / 60
        ),
        (true, false) => format!(
            " Use mode \"slow\" (up to {} min) for builds and tests.",
            config.slow_timeout.as_secs() / 60
        ),
        _ if fields.timeout => format!(
            " Set a larger timeout (up to {}s) if the command needs it.",
            config.max_timeout_secs
        ),
        _ => String::new(),
    }
}

/// How the note of a [`CappedLog`] starts: the log line below recognizes
/// it among the notes.
const CAPPED_LOG_NOTE_START: &str = "the output was over the log file's size cap";

/// What a log file keeps when the output outgrew the log's size cap: its
/// first lines, a marker line, and its last lines. An environment turns it
/// into a note ([`CappedLog::note`]) among the result's notes; the result
/// then says where the lines are instead of claiming that the log holds
/// the full output.
///
/// Line numbers are those of the whole log as it was written (the ones the
/// shortened output refers to), counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CappedLog {
    /// The log's size cap in bytes.
    pub cap_bytes: u64,
    /// The last line of the first part (it may be cut at the cap).
    pub head_last_line: u64,
    /// The first line of the last part (it may start in the middle).
    pub tail_first_line: u64,
    /// The last line of the log.
    pub last_line: u64,
    /// Where the first line of the last part is in the file.
    pub tail_first_file_line: u64,
}

impl CappedLog {
    /// The note for the model: which lines the file keeps, and how to find
    /// a line of the last part in it.
    pub fn note(&self) -> String {
        let shift = self
            .tail_first_line
            .saturating_sub(self.tail_first_file_line);
        format!(
            "{CAPPED_LOG_NOTE_START} of {}, so it keeps lines 1-{} and {}-{} with a marker line between them: line N >= {} is line N-{shift} of the file",
            format_bytes(self.cap_bytes),
            self.head_last_line,
            self.tail_first_line,
            self.last_line,
            self.tail_first_line,
        )
    }
}

/// The line that tells the model where the full output is. The path is on
/// the environment's host, and the commands suggested run with this tool in
/// that same environment; `rg` only where the environment has it. A log cut
/// at its size cap is not the full output: the note above says what it keeps.
fn log_line(result: &CommandResult, environment: &EnvironmentInfo) -> Option<String> {
    let log_file = result.log_file.as_ref()?;
    let search = if environment.tools.iter().any(|tool| tool == "rg") {
        "rg -n PATTERN"
    } else {
        "grep -n PATTERN"
    };
    let capped = result
        .notes
        .iter()
        .any(|note| note.starts_with(CAPPED_LOG_NOTE_START));
    let what = if capped {
        format!(
            "the output had {} lines ({}), and the log {path} keeps its first and last parts",
            result.output.total_lines(),
            format_bytes(result.output.total_bytes()),
            path = log_file.display()
        )
    } else {
        format!(
            "the full output ({} lines, {}) is in {path}",
            result.output.total_lines(),
            format_bytes(result.output.total_bytes()),
            path = log_file.display()
        )
    };
    Some(format!(
        "[output shortened: {what}; read parts of it with sed -n 'FROM,TOp' {path} or search it with {search} {path}]",
        path = log_file.display()
    ))
}

/// Formats one command's output, notes, status and log reference.
pub(crate) fn command_section(
    result: &CommandResult,
    timeout_secs: Option<u64>,
    config: &ToolConfig,
    environment: &EnvironmentInfo,
    budget: usize,
) -> Section {
    let FormattedOutput {
        text: output,
        truncated,
    } = format_output_with_budget(&result.output, &config.output, budget);
    let mut text = if output.is_empty() {
        "(no output)\n".to_owned()
    } else {
        output
    };
    for note in &result.notes {
        let _ = writeln!(text, "[{note}]");
    }
    if let Some(error) = result.output.log_error() {
        let _ = writeln!(text, "[{error}; no log file]");
    }
    text.push_str(&status_line(result, timeout_secs, config));
    if truncated && let Some(line) = log_line(result, environment) {
        text.push('\n');
        text.push_str(&line);
    }
    Section { text, truncated }
}

/// The answer for a background job. With the jobs tool the model is
/// pointed to it (it works in every environment and never hits a reused
/// pid); without it, to shell commands that run in the job's environment.
pub(crate) fn background_text(job: &BackgroundJob, config: &ToolConfig) -> String {
    let mut text = format!("Started in the background as job {}.\n", job.id);
    // The pid the commands see: the model stops the job with a command.
    let pid = job.pid_in_sandbox.or(job.pid);
    if let Some(pid) = pid {
        let _ = writeln!(text, "<pid>{pid}</pid>");
    }
    if let Some(file) = &job.output_file {
        let _ = writeln!(text, "<output_file>{}</output_file>", file.display());
    }
    if config.jobs_tool {
        let _ = write!(
            text,
            "<reminder>Read its output with bash_jobs {{\"action\": \"read\", \"job\": \"{id}\"}}; wait for it with action \"wait\"; \
             stop it (and everything it started) with action \"stop\".</reminder>",
            id = job.id
        );
    } else if let (Some(pid), Some(file)) = (pid, &job.output_file) {
        let _ = write!(
            text,
            "<reminder>Read its output with: tail -n 50 {file}. When it ends, its exit status is appended to that file. \
             To stop it: kill -TERM -- -{pid}</reminder>",
            file = file.display()
        );
    }
    text.trim_end().to_owned()
}

/// What an interactive command that runs on shows: its new output (or its
/// rendered screen) and how to go on.
pub(crate) fn interactive_text(
    result: &CommandResult,
    status: &crate::exec::InteractiveStatus,
    config: &ToolConfig,
) -> String {
    let mut text = if let Some(screen) = &status.screen {
        format!(
            "[screen]\n{}\n[end of screen]\n",
            screen.trim_end_matches('\n')
        )
    } else {
        let formatted =
            format_output_with_budget(&result.output, &config.output, config.output.budget_chars());
        if formatted.text.is_empty() {
            "(no output yet)\n".to_owned()
        } else {
            formatted.text
        }
    };
    for note in &result.notes {
        let _ = writeln!(text, "[{note}]");
    }
    if let Some(note) = &status.detection_note {
        let _ = writeln!(text, "[{note}]");
    }
    let id = &status.job;
    let tool = if config.jobs_tool {
        "bash_jobs"
    } else {
        "the jobs tool"
    };
    let _ = write!(
        text,
        "{}",
        if status.state == crate::jobs::JobState::AwaitingInput {
            format!(
                "[job {id} is waiting for input: answer with {tool} {{\"action\": \"write\", \"job\": \"{id}\", \"text\": \"...\", \"keys\": [\"Enter\"]}}; stop it with action \"stop\"]"
            )
        } else {
            format!(
                "[job {id} is still running (not waiting for input yet): see what it does next with {tool} {{\"action\": \"read\", \"job\": \"{id}\"}} or wait for it with action \"wait\"; stop it with action \"stop\"]"
            )
        }
    );
    text
}

/// The prompt as telemetry: where the shell stands now.
pub(crate) fn telemetry_line(shell: &ShellState) -> String {
    let mut line = format!("[cwd: {}", shell.cwd.display());
    if let Some(branch) = &shell.git_branch {
        let _ = write!(line, " · git: {branch}");
    }
    line.push(']');
    if shell.restarted {
        line.push_str(
            "\n[the shell session had died and was restarted; the working directory and exported variables were restored]",
        );
    }
    line
}

/// The details of one command.
pub(crate) fn command_details(
    command: &str,
    result: &CommandResult,
    timeout_secs: Option<u64>,
    truncated: bool,
) -> Details {
    Details {
        command: command.to_owned(),
        exit_code: result.exit_code,
        signal: result.signal.clone(),
        // A background job that started is a success: its own exit status
        // comes later, in its output file.
        success: result.success() || result.background.is_some(),
        timed_out: result.timed_out,
        cancelled: result.cancelled,
        execution_time_ms: result.duration.as_millis() as u64,
        working_directory: result
            .working_directory
            .as_ref()
            .map(|directory| directory.display().to_string()),
        log_file: result
            .log_file
            .as_ref()
            .map(|file| file.display().to_string()),
        truncated,
        total_lines: result.output.total_lines(),
        total_bytes: result.output.total_bytes(),
        timeout_seconds: if result.timed_out { timeout_secs } else { None },
        pid: result.background.as_ref().and_then(|job| job.pid),
        pid_in_sandbox: result
            .background
            .as_ref()
            .and_then(|job| job.pid_in_sandbox),
        output_file: result
            .background
            .as_ref()
            .and_then(|job| job.output_file.as_ref())
            .map(|file| file.display().to_string()),
        job: result.background.as_ref().map(|job| job.id.clone()),
        shell: result.shell.clone(),
        notes: result.notes.clone(),
        ..Details::default()
    }
}

pub(crate) fn batch_item(details: &Details) -> BatchItemDetails {
    BatchItemDetails {
        command: details.command.clone(),
        exit_code: details.exit_code,
        signal: details.signal.clone(),
        success: details.success,
        timed_out: details.timed_out,
        cancelled: details.cancelled,
        skipped: false,
        execution_time_ms: details.execution_time_ms,
        log_file: details.log_file.clone(),
        truncated: details.truncated,
        total_lines: details.total_lines,
        total_bytes: details.total_bytes,
    }
}

/// Shares `budget` among sections fairly: each gets what it needs up to an
/// equal share, and what small ones leave over goes to the larger ones.
pub(crate) fn share_budget(needs: &[u64], budget: usize) -> Vec<usize> {
    let mut shares = vec![0; needs.len()];
    let mut order: Vec<usize> = (0..needs.len()).collect();
    order.sort_by_key(|&index| needs[index]);
    let mut remaining = budget;
    for (position, &index) in order.iter().enumerate() {
        let fair = remaining / (order.len() - position);
        let share = usize::try_from(needs[index])
            .unwrap_or(usize::MAX)
            .min(fair);
        shares[index] = share.max(1);
        remaining = remaining.saturating_sub(share);
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last lines of a section for a result with `notes` whose output
    /// (300 lines) was shortened, with the log at `/logs/00001-x.log`.
    fn section_end(notes: Vec<String>) -> Vec<String> {
        let config = ToolConfig::default();
        let mut output = crate::output::OutputBuffer::new(&config.output);
        for number in 1..=300 {
            output.push(crate::output::Stream::Stdout, &format!("line {number}\n"));
        }
        output.finish();
        let mut result = CommandResult::exited(1, output);
        result.log_file = Some("/logs/00001-x.log".into());
        result.notes = notes;
        let section = command_section(&result, None, &config, &EnvironmentInfo::default(), 200);
        assert!(section.truncated);
        let lines: Vec<String> = section.text.lines().map(str::to_owned).collect();
        lines[lines.len() - 3..].to_vec()
    }

    #[test]
    fn a_capped_log_is_not_called_the_full_output() {
        let capped = CappedLog {
            cap_bytes: 64 * 1024 * 1024,
            head_last_line: 120,
            tail_first_line: 250,
            last_line: 300,
            tail_first_file_line: 122,
        };
        assert_eq!(
            section_end(vec![capped.note()]),
            [
                "[the output was over the log file's size cap of 64.0 MiB, so it keeps lines 1-120 and 250-300 with a marker line between them: line N >= 250 is line N-128 of the file]",
                "exit code 1",
                "[output shortened: the output had 300 lines (2.5 KiB), and the log /logs/00001-x.log keeps its first and last parts; read parts of it with sed -n 'FROM,TOp' /logs/00001-x.log or search it with grep -n PATTERN /logs/00001-x.log]",
            ]
        );
        assert_eq!(
            section_end(Vec::new())[1..],
            [
                "exit code 1",
                "[output shortened: the full output (300 lines, 2.5 KiB) is in /logs/00001-x.log; read parts of it with sed -n 'FROM,TOp' /logs/00001-x.log or search it with grep -n PATTERN /logs/00001-x.log]",
            ]
        );
    }

    #[test]
    fn small_sections_leave_their_share_to_large_ones() {
        assert_eq!(share_budget(&[100, 10_000, 50], 8000), vec![100, 7850, 50]);
        assert_eq!(share_budget(&[9000, 9000], 8000), vec![4000, 4000]);
    }
}
