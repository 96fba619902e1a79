//! How jobs look to the model: one line per job, and a window of output
//! framed by where it is and how to read on.

use std::fmt::Write as _;

use crate::jobs::port::{JobInfo, JobOutput, JobState};
use crate::output::{abbreviate_line, format_bytes};

/// `exited with code 0`, `terminated by SIGKILL`, `running`, ...
pub fn state_text(job: &JobInfo) -> String {
    match (job.state, job.exit_code, &job.signal) {
        (JobState::Exited, Some(code), _) => format!("exited with code {code}"),
        (JobState::Signaled, _, Some(signal)) => format!("terminated by {signal}"),
        (JobState::AwaitingInput, _, _) => "waiting for input".to_owned(),
        (state, _, _) => state.as_str().to_owned(),
    }
}

/// A short human runtime: `12.3s`, `4m05s`, `2h10m`.
pub fn human_runtime(milliseconds: u64) -> String {
    let seconds = milliseconds / 1000;
    match seconds {
        0..60 => format!("{}.{}s", seconds, (milliseconds % 1000) / 100),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, (seconds % 3600) / 60),
    }
}

/// `job j-1a2b · running · 12.3s · npm run dev`.
pub fn info_line(job: &JobInfo) -> String {
    let mut line = format!(
        "job {} · {} · {} · {}",
        job.id,
        state_text(job),
        human_runtime(job.runtime_ms),
        job.command
    );
    if job.interactive {
        line.push_str(" · interactive");
    }
    line
}

/// The answer to `list`.
pub fn list_text(jobs: &[JobInfo]) -> String {
    if jobs.is_empty() {
        return "no jobs".to_owned();
    }
    jobs.iter().map(info_line).collect::<Vec<_>>().join("\n")
}

/// The answer to `wait`.
pub fn wait_text(job: &JobInfo, waited_secs: u64) -> String {
    if job.state.is_running() {
        format!(
            "job {} is still running after waiting {waited_secs}s (it keeps running)\n{}",
            job.id,
            info_line(job)
        )
    } else {
        info_line(job)
    }
}

/// A window of output: where it is, the lines (each abbreviated to
/// `max_line_chars`), and how to read on.
pub fn output_text(output: &JobOutput, max_line_chars: usize) -> String {
    let mut text = format!("[{}]\n", info_line(&output.job));
    if output.skipped > 0 {
        let _ = writeln!(
            text,
            "... ({} of earlier output not shown; read with since={} to page from there) ...",
            format_bytes(output.skipped),
            output.cursor.saturating_sub(output.skipped)
        );
    }
    if let Some(screen) = &output.screen {
        text.push_str("[screen]\n");
        text.push_str(screen.trim_end_matches('\n'));
        text.push_str("\n[end of screen]\n");
    } else if output.text.is_empty() {
        text.push_str("(no new output)\n");
    } else {
        for line in output.text.lines() {
            text.push_str(&abbreviate_line(line, max_line_chars));
            text.push('\n');
        }
    }
    if output.echo_off_input {
        text.push_str(
            "[input was sent with echo off (a password prompt): it is not shown or logged]\n",
        );
    }
    if let Some(note) = &output.detection_note {
        let _ = writeln!(text, "[{note}]");
    }
    if output.more {
        let _ = write!(
            text,
            "[more output follows: read with since={} for the next part]",
            output.next_cursor
        );
    } else {
        let _ = write!(
            text,
            "[next_cursor {}: read with since={} for what comes after this]",
            output.next_cursor, output.next_cursor
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(state: JobState) -> JobInfo {
        JobInfo {
            id: "j-42".to_owned(),
            command: "npm run dev".to_owned(),
            state,
            exit_code: (state == JobState::Exited).then_some(0),
            signal: None,
            runtime_ms: 12_300,
            pid: Some(42),
            output_file: Some("/tmp/job.log".to_owned()),
            interactive: false,
        }
    }

    #[test]
    fn a_job_line_says_what_the_model_needs() {
        assert_eq!(
            info_line(&job(JobState::Exited)),
            "job j-42 · exited with code 0 · 12.3s · npm run dev"
        );
        assert_eq!(human_runtime(245_000), "4m05s");
        assert_eq!(human_runtime(7_800_000), "2h10m");
    }

    #[test]
    fn a_window_says_where_it_is_and_how_to_read_on() {
        let output = JobOutput {
            job: job(JobState::Running),
            text: "line 96\nline 97\n".to_owned(),
            cursor: 900,
            next_cursor: 916,
            skipped: 900,
            more: false,
            screen: None,
            echo_off_input: false,
            detection_note: None,
        };
        assert_eq!(
            output_text(&output, 800),
            "[job j-42 · running · 12.3s · npm run dev]\n\
             ... (900 B of earlier output not shown; read with since=0 to page from there) ...\n\
             line 96\nline 97\n\
             [next_cursor 916: read with since=916 for what comes after this]"
        );
    }
}
