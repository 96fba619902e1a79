//! Interactive mode through the tools: the bash tool starts a program in a
//! terminal and returns when it waits for input; `bash_jobs` types into it.

use std::sync::Arc;

use bashtool_core::{BashTool, InputFields, JobsTool, ToolConfig};
use bashtool_env_local::LocalExec;
use bashtool_tests::{DEATH_LIMIT, echo_pid, killed_survivors, temp_dir, test_config};
use serde_json::json;

fn tools(dir: &std::path::Path) -> (BashTool, JobsTool, LocalExec) {
    let exec = LocalExec::new(test_config(dir));
    let config = ToolConfig {
        fields: InputFields {
            interactive: true,
            ..InputFields::default()
        },
        jobs_tool: true,
        ..ToolConfig::default()
    };
    (
        BashTool::new(config.clone(), Arc::new(exec.clone())),
        JobsTool::new(config, Arc::new(exec.clone())),
        exec,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_waits_for_input_and_the_answer_goes_through_write() {
    let dir = temp_dir();
    let (bash, jobs, exec) = tools(dir.path());
    let started = bash
        .call(json!({"command": "read -p 'Continue? ' answer; echo \"got $answer\"", "mode": "interactive"}))
        .await;
    assert!(!started.is_error, "{}", started.text());
    assert_eq!(started.details.state.as_deref(), Some("awaiting_input"));
    let id = started.details.job.clone().expect("job id");
    let text = started.text();
    assert!(text.starts_with("stdout:\nContinue? \n"), "{text}");
    assert!(
        text.ends_with(&format!(
            "[job {id} is waiting for input: answer with bash_jobs {{\"action\": \"write\", \"job\": \"{id}\", \"text\": \"...\", \"keys\": [\"Enter\"]}}; stop it with action \"stop\"]"
        )),
        "{text}"
    );
    let answered = jobs
        .call(&json!({"action": "write", "job": id, "text": "yes", "keys": ["Enter"]}))
        .await;
    assert!(!answered.is_error, "{}", answered.text());
    assert!(answered.text().contains("got yes"), "{}", answered.text());
    assert_eq!(answered.details.state.as_deref(), Some("exited"));
    assert_eq!(answered.details.exit_code, Some(0));
    exec.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_exits_gives_an_ordinary_result() {
    let dir = temp_dir();
    let (bash, _jobs, _exec) = tools(dir.path());
    let result = bash
        .call(json!({"command": "tty >/dev/null && echo in a terminal; exit 3", "mode": "interactive"}))
        .await;
    assert!(result.is_error);
    assert_eq!(result.details.job, None);
    assert_eq!(result.details.exit_code, Some(3));
    assert_eq!(result.text(), "stdout:\nin a terminal\nexit code 3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_validated_and_stop_ends_the_tree() {
    let dir = temp_dir();
    let (bash, jobs, _exec) = tools(dir.path());
    let started = bash
        .call(json!({"command": format!("{}; cat", echo_pid("$$")), "mode": "interactive"}))
        .await;
    let id = started.details.job.clone().expect("job id");
    let pid = started.details.pid;
    let bad = jobs
        .call(&json!({"action": "write", "job": id, "keys": ["Hyper-Q"]}))
        .await;
    assert!(bad.is_error);
    assert_eq!(bad.details.field.as_deref(), Some("keys"));
    assert!(bad.text().contains("Hyper-Q"), "{}", bad.text());
    let listed = jobs.call(&json!({"action": "list"})).await;
    assert!(
        listed
            .text()
            .contains(&format!("job {id} · waiting for input")),
        "{}",
        listed.text()
    );
    let stopped = jobs.call(&json!({"action": "stop", "job": id})).await;
    assert!(!stopped.is_error, "{}", stopped.text());
    let pids = bashtool_tests::pids_in(&started.text());
    assert_eq!(pids.len(), 1, "{}", started.text());
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
    let _ = pid;
}
