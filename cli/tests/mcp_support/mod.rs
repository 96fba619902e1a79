//! What the MCP tests over stdio (`mcp.rs`) and over HTTP (`mcp_http.rs`)
//! share: reading a tool call's answer, and the process trees they start
//! and prove dead (liveness read from `/proc` by the test, never by the
//! code under test).

#![allow(dead_code)] // each test binary uses its own part

use std::path::Path;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{CallToolResult, ServerResult};
use rmcp::service::RequestHandle;
use tokio::time::{Instant, timeout};

/// The longest any one step of a test may take.
pub const DEADLINE: Duration = Duration::from_secs(30);

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

/// True while the process exists and is not a zombie.
pub fn pid_alive(pid: i32) -> bool {
    u32::try_from(pid).is_ok_and(bashtool_tests::process_alive)
}

/// Waits until every one of `pids` is gone; fails the test after [`DEADLINE`].
pub async fn wait_until_dead(pids: &[i32]) {
    let deadline = Instant::now() + DEADLINE;
    while pids.iter().any(|pid| pid_alive(*pid)) {
        assert!(
            Instant::now() < deadline,
            "still alive: {:?}",
            pids.iter()
                .filter(|pid| pid_alive(**pid))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads the pids a command wrote to `file`, one a line, once there are `count`.
pub async fn read_pids(file: &Path, count: usize) -> Vec<i32> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            let pids: Vec<i32> = text
                .lines()
                .filter_map(|line| bashtool_tests::parse_pid(line).map(|pid| pid as i32))
                .collect();
            if pids.len() >= count {
                return pids;
            }
        }
        assert!(Instant::now() < deadline, "no pids in {}", file.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A script that starts a grandchild, records both pids in `file`, says
/// `started` and then waits.
pub fn tree_script(file: &Path) -> String {
    format!(
        "sleep 300 & echo $!@$(stat -Lc %i /proc/$!/ns/pid) > {file}; echo $$@$(stat -Lc %i /proc/$$/ns/pid) >> {file}; echo started; wait",
        file = file.display()
    )
}
