//! The bash tool through its public API against the scripted environment:
//! output, exit codes, signals, errors, shortening and the log pointer,
//! streaming, abort and cancel, input checks, approval, background jobs,
//! batches and telemetry.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{
    BashTool, CallContext, CommandResult, CreateToolContext, EnvironmentInfo, ExecError,
    Invocation, MockApproval, MockCommandExec, OutputBuffer, OutputChunk, ShellState, Stream, Tool,
    ToolConfig, ToolResult, create_tool, tool_specs,
};
use bashtool_env_mock::{Reply, ScriptedExec};
use serde_json::json;
use tokio::sync::{Notify, oneshot};

fn tool_with(exec: &ScriptedExec) -> BashTool {
    BashTool::new(ToolConfig::default(), Arc::new(exec.clone()))
}

async fn call(exec: &ScriptedExec, input: serde_json::Value) -> ToolResult {
    tool_with(exec).call(input).await
}

#[tokio::test(start_paused = true)]
async fn successful_command_returns_its_output_and_exit_code() {
    let exec = ScriptedExec::replying(|_| Reply::new().stdout("total 0\nfile.txt\n"));
    let result = call(&exec, json!({"command": "ls"})).await;
    assert_eq!(result.text(), "stdout:\ntotal 0\nfile.txt\nexit code 0");
    assert!(!result.is_error);
    assert!(result.details.success);
    assert_eq!(result.details.exit_code, Some(0));
    assert_eq!(result.details.total_lines, 2);
    assert_eq!(result.details.total_bytes, 17);
    assert_eq!(exec.calls().len(), 1);
    assert_eq!(exec.calls()[0].timeout, Some(Duration::from_secs(30)));
}

#[tokio::test(start_paused = true)]
async fn environment_error_becomes_an_error_result() {
    let exec = ScriptedExec::replying(|_| {
        Reply::new().spawn_error("could not start `bash`: too many processes")
    });
    let result = call(&exec, json!({"command": "ls"})).await;
    assert!(result.is_error);
    assert_eq!(result.text(), "could not start `bash`: too many processes");
    assert_eq!(result.details.error_kind.as_deref(), Some("spawn_failed"));
}

#[tokio::test(start_paused = true)]
async fn missing_working_directory_names_the_field() {
    let exec = ScriptedExec::replying(|_| Reply::new().missing_directory());
    let result = call(
        &exec,
        json!({"command": "ls", "working_directory": "/nope"}),
    )
    .await;
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        "invalid input: working directory `/nope` does not exist; pass an existing directory"
    );
    assert_eq!(result.details.field.as_deref(), Some("working_directory"));
}

#[tokio::test(start_paused = true)]
async fn non_zero_exit_is_an_error_result_with_the_output() {
    let exec = ScriptedExec::replying(|_| {
        Reply::new()
            .stderr("ls: cannot access '/nope': No such file or directory\n")
            .exit(2)
    });
    let result = call(&exec, json!({"command": "ls /nope"})).await;
    assert_eq!(
        result.text(),
        "stderr:\nls: cannot access '/nope': No such file or directory\nexit code 2"
    );
    assert!(result.is_error);
    assert_eq!(result.details.exit_code, Some(2));
    assert!(!result.details.success);
}

#[tokio::test(start_paused = true)]
async fn signal_is_reported_in_the_status_line() {
    let exec = ScriptedExec::replying(|_| Reply::new().stdout("working\n").signal("SIGKILL"));
    let result = call(&exec, json!({"command": "kill -9 $$"})).await;
    assert_eq!(
        result.text(),
        "stdout:\nworking\nterminated by signal SIGKILL"
    );
    assert!(result.is_error);
    assert_eq!(result.details.signal.as_deref(), Some("SIGKILL"));
    assert_eq!(result.details.exit_code, None);
}

#[tokio::test(start_paused = true)]
async fn large_output_keeps_head_and_tail_and_points_to_the_log() {
    let exec = ScriptedExec::replying(|_| {
        let text: String = (1..=100_000).map(|number| format!("{number}\n")).collect();
        Reply::new()
            .stdout(text)
            .log_file("/tmp/bashtool/call-1.log")
    });
    let result = call(&exec, json!({"command": "seq 1 100000"})).await;
    let text = result.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..2], ["stdout:", "1"]);
    let marker = lines
        .iter()
        .position(|line| line.starts_with("... ("))
        .expect("marker");
    assert!(
        lines[marker].ends_with(" lines omitted) ..."),
        "{}",
        lines[marker]
    );
    assert_eq!(lines[lines.len() - 3], "100000");
    assert_eq!(lines[lines.len() - 2], "exit code 0");
    assert_eq!(
        lines[lines.len() - 1],
        "[output shortened: the full output (100000 lines, 575.1 KiB) is in /tmp/bashtool/call-1.log; read parts of it with sed -n 'FROM,TOp' /tmp/bashtool/call-1.log or search it with grep -n PATTERN /tmp/bashtool/call-1.log]"
    );
    assert!(text.len() < 8500, "{} chars", text.len());
    assert!(result.details.truncated);
    assert_eq!(
        result.details.log_file.as_deref(),
        Some("/tmp/bashtool/call-1.log")
    );
}

#[tokio::test(start_paused = true)]
async fn log_file_is_not_mentioned_when_nothing_was_shortened() {
    let exec = ScriptedExec::replying(|_| Reply::new().stdout("ok\n").log_file("/tmp/x.log"));
    let result = call(&exec, json!({"command": "true"})).await;
    assert_eq!(result.text(), "stdout:\nok\nexit code 0");
    assert_eq!(result.details.log_file.as_deref(), Some("/tmp/x.log"));
}

#[tokio::test(start_paused = true)]
async fn long_lines_are_abbreviated_around_an_ellipsis() {
    let line = format!("{}{}{}", "a".repeat(397), "m".repeat(1000), "z".repeat(397));
    let reply_line = line.clone();
    let exec = ScriptedExec::replying(move |_| Reply::new().stdout(format!("{reply_line}\n")));
    let result = call(&exec, json!({"command": "cat minified.js"})).await;
    assert_eq!(
        result.text(),
        format!(
            "stdout:\n{}...{}\nexit code 0",
            "a".repeat(397),
            "z".repeat(397)
        )
    );
    assert!(result.details.truncated);
}

#[tokio::test(start_paused = true)]
async fn no_output_says_so() {
    let exec = ScriptedExec::replying(|_| Reply::new());
    let result = call(&exec, json!({"command": "true"})).await;
    assert_eq!(result.text(), "(no output)\nexit code 0");
}

#[tokio::test(start_paused = true)]
async fn timeout_keeps_partial_output_and_hints_at_slow_and_background() {
    let exec = ScriptedExec::replying(|_| Reply::new().stdout("compiling...\n").never());
    let result = call(&exec, json!({"command": "make", "timeout": 5})).await;
    assert_eq!(
        result.text(),
        "stdout:\ncompiling...\n[command timed out after 5s; its process tree was stopped and the output so far is above. \
         Use mode \"slow\" (up to 15 min) for builds and tests, or mode \"background\" for servers and watchers.]"
    );
    assert!(result.is_error);
    assert!(result.details.timed_out);
    assert_eq!(result.details.timeout_seconds, Some(5));
}

#[tokio::test(start_paused = true)]
async fn streaming_output_is_observable_while_the_command_runs() {
    let (release, released) = oneshot::channel::<()>();
    let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
    let emitted = Arc::new(Notify::new());
    let emitted_by_handler = Arc::clone(&emitted);
    let exec = ScriptedExec::new(move |_command, options| {
        let released = Arc::clone(&released);
        let emitted = Arc::clone(&emitted_by_handler);
        async move {
            options.output.push(Stream::Stdout, "first li".as_bytes());
            options.output.push(Stream::Stdout, "ne\nsecond".as_bytes());
            emitted.notify_one();
            if let Some(gate) = released.lock().await.take() {
                let _ = gate.await;
            }
            options.output.push(Stream::Stdout, " line\n".as_bytes());
            Ok(CommandResult::exited(
                0,
                OutputBuffer::from_text(
                    &bashtool_core::OutputConfig::default(),
                    Stream::Stdout,
                    "first line\nsecond line\n",
                ),
            ))
        }
    });
    let invocation = Invocation::start(tool_with(&exec), json!({"command": "build"}));
    emitted.notified().await;
    let (lines, omitted) = invocation.output_lines();
    let texts: Vec<&str> = lines.iter().map(|line| line.text.as_str()).collect();
    assert_eq!(texts, ["first line"]);
    assert_eq!(omitted, 0);
    assert!(!invocation.is_done());
    assert!(!invocation.is_pending_user_action());
    release.send(()).expect("handler waiting");
    let result = invocation.result().await;
    assert_eq!(
        result.text(),
        "stdout:\nfirst line\nsecond line\nexit code 0"
    );
    let texts: Vec<String> = invocation
        .output_lines()
        .0
        .into_iter()
        .map(|line| line.text)
        .collect();
    assert_eq!(texts, ["first line", "second line"]);
}

#[tokio::test(start_paused = true)]
async fn sink_receives_every_chunk_in_order() {
    let exec = ScriptedExec::replying(|_| Reply::new().stdout("a\n").stderr("b\n").stdout("c\n"));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_seen = Arc::clone(&seen);
    let context = CallContext {
        on_output: Some(Arc::new(move |chunk: &OutputChunk| {
            sink_seen
                .lock()
                .expect("lock")
                .push((chunk.stream, chunk.text.clone()));
        })),
        ..CallContext::default()
    };
    tool_with(&exec)
        .call_with(&json!({"command": "x"}), context)
        .await;
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(
        seen,
        [
            (Stream::Stdout, "a\n".to_owned()),
            (Stream::Stderr, "b\n".to_owned()),
            (Stream::Stdout, "c\n".to_owned())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn abort_before_completion_returns_the_output_so_far_and_ignores_the_late_result() {
    /// Fires when the handler's future is done, i.e. it returned its late
    /// result; on the current-thread runtime the invocation task applies it
    /// before this test runs again.
    struct SignalOnDrop(Option<oneshot::Sender<()>>);
    impl Drop for SignalOnDrop {
        fn drop(&mut self) {
            if let Some(sender) = self.0.take() {
                let _ = sender.send(());
            }
        }
    }
    let emitted = Arc::new(Notify::new());
    let emitted_by_handler = Arc::clone(&emitted);
    let (returned, handler_returned) = oneshot::channel::<()>();
    let returned = Arc::new(std::sync::Mutex::new(Some(returned)));
    let exec = ScriptedExec::new(move |_command, options| {
        let emitted = Arc::clone(&emitted_by_handler);
        let returned = returned.lock().expect("lock").take();
        async move {
            let _signal = SignalOnDrop(returned);
            options.output.push(Stream::Stdout, "partial\n".as_bytes());
            emitted.notify_one();
            options.cancel.cancelled().await;
            // The late completion says something else; it must be ignored.
            Ok(CommandResult::exited(
                0,
                OutputBuffer::from_text(
                    &bashtool_core::OutputConfig::default(),
                    Stream::Stdout,
                    "late\n",
                ),
            ))
        }
    });
    let invocation = Invocation::start(tool_with(&exec), json!({"command": "sleep 100"}));
    emitted.notified().await;
    invocation.abort();
    assert!(invocation.is_done());
    let expected = "stdout:\npartial\n[command aborted by the user; its process tree was stopped]";
    let result = invocation.result().await;
    assert_eq!(result.text(), expected);
    assert!(result.is_error);
    assert!(result.details.cancelled);
    assert_eq!(result.details.command, "sleep 100");
    handler_returned
        .await
        .expect("the handler returned its late result");
    assert_eq!(invocation.result().await, result);
}

#[tokio::test(start_paused = true)]
async fn abort_after_completion_keeps_the_original_result() {
    let exec = ScriptedExec::replying(|_| Reply::new().stdout("done\n"));
    let invocation = Invocation::start(tool_with(&exec), json!({"command": "true"}));
    let result = invocation.result().await;
    invocation.abort();
    assert_eq!(invocation.result().await, result);
    assert_eq!(result.text(), "stdout:\ndone\nexit code 0");
}

#[tokio::test(start_paused = true)]
async fn cancel_through_the_context_stops_the_command() {
    let exec = ScriptedExec::replying(|_| Reply::new().stdout("waiting\n").never());
    let tool = tool_with(&exec);
    let context = CallContext::default();
    let cancel = context.cancel.clone();
    let call = tokio::spawn(async move {
        tool.call_with(&json!({"command": "sleep 1000"}), context)
            .await
    });
    tokio::task::yield_now().await;
    cancel.cancel();
    let result = call.await.expect("call task");
    assert_eq!(
        result.text(),
        "stdout:\nwaiting\n[command cancelled; its process tree was stopped]"
    );
    assert!(result.details.cancelled);
}

#[tokio::test(start_paused = true)]
async fn invalid_input_runs_nothing() {
    let exec = ScriptedExec::replying(|_| Reply::new());
    for input in [
        json!({}),
        json!({"command": 5}),
        json!({"command": ""}),
        json!("ls"),
    ] {
        let result = call(&exec, input).await;
        assert!(result.is_error);
        assert_eq!(result.details.error_kind.as_deref(), Some("invalid_input"));
        assert!(
            result.text().starts_with("invalid input: "),
            "{}",
            result.text()
        );
    }
    assert!(exec.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn input_fields_reach_the_environment() {
    let exec = ScriptedExec::replying(|_| Reply::new());
    call(
        &exec,
        json!({"command": "env", "mode": "slow", "working_directory": "sub", "environment": {"A": "1"}}),
    )
    .await;
    let recorded = &exec.calls()[0];
    assert_eq!(recorded.timeout, Some(Duration::from_secs(900)));
    assert_eq!(recorded.cwd, Some(PathBuf::from("sub")));
    assert_eq!(recorded.env["A"], "1");
}

#[tokio::test(start_paused = true)]
async fn refused_approval_of_a_blocked_command_runs_nothing() {
    let exec = ScriptedExec::replying(|_| Reply::new());
    let mut approval = MockApproval::new();
    approval
        .expect_approve()
        .times(1)
        .returning(|_, _| bashtool_core::ApprovalAnswer::Deny(bashtool_core::Refusal::Denied));
    approval
        .expect_approver()
        .returning(|| "the user".to_owned());
    let tool = tool_with(&exec).with_approval(Arc::new(approval));
    let result = tool.call(json!({"command": "git push --force"})).await;
    assert_eq!(
        result.text(),
        "Not run: the user refused to run this command past the safety policy (rule \
         git_push_force), so nothing ran. Do not retry the same command or a way around it; \
         change the approach, or ask the user what they want."
    );
    assert!(result.is_error);
    assert!(exec.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn mockall_mock_can_stand_in_for_the_environment() {
    let mut exec = MockCommandExec::new();
    exec.expect_environment()
        .returning(EnvironmentInfo::default);
    exec.expect_spawn()
        .withf(|command, options| {
            command == "echo hi" && options.timeout == Some(Duration::from_secs(30))
        })
        .times(1)
        .returning(|_, _| {
            Ok(CommandResult::exited(
                0,
                OutputBuffer::from_text(
                    &bashtool_core::OutputConfig::default(),
                    Stream::Stdout,
                    "hi\n",
                ),
            ))
        });
    let tool = BashTool::new(ToolConfig::default(), Arc::new(exec));
    assert_eq!(
        tool.call(json!({"command": "echo hi"})).await.text(),
        "stdout:\nhi\nexit code 0"
    );
}

#[tokio::test(start_paused = true)]
async fn mockall_mock_reports_spawn_errors() {
    let mut exec = MockCommandExec::new();
    exec.expect_environment()
        .returning(EnvironmentInfo::default);
    exec.expect_spawn().returning(|_, _| {
        Err(ExecError::ShellNotFound {
            program: "bash".into(),
        })
    });
    let tool = BashTool::new(ToolConfig::default(), Arc::new(exec));
    assert_eq!(
        tool.call(json!({"command": "ls"})).await.text(),
        "shell `bash` was not found; install it or configure another shell"
    );
}

#[tokio::test(start_paused = true)]
async fn background_returns_pid_and_output_file() {
    let exec = ScriptedExec::replying(|_| {
        Reply::new().background("j42", 4242, "/tmp/bashtool/job-4242.log")
    });
    let result = call(
        &exec,
        json!({"command": "npm run dev", "mode": "background"}),
    )
    .await;
    assert_eq!(
        result.text(),
        "Started in the background as job j42.\n<pid>4242</pid>\n<output_file>/tmp/bashtool/job-4242.log</output_file>\n\
         <reminder>Read its output with: tail -n 50 /tmp/bashtool/job-4242.log. When it ends, its exit status is appended to that file. \
         To stop it: kill -TERM -- -4242</reminder>"
    );
    assert!(!result.is_error);
    assert!(result.details.success);
    assert_eq!(result.details.pid, Some(4242));
    assert_eq!(result.details.job.as_deref(), Some("j42"));
    assert_eq!(
        result.details.output_file.as_deref(),
        Some("/tmp/bashtool/job-4242.log")
    );
    assert_eq!(exec.calls()[0].timeout, None);
}

#[tokio::test(start_paused = true)]
async fn shell_telemetry_ends_the_text() {
    let exec = ScriptedExec::replying(|_| {
        Reply::new().shell(ShellState {
            cwd: PathBuf::from("/home/me/proj/backend"),
            git_branch: Some("main".into()),
            restarted: false,
        })
    });
    let result = call(&exec, json!({"command": "cd backend"})).await;
    assert_eq!(
        result.text(),
        "(no output)\nexit code 0\n[cwd: /home/me/proj/backend · git: main]"
    );
}

#[tokio::test(start_paused = true)]
async fn batch_runs_every_command_and_reports_each() {
    let exec = ScriptedExec::replying(|command| match command {
        "false" => Reply::new().exit(1),
        other => Reply::new().stdout(format!("{other}\n")),
    });
    let result = call(&exec, json!({"commands": ["echo a", "false", "echo c"]})).await;
    assert_eq!(
        result.text(),
        "[1/3] $ echo a\nstdout:\necho a\nexit code 0\n\n[2/3] $ false\n(no output)\nexit code 1\n\n[3/3] $ echo c\nstdout:\necho c\nexit code 0"
    );
    assert!(result.is_error);
    let batch = result.details.batch.expect("batch details");
    let codes: Vec<Option<i32>> = batch.iter().map(|item| item.exit_code).collect();
    assert_eq!(codes, [Some(0), Some(1), Some(0)]);
    assert_eq!(exec.calls().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn batch_shares_the_budget_so_every_section_keeps_its_ends() {
    let exec = ScriptedExec::replying(|command| {
        let text: String = (1..=5000)
            .map(|number| format!("{command} {number}\n"))
            .collect();
        Reply::new().stdout(text)
    });
    let result = call(&exec, json!({"commands": ["one", "two"]})).await;
    let text = result.text();
    for expected in ["one 1\n", "one 5000\n", "two 1\n", "two 5000\n"] {
        assert!(text.contains(expected), "missing {expected:?}");
    }
    assert!(text.len() < 8800, "{} chars", text.len());
}

#[tokio::test(start_paused = true)]
async fn cancel_mid_batch_skips_the_rest() {
    let context = CallContext::default();
    let cancel = context.cancel.clone();
    let exec = ScriptedExec::replying(move |command| {
        if command == "slow" {
            cancel.cancel();
        }
        Reply::new().stdout("ran\n")
    });
    let result = tool_with(&exec)
        .call_with(&json!({"commands": ["fast", "slow", "never"]}), context)
        .await;
    assert_eq!(
        result.text(),
        "[1/3] $ fast\nstdout:\nran\nexit code 0\n\n[2/3] $ slow\nstdout:\nran\n[command cancelled; its process tree was stopped]\n\n[3/3] $ never\n(skipped — cancelled)"
    );
    let batch = result.details.batch.expect("batch");
    assert!(batch[2].skipped);
    assert_eq!(exec.calls().len(), 2);
}

#[test]
fn factory_creates_the_bash_tool_and_lists_its_spec() {
    let exec = ScriptedExec::replying(|_| Reply::new());
    let context = CreateToolContext {
        config: ToolConfig::default(),
        exec: Arc::new(exec),
    };
    let tool = create_tool("bash", context.clone()).expect("bash is registered");
    let Tool::Bash(bash) = tool;
    assert_eq!(bash.spec().name, "bash");
    let error = create_tool("python", context).expect_err("unknown");
    assert_eq!(
        error.to_string(),
        "unknown tool `python`; known tools: bash"
    );
    let specs = tool_specs(&ToolConfig::default());
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].0, "bash");
}

#[test]
fn result_serializes_with_the_documented_field_names() {
    let result = ToolResult::refused("ls", "blocked", "no");
    let value = serde_json::to_value(&result).expect("serialize");
    assert_eq!(
        value,
        json!({
            "content": [{"type": "text", "text": "no"}],
            "is_error": true,
            "details": {
                "command": "ls", "exit_code": null, "signal": null, "success": false,
                "timed_out": false, "cancelled": false, "execution_time_ms": 0,
                "working_directory": null, "log_file": null, "truncated": false,
                "total_lines": 0, "total_bytes": 0, "error_kind": "blocked"
            }
        })
    );
}
