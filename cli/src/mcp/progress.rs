//! Live output as MCP progress notifications.
//!
//! The environment hands output chunks to a sink on its reader task, which
//! must not block; the sink only records the latest lines under a short lock.
//! A separate ticker sends at most one notification per interval, and only
//! when there is new output, or a heartbeat every [`HEARTBEAT`] so that a
//! client which resets its request timeout on progress keeps waiting for a
//! long, quiet build.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{OutputChunk, OutputSink, abbreviate_line};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Lines of output in one progress message.
const MESSAGE_LINES: usize = 3;
/// Longest line in a progress message.
const MESSAGE_LINE_CHARS: usize = 200;
/// A notification at least this often while a command runs.
const HEARTBEAT: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Latest {
    /// The last few complete lines, oldest first.
    lines: std::collections::VecDeque<String>,
    /// The line still being written.
    partial: String,
    /// Bumped on every chunk, so the ticker knows whether anything is new.
    generation: u64,
}

impl Latest {
    fn push(&mut self, text: &str) {
        self.generation += 1;
        let mut rest = text;
        while let Some(end) = rest.find('\n') {
            self.partial.push_str(&rest[..end]);
            let line = std::mem::take(&mut self.partial);
            if !line.trim().is_empty() {
                if self.lines.len() == MESSAGE_LINES {
                    self.lines.pop_front();
                }
                self.lines.push_back(line);
            }
            rest = &rest[end + 1..];
        }
        // Keep the partial line bounded: a program that never writes a
        // newline must not grow this buffer.
        if self.partial.len() < MESSAGE_LINE_CHARS * 4 {
            self.partial.push_str(rest);
        }
    }

    fn message(&self) -> String {
        let partial = (!self.partial.trim().is_empty()).then_some(&self.partial);
        let skip = usize::from(partial.is_some() && self.lines.len() == MESSAGE_LINES);
        self.lines
            .iter()
            .skip(skip)
            .chain(partial)
            .map(|line| abbreviate_line(line, MESSAGE_LINE_CHARS))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Sends progress for one call until dropped.
pub struct Progress {
    latest: Arc<Mutex<Latest>>,
    ticker: JoinHandle<()>,
}

impl Progress {
    pub fn start(token: ProgressToken, peer: Peer<RoleServer>, interval: Duration) -> Self {
        let latest = Arc::new(Mutex::new(Latest::default()));
        let shared = Arc::clone(&latest);
        let ticker = tokio::spawn(async move {
            let started = Instant::now();
            let mut sent_generation = 0;
            let mut last_sent = started;
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let (generation, message) = {
                    let latest = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    (latest.generation, latest.message())
                };
                let fresh = generation != sent_generation;
                if !fresh && last_sent.elapsed() < HEARTBEAT {
                    continue;
                }
                sent_generation = generation;
                last_sent = Instant::now();
                // Elapsed seconds: strictly increasing, as the spec asks of
                // `progress`; the output itself travels in the message.
                let elapsed = (started.elapsed().as_millis() / 100) as f64 / 10.0;
                let message = if message.is_empty() {
                    format!("running for {elapsed:.0}s")
                } else {
                    message
                };
                let mut param = ProgressNotificationParam::new(token.clone(), elapsed);
                param.message = Some(message);
                if let Err(error) = peer.notify_progress(param).await {
                    tracing::debug!(%error, "progress notification not sent");
                    return;
                }
            }
        });
        Self { latest, ticker }
    }

    /// The sink to give the tool call.
    pub fn sink(&self) -> OutputSink {
        let latest = Arc::clone(&self.latest);
        Arc::new(move |chunk: &OutputChunk| {
            latest
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&chunk.text);
        })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.ticker.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_shows_the_last_lines_and_the_partial_one() {
        let mut latest = Latest::default();
        latest.push("one\ntwo\nthr");
        latest.push("ee\nfour\nfi");
        assert_eq!(latest.message(), "three\nfour\nfi");
        latest.push("ve\n\n");
        assert_eq!(latest.message(), "three\nfour\nfive");
    }

    #[test]
    fn partial_line_stays_bounded() {
        let mut latest = Latest::default();
        for _ in 0..10_000 {
            latest.push("xxxxxxxxxx");
        }
        assert!(latest.partial.len() < MESSAGE_LINE_CHARS * 5);
        assert!(latest.message().chars().count() <= MESSAGE_LINE_CHARS);
    }
}
