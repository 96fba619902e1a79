//! Asking a person through the `Approval` port: which calls ask, what they
//! are asked, what runs (and where) after each answer, what a session's
//! standing answer covers, and what the model is offered.

use std::sync::{Arc, Mutex};

use bashtool_core::{
    Approval, ApprovalAnswer, ApprovalKind, ApprovalRequest, BashTool, CallContext, Refusal, Rule,
    ToolConfig, ToolResult,
};
use bashtool_env_mock::{Reply, ScriptedExec};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// An approval that answers from a list and records every question.
#[derive(Default)]
struct Scripted {
    answers: Mutex<Vec<ApprovalAnswer>>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Scripted {
    fn answering(answers: &[ApprovalAnswer]) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.iter().rev().copied().collect()),
            asked: Mutex::default(),
        })
    }

    fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().expect("lock").clone()
    }
}

#[async_trait::async_trait]
impl Approval for Scripted {
    async fn approve(
        &self,
        request: &ApprovalRequest,
        _cancel: CancellationToken,
    ) -> ApprovalAnswer {
        self.asked.lock().expect("lock").push(request.clone());
        self.answers
            .lock()
            .expect("lock")
            .pop()
            .expect("a question nobody scripted an answer for")
    }

    fn approver(&self) -> String {
        "the test".to_owned()
    }
}

struct Setup {
    tool: BashTool,
    sandboxed: ScriptedExec,
    unsandboxed: ScriptedExec,
}

fn setup(approval: &Arc<Scripted>) -> Setup {
    let sandboxed = ScriptedExec::replying(|_| Reply::new().stdout("in\n"));
    let unsandboxed = ScriptedExec::replying(|_| Reply::new().stdout("out\n"));
    let config = ToolConfig {
        working_directory: Some("/work".into()),
        ..ToolConfig::default()
    };
    let tool = BashTool::new(config, Arc::new(sandboxed.clone()))
        .with_unsandboxed(Arc::new(unsandboxed.clone()))
        .with_approval(Arc::clone(approval) as Arc<dyn Approval>);
    Setup {
        tool,
        sandboxed,
        unsandboxed,
    }
}

async fn call(tool: &BashTool, input: Value) -> ToolResult {
    tool.call(input).await
}

#[tokio::test(start_paused = true)]
async fn outside_sandbox_asks_with_the_command_cwd_and_justification_and_runs_unsandboxed_once() {
    let approval = Scripted::answering(&[
        ApprovalAnswer::AllowOnce,
        ApprovalAnswer::Deny(Refusal::Denied),
    ]);
    let setup = setup(&approval);
    let input = json!({
        "command": "cargo install ripgrep",
        "outside_sandbox": true,
        "justification": "installs into ~/.cargo/bin",
    });
    let result = call(&setup.tool, input.clone()).await;
    assert_eq!(
        approval.asked(),
        vec![ApprovalRequest {
            command: "cargo install ripgrep".to_owned(),
            cwd: Some("/work".into()),
            reason: "installs into ~/.cargo/bin".to_owned(),
            kind: ApprovalKind::Sandbox,
        }]
    );
    assert!(!result.is_error);
    assert_eq!(
        result.text(),
        "stdout:\nout\nexit code 0\n[ran outside the sandbox, in a fresh shell: approved once by the test]"
    );
    assert_eq!(result.details.approvals.len(), 1);
    assert_eq!(result.details.approvals[0].kind, "sandbox");
    assert_eq!(result.details.approvals[0].answer, "allow_once");
    assert_eq!(result.details.approvals[0].by, "the test");
    assert_eq!(setup.unsandboxed.calls().len(), 1);
    assert!(setup.sandboxed.calls().is_empty());
    // Once means once: the same call asks again, and this time is denied.
    let again = call(&setup.tool, input).await;
    assert_eq!(approval.asked().len(), 2);
    assert!(again.is_error);
    assert_eq!(again.details.error_kind.as_deref(), Some("not_approved"));
    assert_eq!(
        again.text(),
        "Not run: the user refused to run this command outside the sandbox, so nothing ran. Do \
         not retry the same command or a way around it; change the approach, or ask the user \
         what they want."
    );
    assert_eq!(setup.unsandboxed.calls().len(), 1);
    assert!(setup.sandboxed.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn allow_for_session_covers_the_same_command_in_the_same_directory_only() {
    let approval = Scripted::answering(&[
        ApprovalAnswer::AllowForSession,
        ApprovalAnswer::Deny(Refusal::NoAnswer),
        ApprovalAnswer::Deny(Refusal::Cancelled),
    ]);
    let setup = setup(&approval);
    let input = json!({"command": "docker ps", "outside_sandbox": true});
    assert!(!call(&setup.tool, input.clone()).await.is_error);
    let second = call(&setup.tool, input).await;
    assert!(!second.is_error);
    assert_eq!(second.details.approvals[0].answer, "session_grant");
    assert_eq!(approval.asked().len(), 1);
    assert_eq!(setup.unsandboxed.calls().len(), 2);
    // Another command, or the same one elsewhere, is another question.
    let other = call(
        &setup.tool,
        json!({"command": "docker ps -a", "outside_sandbox": true}),
    )
    .await;
    assert_eq!(
        other.text(),
        "Not run: the user did not answer in time to run this command outside the sandbox, so \
         nothing ran. Do not retry the same command or a way around it; change the approach, or \
         ask the user what they want."
    );
    let elsewhere = call(
        &setup.tool,
        json!({"command": "docker ps", "outside_sandbox": true, "working_directory": "sub"}),
    )
    .await;
    assert!(
        elsewhere
            .text()
            .starts_with("Not run: the user cancelled the question")
    );
    assert_eq!(approval.asked().len(), 3);
    assert_eq!(approval.asked()[2].cwd, Some("/work/sub".into()));
    assert_eq!(setup.unsandboxed.calls().len(), 2);
    assert!(setup.sandboxed.calls().is_empty());
    // A fresh tool (another MCP session) has no standing answers.
    let fresh = Scripted::answering(&[ApprovalAnswer::Deny(Refusal::Denied)]);
    let other_session = self::setup(&fresh);
    let result = call(
        &other_session.tool,
        json!({"command": "docker ps", "outside_sandbox": true}),
    )
    .await;
    assert!(result.is_error);
    assert!(other_session.unsandboxed.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_blocked_command_runs_in_the_sandbox_after_approval_and_the_rule_is_remembered() {
    let approval = Scripted::answering(&[ApprovalAnswer::AllowForSession]);
    let setup = setup(&approval);
    let result = call(
        &setup.tool,
        json!({"command": "git push --force origin main", "justification": "the person rewrote history"}),
    )
    .await;
    let asked = approval.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].kind, ApprovalKind::Policy(Rule::GitPushForce));
    assert_eq!(
        asked[0].reason,
        format!(
            "the safety policy blocks it: {}. The model says: the person rewrote history",
            bashtool_core::GIT_PUSH_FORCE_MESSAGE
        )
    );
    assert!(!result.is_error);
    assert!(result.text().ends_with(
        "[ran past the safety policy rule git_push_force: approved for this session by the test]"
    ));
    assert_eq!(result.details.approvals[0].rule, Some(Rule::GitPushForce));
    // Past the policy, but still in the sandbox.
    assert_eq!(setup.sandboxed.calls().len(), 1);
    assert!(setup.unsandboxed.calls().is_empty());
    // The same rule, another command: not asked again.
    let next = call(&setup.tool, json!({"command": "git push -f origin other"})).await;
    assert!(!next.is_error);
    assert_eq!(approval.asked().len(), 1);
    assert_eq!(setup.sandboxed.calls().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn without_an_approval_nothing_is_asked_the_fields_are_unknown_and_the_hint_is_given() {
    let sandboxed = ScriptedExec::replying(|_| Reply::new());
    let unsandboxed = ScriptedExec::replying(|_| Reply::new());
    let tool = BashTool::new(ToolConfig::default(), Arc::new(sandboxed.clone()))
        .with_unsandboxed(Arc::new(unsandboxed.clone()))
        .with_no_approval_hint("nobody can be asked here");
    let spec = tool.spec();
    assert!(
        spec.input_schema["properties"]
            .get("outside_sandbox")
            .is_none()
    );
    assert!(
        spec.input_schema["properties"]
            .get("justification")
            .is_none()
    );
    assert!(!spec.description.contains("outside_sandbox"));
    let asking = tool.spec_for(true);
    assert_eq!(
        asking.input_schema["properties"]["outside_sandbox"]["type"],
        "boolean"
    );
    assert_eq!(
        asking.input_schema["properties"]["justification"]["type"],
        "string"
    );
    assert!(asking.description.contains("outside_sandbox: true"));
    let result = tool
        .call(json!({"command": "ls", "outside_sandbox": true}))
        .await;
    assert_eq!(result.details.field.as_deref(), Some("outside_sandbox"));
    assert_eq!(
        result.text(),
        "invalid input: unknown field 'outside_sandbox'; the allowed fields are: command, \
         commands, mode, timeout, working_directory, environment (nobody can be asked here)"
    );
    let blocked = tool.call(json!({"command": "git push --force"})).await;
    assert_eq!(
        blocked.text(),
        format!(
            "{} (nobody can be asked here)",
            bashtool_core::GIT_PUSH_FORCE_MESSAGE
        )
    );
    assert_eq!(blocked.details.error_kind.as_deref(), Some("blocked"));
    assert!(sandboxed.calls().is_empty());
    assert!(unsandboxed.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn outside_sandbox_is_offered_only_with_an_environment_without_the_sandbox() {
    let approval = Scripted::answering(&[]);
    let exec = ScriptedExec::replying(|_| Reply::new());
    let tool = BashTool::new(ToolConfig::default(), Arc::new(exec.clone()))
        .with_approval(Arc::clone(&approval) as Arc<dyn Approval>);
    let spec = tool.spec();
    assert!(
        spec.input_schema["properties"]
            .get("outside_sandbox")
            .is_none()
    );
    assert_eq!(
        spec.input_schema["properties"]["justification"]["type"],
        "string"
    );
    let result = tool
        .call(json!({"command": "ls", "outside_sandbox": true}))
        .await;
    assert_eq!(result.details.field.as_deref(), Some("outside_sandbox"));
    assert!(approval.asked().is_empty());
    assert!(exec.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn outside_sandbox_refuses_jobs_and_bad_values_before_asking() {
    let approval = Scripted::answering(&[]);
    let setup = setup(&approval);
    for (input, message) in [
        (
            json!({"command": "srv", "outside_sandbox": true, "mode": "background"}),
            "invalid input: 'outside_sandbox' runs one call in the foreground (mode default or \
             slow); it cannot be used with mode 'background'",
        ),
        (
            json!({"command": "ls", "outside_sandbox": "yes"}),
            "invalid input: 'outside_sandbox' must be true or false, got a string",
        ),
        (
            json!({"command": "ls", "outside_sandbox": true, "justification": "  "}),
            "invalid input: 'justification' must be one sentence for the user, not blank",
        ),
    ] {
        let result = call(&setup.tool, input).await;
        assert_eq!(result.text(), message);
    }
    assert!(approval.asked().is_empty());
    assert!(setup.sandboxed.calls().is_empty());
    assert!(setup.unsandboxed.calls().is_empty());
}

/// An approval that waits until the call is cancelled, as a person who
/// never answers.
struct Silent;

#[async_trait::async_trait]
impl Approval for Silent {
    async fn approve(
        &self,
        _request: &ApprovalRequest,
        cancel: CancellationToken,
    ) -> ApprovalAnswer {
        cancel.cancelled().await;
        ApprovalAnswer::Deny(Refusal::NotAsked)
    }
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_call_during_the_question_runs_nothing() {
    let sandboxed = ScriptedExec::replying(|_| Reply::new());
    let unsandboxed = ScriptedExec::replying(|_| Reply::new());
    let tool = BashTool::new(ToolConfig::default(), Arc::new(sandboxed.clone()))
        .with_unsandboxed(Arc::new(unsandboxed.clone()))
        .with_approval(Arc::new(Silent));
    let cancel = CancellationToken::new();
    let context = CallContext {
        cancel: cancel.clone(),
        on_output: None,
    };
    let input = json!({"command": "make install", "outside_sandbox": true});
    let call = tool.call_with(&input, context);
    let (result, ()) = tokio::join!(call, async { cancel.cancel() });
    assert!(result.is_error);
    assert!(result.details.cancelled);
    assert_eq!(result.details.approvals[0].answer, "not_asked");
    assert!(sandboxed.calls().is_empty());
    assert!(unsandboxed.calls().is_empty());
}
