//! Batches (`commands`) on a persistent session with real bash: every command
//! runs in the same shell, in order, each with its own timeout; a cancel
//! stops the running one and skips the rest.

use std::path::Path;

use bashtool_core::{BashTool, ToolResult};
use bashtool_tests::{
    RESTARTED, cancel_when_output_contains, new_session, session_tool, workspace,
};
use serde_json::{Value, json};

fn tool_in(root: &Path) -> BashTool {
    session_tool(&new_session(root))
}

async fn call(tool: &BashTool, input: Value) -> ToolResult {
    tool.call(input).await
}

fn exit_codes(result: &ToolResult) -> Vec<Option<i32>> {
    result
        .details
        .batch
        .as_ref()
        .expect("batch details")
        .iter()
        .map(|item| item.exit_code)
        .collect()
}

#[tokio::test]
async fn batch_runs_every_command_in_the_same_session_despite_failures() {
    let (_dir, root) = workspace();
    let tool = tool_in(&root);
    let result = call(
        &tool,
        json!({"commands": ["cd sub", "export B=1; false", "pwd; echo $B"]}),
    )
    .await;
    let sub = root.join("sub");
    assert_eq!(
        result.text(),
        format!(
            "[1/3] $ cd sub\n(no output)\nexit code 0\n\n\
             [2/3] $ export B=1; false\n(no output)\nexit code 1\n\n\
             [3/3] $ pwd; echo $B\nstdout:\n{}\n1\nexit code 0\n\n\
             [cwd: {}]",
            sub.display(),
            sub.display()
        )
    );
    assert!(result.is_error);
    assert_eq!(exit_codes(&result), vec![Some(0), Some(1), Some(0)]);
    // The next call continues where the batch left the shell.
    let next = call(&tool, json!({"command": "echo $B"})).await;
    assert_eq!(
        next.text(),
        format!("stdout:\n1\nexit code 0\n[cwd: {}]", sub.display())
    );
}

#[tokio::test]
async fn exit_in_the_middle_of_a_batch_does_not_stop_the_rest() {
    let (_dir, root) = workspace();
    let tool = tool_in(&root);
    let result = call(
        &tool,
        json!({"commands": ["export K=v", "exit 2", "echo $K"]}),
    )
    .await;
    assert_eq!(exit_codes(&result), vec![Some(0), Some(2), Some(0)]);
    let text = result.text();
    assert!(
        text.contains("[3/3] $ echo $K\nstdout:\nv\nexit code 0\n\n"),
        "{text}"
    );
    assert!(text.ends_with(RESTARTED), "{text}");
}

#[tokio::test]
async fn each_command_has_its_own_timeout_and_the_next_one_keeps_the_earlier_state() {
    let (_dir, root) = workspace();
    let tool = tool_in(&root);
    let result = call(
        &tool,
        json!({"commands": ["x=1; cd sub", "sleep 30", "echo x=$x; pwd"], "timeout": 1}),
    )
    .await;
    let items = result.details.batch.as_ref().expect("batch");
    assert_eq!(
        items.iter().map(|item| item.timed_out).collect::<Vec<_>>(),
        vec![false, true, false]
    );
    let text = result.text();
    assert!(
        text.contains(&format!(
            "[3/3] $ echo x=$x; pwd\nstdout:\nx=1\n{}\nexit code 0\n\n",
            root.join("sub").display()
        )),
        "{text}"
    );
    assert!(
        text.contains("[2/3] $ sleep 30\n(no output)\n[the session's shell was stopped with the command; the next call starts a new shell with the state saved last]\n[command timed out after 1s;"),
        "{text}"
    );
    assert!(result.details.timed_out);
    assert!(result.is_error);
}

#[tokio::test]
async fn cancel_mid_batch_stops_the_running_command_and_skips_the_rest() {
    let (_dir, root) = workspace();
    let tool = tool_in(&root);
    let context = cancel_when_output_contains("started");
    let result = tool
        .call_with(
            &json!({"commands": ["export KEEP=1; echo one", "echo started; sleep 300", "echo three"]}),
            context,
        )
        .await;
    let text = result.text();
    assert!(
        text.starts_with("[1/3] $ export KEEP=1; echo one\nstdout:\none\nexit code 0\n\n[2/3] $ echo started; sleep 300\nstdout:\nstarted\n"),
        "{text}"
    );
    assert!(
        text.contains("[command cancelled; its process tree was stopped]\n\n[3/3] $ echo three\n(skipped — cancelled)"),
        "{text}"
    );
    assert!(result.details.cancelled);
    let items = result.details.batch.as_ref().expect("batch");
    assert!(items[2].skipped);
    let next = call(&tool, json!({"command": "echo $KEEP"})).await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\n1\nexit code 0\n[cwd: {}]\n{RESTARTED}",
            root.display()
        )
    );
}
