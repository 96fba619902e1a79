//! One tool call as a state machine (seed 001): `Processing { output }` while
//! the command runs, then `Done { output, result }`. `Done` is terminal: a
//! late completion after an abort is ignored, and the result never changes.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::OutputConfig;
use crate::output::{OutputBuffer, OutputChunk, OutputLine, format_output};
use crate::result::ToolResult;
use crate::tool::{BashTool, CallContext};

/// The state of a call. The output is the bounded live buffer a UI observes.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum InvocationState {
    /// The command runs.
    Processing {
        /// The output so far.
        output: OutputBuffer,
    },
    /// The call ended (terminal: never changes again).
    Done {
        /// The whole retained output.
        output: OutputBuffer,
        /// The result the model gets.
        result: ToolResult,
    },
}

/// Messages that move the state machine.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum InvocationMsg {
    /// The call finished with this result.
    Finish(ToolResult),
    /// The user aborted the call.
    Abort,
}

struct Shared {
    state: Mutex<InvocationState>,
    output_config: OutputConfig,
    /// The command as the input named it, for the abort result's details.
    command: String,
    done: watch::Sender<bool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, InvocationState> {
        // A panic while holding the lock cannot leave the state half-written
        // (every transition is one assignment), so a poisoned lock is usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running or finished call. Dropping it while the command runs aborts it.
pub struct Invocation {
    shared: Arc<Shared>,
    cancel: CancellationToken,
    done: watch::Receiver<bool>,
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Invocation")
            .field("done", &self.is_done())
            .finish_non_exhaustive()
    }
}

impl Invocation {
    /// Starts a call of `tool` in a task and returns its state machine at
    /// once. Needs a tokio runtime.
    pub fn start(tool: BashTool, input: Value) -> Self {
        let output_config = tool.config().output.clone();
        let (done_sender, done) = watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(InvocationState::Processing {
                output: OutputBuffer::new(&output_config),
            }),
            output_config,
            command: crate::input::raw_command(&input),
            done: done_sender,
        });
        let cancel = CancellationToken::new();
        let sink_shared = Arc::clone(&shared);
        let context = CallContext {
            cancel: cancel.clone(),
            on_output: Some(Arc::new(move |chunk: &OutputChunk| {
                if let InvocationState::Processing { output } = &mut *sink_shared.lock() {
                    output.push(chunk.stream, &chunk.text);
                }
            })),
        };
        let task_shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let result = tool.call_with(&input, context).await;
            update(&task_shared, InvocationMsg::Finish(result));
        });
        Self {
            shared,
            cancel,
            done,
        }
    }

    /// Applies a message. Exposed for embedders that drive calls themselves.
    pub fn update(&self, msg: InvocationMsg) {
        if matches!(msg, InvocationMsg::Abort) {
            self.cancel.cancel();
        }
        update(&self.shared, msg);
    }

    /// Stops the command (its whole process tree) and ends the call at once
    /// with an abort result that includes the output so far. After the call
    /// is done, it changes nothing.
    pub fn abort(&self) {
        self.update(InvocationMsg::Abort);
    }

    /// True once the call ended.
    pub fn is_done(&self) -> bool {
        matches!(&*self.shared.lock(), InvocationState::Done { .. })
    }

    /// Always false: a question to the person (see [`crate::Approval`]) is
    /// put while the invocation is `Processing`, by the embedder's own
    /// `Approval`, which knows when it waits.
    pub fn is_pending_user_action(&self) -> bool {
        false
    }

    /// The retained lines so far and how many were dropped between head and
    /// tail: what a UI shows while the command runs.
    pub fn output_lines(&self) -> (Vec<OutputLine>, u64) {
        let state = self.shared.lock();
        let (InvocationState::Processing { output } | InvocationState::Done { output, .. }) =
            &*state;
        let (lines, omitted) = output.retained();
        (lines.into_iter().cloned().collect(), omitted)
    }

    /// The result, once done.
    pub fn tool_result(&self) -> Option<ToolResult> {
        match &*self.shared.lock() {
            InvocationState::Done { result, .. } => Some(result.clone()),
            InvocationState::Processing { .. } => None,
        }
    }

    /// Waits for the result. Calling it again returns the same result.
    pub async fn result(&self) -> ToolResult {
        let mut done = self.done.clone();
        // The sender lives in `shared`, which we hold, so this cannot fail.
        let _ = done.wait_for(|finished| *finished).await;
        self.tool_result().unwrap_or_else(|| {
            aborted_result(
                &OutputBuffer::default(),
                &self.shared.output_config,
                &self.shared.command,
            )
        })
    }
}

impl Drop for Invocation {
    fn drop(&mut self) {
        if !self.is_done() {
            self.cancel.cancel();
        }
    }
}

fn update(shared: &Shared, msg: InvocationMsg) {
    let mut state = shared.lock();
    let InvocationState::Processing { output } = &mut *state else {
        return;
    };
    let mut output = std::mem::take(output);
    output.finish();
    let result = match msg {
        InvocationMsg::Finish(result) => result,
        InvocationMsg::Abort => aborted_result(&output, &shared.output_config, &shared.command),
    };
    *state = InvocationState::Done { output, result };
    drop(state);
    shared.done.send_replace(true);
}

/// The result of an aborted call: the output so far and the abort notice.
fn aborted_result(output: &OutputBuffer, config: &OutputConfig, command: &str) -> ToolResult {
    let formatted = format_output(output, config);
    let mut text = formatted.text;
    text.push_str("[command aborted by the user; its process tree was stopped]");
    let mut result = ToolResult::refused(command, "aborted", text);
    result.details.cancelled = true;
    result.details.total_lines = output.total_lines();
    result.details.total_bytes = output.total_bytes();
    result.details.truncated = formatted.truncated;
    result
}
