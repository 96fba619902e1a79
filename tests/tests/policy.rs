//! The safety policy through the public `BashTool` API: a blocked command
//! (blind `git add`, `rm -rf /`, `git push --force`, and the same hidden in
//! `bash -c`, unparsable or nested too deep) never reaches the environment;
//! an allowed one does.

use std::sync::Arc;

use bashtool_core::{BashTool, CommandResult, MockCommandExec, OutputBuffer, Rule, ToolConfig};
use bashtool_core::{GIT_ADD_MESSAGE, GIT_PUSH_FORCE_MESSAGE, RM_CRITICAL_MESSAGE};
use serde_json::json;

/// A tool whose environment must never be asked to run anything.
fn tool_that_must_not_run() -> BashTool {
    let mut exec = MockCommandExec::new();
    exec.expect_spawn().times(0);
    BashTool::new(ToolConfig::default(), Arc::new(exec))
}

async fn assert_blocked(command: &str, rule: Rule, message: &str) {
    let result = tool_that_must_not_run()
        .call(json!({ "command": command }))
        .await;
    assert!(result.is_error);
    assert_eq!(result.text(), message);
    assert_eq!(result.details.rule, Some(rule));
}

#[tokio::test]
async fn test_blocked_git_add() {
    assert_blocked("git add -A", Rule::GitAdd, GIT_ADD_MESSAGE).await;
}

#[tokio::test]
async fn test_blocked_rm_rf_root() {
    assert_blocked("rm -rf /", Rule::RmCritical, RM_CRITICAL_MESSAGE).await;
}

#[tokio::test]
async fn test_blocked_git_push_force() {
    assert_blocked(
        "git push --force",
        Rule::GitPushForce,
        GIT_PUSH_FORCE_MESSAGE,
    )
    .await;
}

#[tokio::test]
async fn test_allowed_command_runs() {
    let mut exec = MockCommandExec::new();
    exec.expect_environment()
        .returning(bashtool_core::EnvironmentInfo::default);
    exec.expect_spawn()
        .withf(|command, _| command == "git add src/main.rs && git push --force-with-lease")
        .times(1)
        .returning(|_, _| Ok(CommandResult::exited(0, OutputBuffer::default())));
    let tool = BashTool::new(ToolConfig::default(), Arc::new(exec));
    let result = tool
        .call(json!({ "command": "git add src/main.rs && git push --force-with-lease" }))
        .await;
    assert!(!result.is_error);
    assert_eq!(result.details.rule, None);
}

#[tokio::test]
async fn blocked_command_hidden_in_bash_c_never_runs() {
    assert_blocked(
        "cd /tmp && sudo bash -c 'rm -rf ~/'",
        Rule::RmCritical,
        RM_CRITICAL_MESSAGE,
    )
    .await;
}

#[tokio::test]
async fn unparsable_command_never_runs() {
    assert_blocked(
        "echo 'unterminated",
        Rule::ParseError,
        "could not parse the command: unterminated single quote at 1,6 (detected near line 1 col 19); check the quoting",
    )
    .await;
}

#[tokio::test]
async fn deeply_nested_command_is_refused_without_crashing() {
    let command = format!("{}true{}", "{ ".repeat(10_000), "; }".repeat(10_000));
    assert_blocked(
        &command,
        Rule::ParseError,
        "could not parse the command: it is nested 10000 levels deep, more than the 500 this check allows; check the quoting",
    )
    .await;
}
