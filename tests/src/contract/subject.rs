//! What the promises run against, and the helpers they share.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{CommandExec, CommandResult, Jobs, SpawnOptions};

/// What the suite runs against: an environment, its jobs, and a directory
/// it may use (the environment's working directory).
pub struct Subject {
    pub exec: Arc<dyn CommandExec>,
    pub jobs: Arc<dyn Jobs>,
    pub dir: PathBuf,
    /// Keeps the directory (and anything else) alive for the test.
    pub guard: Box<dyn std::any::Any + Send>,
}

/// A safety timeout for commands that end by themselves.
pub const SAFETY: Duration = Duration::from_secs(30);

pub(super) async fn run(subject: &Subject, command: &str, options: SpawnOptions) -> CommandResult {
    subject
        .exec
        .spawn(command, options)
        .await
        .expect("the command starts")
}

pub(super) fn background() -> SpawnOptions {
    SpawnOptions::default().mode(bashtool_core::ExecMode::Background)
}

/// Starts `command` as a background job; its id.
pub(super) async fn start_job(subject: &Subject, command: &str) -> String {
    run(subject, command, background())
        .await
        .background
        .expect("a background job")
        .id
}
