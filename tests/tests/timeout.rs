//! Timeout and cancel beyond the contract suite (which proves that timeout,
//! cancel and drop stop the whole tree in every environment): processes
//! that ignore SIGTERM, partial output kept, and what the model is told.

use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{BashTool, CallContext, SpawnOptions, ToolConfig};
use bashtool_tests::{
    DEATH_LIMIT, echo_pid, killed_survivors, local_exec, pids_in, run_with, temp_dir, text,
};

#[tokio::test]
async fn timeout_keeps_the_partial_output() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run_with(
        &exec,
        "echo partial; sleep 300",
        SpawnOptions::default().timeout(Duration::from_secs(1)),
    )
    .await
    .expect("runs");
    assert!(result.timed_out);
    assert!(!result.cancelled);
    assert_eq!(text(&result), "partial");
}

#[tokio::test]
async fn timeout_kills_what_ignores_sigterm_after_the_grace() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let script = format!(
        "trap '' TERM; sh -c 'trap \"\" TERM; {}; while :; do sleep 1; done' & sleep 300",
        echo_pid("$$")
    );
    let result = run_with(
        &exec,
        &script,
        SpawnOptions::default().timeout(Duration::from_secs(1)),
    )
    .await
    .expect("runs");
    assert!(result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 1);
    // Decided from /proc by the test: the SIGKILL after the grace landed.
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn the_model_sees_partial_output_and_the_timeout_line() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let tool = BashTool::new(ToolConfig::default(), Arc::new(exec));
    let result = tool
        .call_with(
            &serde_json::json!({"command": "echo step one; sleep 300", "timeout": 1}),
            CallContext::default(),
        )
        .await;
    assert!(result.is_error);
    let text = result.text();
    assert!(
        text.starts_with("stdout:\nstep one\n[command timed out after 1s; its process tree was stopped and the output so far is above."),
        "{text}"
    );
    assert!(text.contains("mode \"slow\""), "{text}");
}
