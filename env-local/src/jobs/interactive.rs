//! The interactive jobs of one environment, behind the jobs port: each is an
//! [`InteractiveJob`] (a command in its own terminal) that ran on past the
//! call that started it. A job lives in the process that holds its
//! terminal; it is stopped with the environment.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{JobError, JobInfo, JobInput, JobOutput, JobState, ReadFrom};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::interactive::{Detection, InteractiveJob, JobState as TerminalState, Key, Snapshot};

/// How often `wait` looks whether an interactive job has ended.
const WAIT_POLL: Duration = Duration::from_millis(50);

/// The note for a guess at "waiting for input".
pub(crate) const SILENCE_NOTE: &str =
    "waiting for input was guessed from silence (the kernel did not show the program's reads here)";

struct Entry {
    job: tokio::sync::Mutex<InteractiveJob>,
    command: String,
    pid: u32,
    log_file: Option<PathBuf>,
    started: std::time::Instant,
}

/// The interactive jobs of one environment.
#[derive(Default)]
pub struct InteractiveJobs {
    jobs: Mutex<BTreeMap<String, Arc<Entry>>>,
}

impl std::fmt::Debug for InteractiveJobs {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("InteractiveJobs")
            .field("count", &self.lock().len())
            .finish()
    }
}

/// The port's state of a terminal job's state.
pub(crate) fn port_state(state: &TerminalState) -> (JobState, Option<i32>, Option<String>) {
    match state {
        TerminalState::Running => (JobState::Running, None, None),
        TerminalState::AwaitingInput => (JobState::AwaitingInput, None, None),
        TerminalState::Exited(exit) => match (&exit.signal, exit.code) {
            (Some(signal), _) => (JobState::Signaled, None, Some(signal.clone())),
            (None, code) => (JobState::Exited, code, None),
        },
    }
}

/// The note for how waiting for input was decided, when it was a guess.
pub(crate) fn detection_note(detection: Option<Detection>) -> Option<String> {
    (detection == Some(Detection::SilenceTimer)).then(|| SILENCE_NOTE.to_owned())
}

impl InteractiveJobs {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Entry>>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn entry(&self, id: &str) -> Option<Arc<Entry>> {
        self.lock().get(id).cloned()
    }

    /// Keeps a job that runs on past its call; returns its id.
    pub(crate) fn add(
        &self,
        id: String,
        job: InteractiveJob,
        command: &str,
        log_file: Option<PathBuf>,
    ) {
        let pid = job.pid();
        self.lock().insert(
            id,
            Arc::new(Entry {
                job: tokio::sync::Mutex::new(job),
                command: command.to_owned(),
                pid,
                log_file,
                started: std::time::Instant::now(),
            }),
        );
    }

    fn info(id: &str, entry: &Entry, state: &TerminalState) -> JobInfo {
        let (state, exit_code, signal) = port_state(state);
        JobInfo {
            id: id.to_owned(),
            command: entry.command.clone(),
            state,
            exit_code,
            signal,
            runtime_ms: entry.started.elapsed().as_millis() as u64,
            pid: Some(entry.pid),
            output_file: entry
                .log_file
                .as_ref()
                .map(|path| path.display().to_string()),
            interactive: true,
        }
    }

    fn output(id: &str, entry: &Entry, snapshot: &Snapshot) -> JobOutput {
        JobOutput {
            job: Self::info(id, entry, &snapshot.state),
            text: snapshot.text.clone(),
            cursor: snapshot.cursor.saturating_sub(snapshot.text.len() as u64),
            next_cursor: snapshot.cursor,
            skipped: snapshot.dropped,
            more: false,
            screen: snapshot.screen.clone(),
            echo_off_input: snapshot.input_hidden,
            detection_note: detection_note(snapshot.detection),
        }
    }

    /// Every interactive job, oldest first.
    pub async fn list(&self) -> Vec<JobInfo> {
        let entries: Vec<(String, Arc<Entry>)> = self
            .lock()
            .iter()
            .map(|(id, entry)| (id.clone(), Arc::clone(entry)))
            .collect();
        let mut infos = Vec::with_capacity(entries.len());
        for (id, entry) in entries {
            let state = entry.job.lock().await.state().await;
            infos.push((entry.started, Self::info(&id, &entry, &state)));
        }
        infos.sort_by_key(|(started, _)| *started);
        infos.into_iter().map(|(_, info)| info).collect()
    }

    /// A window of a job's text.
    pub async fn read(
        &self,
        id: &str,
        from: ReadFrom,
        max_bytes: usize,
    ) -> Option<Result<JobOutput, JobError>> {
        let entry = self.entry(id)?;
        let job = entry.job.lock().await;
        let state = job.state().await;
        let (cursor, text, next, skipped) = match from {
            ReadFrom::Cursor(cursor) => {
                let read = job.read(cursor, max_bytes);
                (cursor + read.dropped, read.text, read.next, read.dropped)
            }
            ReadFrom::Tail { lines } => {
                let read = job.read(0, usize::MAX);
                let start = tail_start(&read.text, lines, max_bytes);
                let first = read.next - read.text.len() as u64;
                (
                    first + start as u64,
                    read.text[start..].to_owned(),
                    read.next,
                    first + start as u64,
                )
            }
        };
        let more = job.read(next, 1).next > next;
        Some(Ok(JobOutput {
            job: Self::info(id, &entry, &state),
            text,
            cursor,
            next_cursor: next,
            skipped,
            more,
            screen: None,
            echo_off_input: false,
            detection_note: None,
        }))
    }

    /// Types into a job and returns what it shows next.
    pub async fn write(
        &self,
        id: &str,
        input: &JobInput,
        yield_after: Duration,
    ) -> Option<Result<JobOutput, JobError>> {
        let entry = self.entry(id)?;
        let keys = match Key::parse_all(&input.keys) {
            Ok(keys) => keys,
            Err(error) => {
                return Some(Err(JobError::InvalidInput {
                    field: "keys".to_owned(),
                    message: error.to_string(),
                }));
            }
        };
        let mut job = entry.job.lock().await;
        if job.exit().is_some() {
            return Some(Err(JobError::Ended { id: id.to_owned() }));
        }
        let snapshot = match job
            .write(&input.text, &keys, Instant::now() + yield_after)
            .await
        {
            Ok(snapshot) => snapshot,
            Err(error) => {
                return Some(Err(JobError::InvalidInput {
                    field: "text".to_owned(),
                    message: error.to_string(),
                }));
            }
        };
        Some(Ok(Self::output(id, &entry, &snapshot)))
    }

    /// Waits for a job to end, `timeout`, or `cancel`.
    pub async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Option<JobInfo> {
        let entry = self.entry(id)?;
        let deadline = Instant::now() + timeout;
        loop {
            let ended = entry.job.lock().await.exit().is_some();
            if ended || Instant::now() >= deadline || cancel.is_cancelled() {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(WAIT_POLL) => {}
                () = cancel.cancelled() => {}
            }
        }
        let state = entry.job.lock().await.state().await;
        Some(Self::info(id, &entry, &state))
    }

    /// Stops a job's whole tree.
    pub async fn stop(&self, id: &str) -> Option<JobInfo> {
        let entry = self.entry(id)?;
        let snapshot = entry.job.lock().await.stop().await;
        Some(Self::info(id, &entry, &snapshot.state))
    }

    /// Stops every job.
    pub async fn stop_all(&self) {
        let entries: Vec<Arc<Entry>> = self.lock().values().cloned().collect();
        for entry in entries {
            entry.job.lock().await.stop().await;
        }
    }
}

/// Where the last `lines` lines of `text` start, within its last
/// `max_bytes` bytes (at a character boundary).
fn tail_start(text: &str, lines: usize, max_bytes: usize) -> usize {
    let mut floor = text.len().saturating_sub(max_bytes);
    while !text.is_char_boundary(floor) {
        floor += 1;
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    let start = body
        .match_indices('\n')
        .rev()
        .nth(lines.saturating_sub(1))
        .map_or(0, |(index, _)| index + 1);
    start.max(floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_starts_at_the_last_lines() {
        assert_eq!(tail_start("a\nb\nc\n", 2, 100), 2);
        assert_eq!(tail_start("a\nb\nc", 1, 100), 4);
        assert_eq!(tail_start("a\nb\nc\n", 10, 100), 0);
        assert_eq!(tail_start("aaaa\nb\n", 10, 3), 4);
    }
}
