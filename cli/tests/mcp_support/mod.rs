//! What the MCP tests (over stdio, over HTTP, with approvals, with
//! secrets masked) share: a client that hands progress notifications to
//! the test, sending a tool call and reading its answer, and the process
//! trees they start and prove dead (liveness read from `/proc` by the
//! test, never by the code under test).

#![allow(dead_code)] // each test binary uses its own part

use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest,
    ProgressNotificationParam, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestHandle, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

/// The longest any one step of a test may take.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A client that forwards progress notifications to the test.
#[derive(Clone)]
pub struct ProgressClient {
    pub progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

/// Waits for a progress notification whose message contains `needle`.
pub async fn progress_with(
    progress: &mut mpsc::UnboundedReceiver<ProgressNotificationParam>,
    needle: &str,
) -> ProgressNotificationParam {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let param = tokio::time::timeout_at(deadline, progress.recv())
            .await
            .unwrap_or_else(|_| panic!("no progress with {needle:?} in time"))
            .expect("client open");
        if param
            .message
            .as_deref()
            .is_some_and(|message| message.contains(needle))
        {
            return param;
        }
    }
}

/// Sends a `tools/call` of the tool `name` (`arguments`: a JSON object)
/// without waiting for its answer: the handle is awaited with [`answer`],
/// or cancelled.
pub async fn send_call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    arguments: Value,
) -> RequestHandle<RoleClient> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new(name.to_owned()).with_arguments(arguments),
    ));
    client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("request sent")
}

/// The result of a `tools/call` request.
pub async fn answer(handle: RequestHandle<RoleClient>) -> CallToolResult {
    match timeout(DEADLINE, handle.await_response())
        .await
        .expect("answer in time")
        .expect("answer")
    {
        ServerResult::CallToolResult(result) => result,
        other => panic!("not a tool result: {other:?}"),
    }
}

/// The text content of a result, one line per block.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|content| content.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits until every one of `pids` is gone; fails the test after
/// [`DEADLINE`], naming (and killing) the survivors.
pub async fn wait_until_dead(pids: &[u32]) {
    assert_eq!(
        bashtool_tests::killed_survivors(pids, DEADLINE).await,
        Vec::<u32>::new(),
        "still alive"
    );
}

/// A script that starts a grandchild, records both pids in `file`, says
/// `started` and then waits.
pub fn tree_script(file: &Path) -> String {
    format!(
        "sleep 300 & echo {grandchild} > {file}; echo {shell} >> {file}; echo started; wait",
        grandchild = bashtool_tests::qualified_pid("$!"),
        shell = bashtool_tests::qualified_pid("$$"),
        file = file.display()
    )
}
