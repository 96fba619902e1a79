//! End-to-end tests of `bashtool mcp`: the real binary driven by the real
//! rmcp client over stdio. They wait for events with deadlines, never for a
//! fixed time.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bashtool_core::{EnvironmentInfo, ToolConfig, tool_spec_for};
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::{RequestHandle, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

mod mcp_support;
use bashtool_tests::{pid_alive, read_pids};
use mcp_support::{
    DEADLINE, ProgressClient, answer, progress_with, send_call, text, tree_script, wait_until_dead,
};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

struct Server {
    client: RunningService<RoleClient, ProgressClient>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    pid: u32,
    dir: tempfile::TempDir,
}

fn command(dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command
        .arg("mcp")
        .arg("--cwd")
        .arg(dir)
        .args(args)
        // No user config file may change what the tests see.
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG");
    command
}

async fn start(args: &[&str]) -> Server {
    start_with_env(args, &[]).await
}

/// A server whose own environment also holds `env`.
async fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut command = command(dir.path(), args);
    command.envs(env.iter().copied());
    let transport = TokioChildProcess::new(command).expect("spawn bashtool mcp");
    let pid = transport.id().expect("server pid");
    let (sender, progress) = mpsc::unbounded_channel();
    let client = timeout(
        DEADLINE,
        ProgressClient { progress: sender }.serve(transport),
    )
    .await
    .expect("initialize in time")
    .expect("initialize");
    Server {
        client,
        progress,
        pid,
        dir,
    }
}

impl Server {
    async fn send(&self, name: &str, arguments: Value) -> RequestHandle<RoleClient> {
        send_call(&self.client, name, arguments).await
    }

    async fn call(&self, arguments: Value) -> CallToolResult {
        answer(self.send("bash", arguments).await).await
    }

    /// Waits for a progress message containing `needle`.
    async fn progress_with(&mut self, needle: &str) -> ProgressNotificationParam {
        progress_with(&mut self.progress, needle).await
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

#[tokio::test]
async fn initialize_names_the_server_and_offers_tools() {
    let server = start(&[]).await;
    let info = server.client.peer_info().expect("server info");
    let implementation = info.server_info.as_ref().expect("implementation");
    assert_eq!(implementation.name, "bashtool");
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some());
    assert!(!info.protocol_version.to_string().is_empty());
}

#[tokio::test]
async fn tools_have_titles_and_truthful_annotations() {
    let server = start(&[]).await;
    let tools = server.client.list_all_tools().await.expect("tools/list");
    let summary: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let annotations = tool.annotations.as_ref().expect("annotations");
            json!({
                "name": tool.name,
                "title": tool.title,
                "annotations": annotations,
            })
        })
        .collect();
    assert_eq!(
        summary,
        [
            json!({"name": "bash", "title": "Run a shell command", "annotations": {
                "title": "Run a shell command", "readOnlyHint": false, "destructiveHint": true,
                "idempotentHint": false, "openWorldHint": true}}),
            json!({"name": "bash_jobs", "title": "Background and interactive jobs", "annotations": {
                "title": "Background and interactive jobs", "readOnlyHint": false,
                "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}}),
        ]
    );
}

#[tokio::test]
async fn instructions_name_the_environment_the_sandbox_the_session_and_interactive_mode() {
    // No limits: their line depends on the cgroups of the machine (see
    // `instructions.rs` for it).
    let server = start(&["--sandbox", "off", "--limit", "pids=off"]).await;
    let info = server.client.peer_info().expect("server info");
    assert_eq!(
        info.instructions.as_deref(),
        Some(
            "Run shell commands with the bash tool: output comes back shortened so that errors \
             stay visible, commands never hang, and their whole process tree is stopped on timeout \
             or cancel. Start servers and watchers with mode \"background\" and manage them with \
             bash_jobs.\n\
             Environment: local (commands run on the machine of this server).\n\
             Sandbox: off (commands run with the full rights of the user).\n\
             Session: one persistent shell; the working directory, exported variables, functions \
             and aliases carry over between calls.\n\
             Interactive: programs that prompt (REPLs, installers, TUIs) run with mode \
             \"interactive\" in a terminal; answer them with bash_jobs write."
        )
    );
}

#[tokio::test]
async fn tools_list_shows_the_core_spec_with_an_output_schema() {
    let server = start(&[]).await;
    let tools = server.client.list_all_tools().await.expect("tools/list");
    let bash = tools
        .iter()
        .find(|tool| tool.name == "bash")
        .expect("bash tool");
    let mut config = ToolConfig {
        working_directory: Some(server.dir.path().to_path_buf()),
        persistent_session: true,
        jobs_tool: true,
        // Secrets are masked by default (the description says so).
        redactor: Some(std::sync::Arc::new(bashtool_core::Redactor::new(Vec::<(
            String,
            String,
        )>::new(
        )))),
        ..ToolConfig::default()
    };
    config.fields.interactive = true;
    // What the server's environment says of itself: local, sandboxed in
    // the workspace, and the search tools this machine has.
    let environment = EnvironmentInfo {
        name: "local".to_owned(),
        sandbox: bashtool_env_local::sandbox_info(&bashtool_env_local::LocalConfig {
            working_directory: server.dir.path().to_path_buf(),
            ..bashtool_env_local::LocalConfig::default()
        }),
        tools: bashtool_env_local::available_tools(),
        limits: None,
    };
    let spec = tool_spec_for(&config, &environment);
    assert_eq!(bash.description.as_deref(), Some(spec.description.as_str()));
    assert_eq!(
        Value::Object((*bash.input_schema).clone()),
        spec.input_schema
    );
    // Compact by default: an object, its fields named in the description,
    // in the draft-07 dialect (cheap for clients that check the schema on
    // every call).
    let output = bash.output_schema.as_ref().expect("output schema");
    assert_eq!(output.len(), 3, "{output:?}");
    assert_eq!(output["type"], "object");
    assert!(output["description"].is_string());
    assert_eq!(output["$schema"], "http://json-schema.org/draft-07/schema#");
}

#[tokio::test]
async fn the_full_output_schema_lists_each_field_with_its_type() {
    let server = start(&["--output-schema", "full"]).await;
    let tools = server.client.list_all_tools().await.expect("tools/list");
    for tool in &tools {
        let output = tool.output_schema.as_ref().expect("output schema");
        assert_eq!(output["type"], "object");
        assert_eq!(output["$schema"], "http://json-schema.org/draft-07/schema#");
        assert_eq!(
            output["properties"]["exit_code"]["anyOf"],
            json!([{"type": "integer"}, {"type": "null"}]),
            "{}",
            tool.name
        );
    }
    // A call's structured content carries what the full schema describes.
    let result = server.call(json!({"command": "true"})).await;
    let structured = result.structured_content.expect("structured content");
    assert_eq!(structured["exit_code"], 0);
}

#[tokio::test]
async fn a_successful_call_returns_text_and_structured_details() {
    let server = start(&[]).await;
    let result = server.call(json!({"command": "echo hello"})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        text(&result),
        format!(
            "stdout:\nhello\nexit code 0\n[cwd: {}]",
            server.dir.path().display()
        )
    );
    let details = result.structured_content.expect("structured content");
    assert_eq!(details["exit_code"], 0);
    assert_eq!(details["success"], true);
    assert_eq!(details["command"], "echo hello");
}

#[tokio::test]
async fn a_failing_call_is_an_error_result_with_its_output() {
    let server = start(&[]).await;
    let result = server
        .call(json!({"command": "echo before; (exit 3)"}))
        .await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        format!(
            "stdout:\nbefore\nexit code 3\n[cwd: {}]",
            server.dir.path().display()
        )
    );
    let details = result.structured_content.expect("structured content");
    assert_eq!(details["exit_code"], 3);
    assert_eq!(details["success"], false);
}

#[tokio::test]
async fn invalid_input_is_an_error_result_naming_the_field() {
    let server = start(&[]).await;
    let result = server.call(json!({"command": "ls", "timeout": 0})).await;
    assert_eq!(result.is_error, Some(true));
    let details = result.structured_content.expect("structured content");
    assert_eq!(details["error_kind"], "invalid_input");
    assert_eq!(details["field"], "timeout");
}

#[tokio::test]
async fn a_timeout_returns_partial_output_and_leaves_no_process() {
    let server = start(&[]).await;
    let pids = server.path("pids");
    let script = format!("echo partial; {}", tree_script(&pids));
    let result = server.call(json!({"command": script, "timeout": 1})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("partial"), "{}", text(&result));
    let details = result.structured_content.expect("structured content");
    assert_eq!(details["timed_out"], true);
    wait_until_dead(&read_pids(&pids, 2).await).await;
}

#[tokio::test]
async fn progress_notifications_carry_live_output() {
    let mut server = start(&[]).await;
    let handle = server
        .send("bash", json!({"command": "echo first-line; sleep 300"}))
        .await;
    let progress = server.progress_with("first-line").await;
    assert!(progress.progress >= 0.0);
    // The command is still running: the notification came while it ran.
    handle.cancel(None).await.expect("cancelled");
}

#[tokio::test]
async fn cancellation_kills_the_command_tree() {
    let mut server = start(&[]).await;
    let pids = server.path("pids");
    let handle = server
        .send("bash", json!({"command": tree_script(&pids)}))
        .await;
    server.progress_with("started").await;
    let pids = read_pids(&pids, 2).await;
    assert!(pids.iter().all(|&pid| pid_alive(pid)));
    handle
        .cancel(Some("test".to_owned()))
        .await
        .expect("cancelled");
    wait_until_dead(&pids).await;
}

#[tokio::test]
async fn a_slow_call_does_not_block_a_fast_one() {
    let mut server = start(&["--stateless"]).await;
    let slow = server
        .send("bash", json!({"command": "echo slow-started; sleep 300"}))
        .await;
    server.progress_with("slow-started").await;
    let fast = server.call(json!({"command": "echo fast"})).await;
    assert_eq!(text(&fast), "stdout:\nfast\nexit code 0");
    slow.cancel(None).await.expect("cancelled");
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error() {
    let server = start(&[]).await;
    let handle = server.send("nope", json!({})).await;
    let error = timeout(DEADLINE, handle.await_response())
        .await
        .expect("answer in time")
        .expect_err("protocol error");
    assert!(error.to_string().contains("unknown tool"), "{error}");
}

#[tokio::test]
async fn sigterm_stops_the_running_commands_and_exits() {
    let mut server = start(&[]).await;
    let pids = server.path("pids");
    let _handle = server
        .send("bash", json!({"command": tree_script(&pids)}))
        .await;
    server.progress_with("started").await;
    let mut pids = read_pids(&pids, 2).await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM sent");
    pids.push(server.pid);
    wait_until_dead(&pids).await;
}

mod raw {
    //! The server driven by hand-written bytes, for what a well-behaved
    //! client never sends.

    use std::process::Stdio;

    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

    use super::*;

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

    /// Reads answers until there is one for each of `ids`, in any order.
    async fn answers(
        lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
        ids: &[Value],
    ) -> Vec<Value> {
        let mut found: Vec<Option<Value>> = vec![None; ids.len()];
        while found.iter().any(Option::is_none) {
            let line = timeout(DEADLINE, lines.next_line())
                .await
                .expect("answer in time")
                .expect("read")
                .expect("server still talking");
            let message: Value = serde_json::from_str(&line).expect("stdout carries only JSON");
            if let Some(index) = ids.iter().position(|id| *id == message["id"])
                && message.get("method").is_none()
            {
                found[index] = Some(message);
            }
        }
        found.into_iter().flatten().collect()
    }

    #[tokio::test]
    async fn malformed_requests_get_json_rpc_errors_and_the_server_lives_on() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = command(dir.path(), &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let send = format!(
            "{INITIALIZE}\n{}\n\u{1}\u{2}not json at all\u{ff}\n{}\n{}\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"nope"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo alive"}}}"#,
        );
        stdin.write_all(send.as_bytes()).await.expect("written");
        let found = answers(&mut lines, &[json!(1), Value::Null, json!(2), json!(3)]).await;
        let [initialized, parse_error, invalid, alive] = &found[..] else {
            panic!("four answers")
        };
        assert!(initialized["result"]["serverInfo"].is_object());
        assert_eq!(parse_error["error"]["code"], -32700);
        assert_eq!(invalid["error"]["code"], -32600);
        assert_eq!(
            alive["result"]["content"][0]["text"],
            format!(
                "stdout:\nalive\nexit code 0\n[cwd: {}]",
                dir.path().display()
            )
        );
        drop(stdin);
        let status = timeout(DEADLINE, child.wait())
            .await
            .expect("exits on EOF")
            .expect("status");
        assert!(status.success());
    }

    #[tokio::test]
    async fn closing_stdin_stops_the_running_commands_and_exits() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pids = dir.path().join("pids");
        let mut child = command(dir.path(), &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": tree_script(&pids)}}});
        let send = format!(
            "{INITIALIZE}\n{}\n{call}\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        stdin.write_all(send.as_bytes()).await.expect("written");
        answers(&mut lines, &[json!(1)]).await;
        let pids = read_pids(&pids, 2).await;
        drop(stdin);
        let status = timeout(DEADLINE, child.wait())
            .await
            .expect("exits on EOF")
            .expect("status");
        assert!(status.success());
        wait_until_dead(&pids).await;
    }
}

#[tokio::test]
async fn cwd_and_environment_persist_across_calls() {
    let server = start(&[]).await;
    std::fs::create_dir(server.path("sub")).expect("mkdir");
    server
        .call(json!({"command": "cd sub && export GREETING=hi"}))
        .await;
    let result = server.call(json!({"command": "echo $GREETING; pwd"})).await;
    let sub = server.path("sub");
    assert_eq!(
        text(&result),
        format!(
            "stdout:\nhi\n{sub}\nexit code 0\n[cwd: {sub}]",
            sub = sub.display()
        )
    );
    let details = result.structured_content.expect("details");
    assert_eq!(details["shell"]["cwd"], sub.display().to_string());
}

#[tokio::test]
async fn calls_into_the_session_run_in_arrival_order() {
    let mut server = start(&[]).await;
    std::fs::create_dir(server.path("sub")).expect("mkdir");
    // Sent back to back without waiting: the second must see the first's cd,
    // and must wait while the first still runs.
    let first = server
        .send(
            "bash",
            json!({"command": "cd sub; echo first-running; sleep 1"}),
        )
        .await;
    let second = server.send("bash", json!({"command": "pwd"})).await;
    server.progress_with("first-running").await;
    let second = tokio::spawn(answer(second));
    let first = answer(first).await;
    assert!(text(&first).contains("first-running"));
    let second = second.await.expect("joined");
    assert!(
        text(&second).starts_with(&format!("stdout:\n{}\n", server.path("sub").display())),
        "{}",
        text(&second)
    );
}

#[tokio::test]
async fn a_stateless_server_says_so_and_forgets_the_cwd() {
    let server = start(&["--stateless"]).await;
    let tools = server.client.list_all_tools().await.expect("tools/list");
    let description = tools[0].description.as_deref().expect("description");
    assert!(description.contains("do NOT persist"), "{description}");
    std::fs::create_dir(server.path("sub")).expect("mkdir");
    server.call(json!({"command": "cd sub"})).await;
    let result = server.call(json!({"command": "pwd"})).await;
    assert_eq!(
        text(&result),
        format!("stdout:\n{}\nexit code 0", server.dir.path().display())
    );
}

#[tokio::test]
async fn a_command_leaving_a_background_process_returns_at_once() {
    let server = start(&[]).await;
    let pids = server.path("pids");
    let command = format!(
        "sleep 30 & echo {} > {}; echo started",
        bashtool_tests::qualified_pid("$!"),
        pids.display()
    );
    let result = server.call(json!({ "command": command })).await;
    assert!(text(&result).contains("started"), "{}", text(&result));
    // It returned although `sleep` still held stdout; what was left is stopped.
    wait_until_dead(&read_pids(&pids, 1).await).await;
}

#[tokio::test]
async fn a_background_job_is_started_read_and_stopped_through_bash_jobs() {
    let server = start(&[]).await;
    let tools = server.client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|tool| tool.name == "bash_jobs"));

    let started = server
        .call(json!({"command": "echo serving; sleep 300", "mode": "background"}))
        .await;
    assert_eq!(started.is_error, Some(false), "{}", text(&started));
    let details = started.structured_content.clone().expect("details");
    let pid = details["pid"].as_u64().expect("pid");
    let id = details["job"].as_str().expect("job id").to_owned();
    assert!(
        text(&started).contains(&format!(
            "bash_jobs {{\"action\": \"read\", \"job\": \"{id}\"}}"
        )),
        "{}",
        text(&started)
    );

    let listed = answer(server.send("bash_jobs", json!({"action": "list"})).await).await;
    let jobs = &listed.structured_content.expect("jobs")["jobs"];
    assert_eq!(jobs[0]["id"], id.as_str());
    assert_eq!(jobs[0]["pid"], pid);
    assert_eq!(jobs[0]["state"], "running");

    let deadline = Instant::now() + DEADLINE;
    loop {
        let output = answer(
            server
                .send(
                    "bash_jobs",
                    json!({"action": "read", "job": id, "since": 0}),
                )
                .await,
        )
        .await;
        if text(&output).contains("\nserving\n") {
            assert_eq!(
                output.structured_content.expect("details")["next_cursor"],
                8
            );
            break;
        }
        assert!(Instant::now() < deadline, "no output: {}", text(&output));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let waited = answer(
        server
            .send(
                "bash_jobs",
                json!({"action": "wait", "job": id, "timeout": 1}),
            )
            .await,
    )
    .await;
    assert!(text(&waited).contains("still running"), "{}", text(&waited));

    let stopped = answer(
        server
            .send("bash_jobs", json!({"action": "stop", "job": id}))
            .await,
    )
    .await;
    assert_eq!(stopped.is_error, Some(false), "{}", text(&stopped));
    assert_eq!(
        stopped.structured_content.expect("job")["state"],
        "signaled"
    );
    wait_until_dead(&[pid as u32]).await;

    let unknown = answer(
        server
            .send("bash_jobs", json!({"action": "read", "job": "j0000000"}))
            .await,
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert_eq!(
        text(&unknown),
        "no job with id `j0000000`; use action \"list\" to see the jobs"
    );

    let missing_job = answer(server.send("bash_jobs", json!({"action": "stop"})).await).await;
    assert_eq!(missing_job.is_error, Some(true));
    assert!(text(&missing_job).contains("job is required"));
}

/// Issue 35, item 1: every denial the sandbox causes gets its note in
/// every mode the server has: the persistent session (the default, which
/// had none) and a fresh shell per call. A write outside the writable
/// roots, git's protected paths (`EROFS` and `EBUSY`), and a name that
/// cannot be resolved with the network off.
#[tokio::test]
async fn sandbox_denials_get_their_note_in_the_session_and_stateless() {
    for flags in [
        &["--network", "off"][..],
        &["--network", "off", "--stateless"][..],
    ] {
        let server = start(flags).await;
        let made = server
            .call(json!({"command": "git init -q . && echo made"}))
            .await;
        assert_eq!(made.is_error, Some(false), "{}", text(&made));
        let dir = server.dir.path().canonicalize().expect("canonical");
        for (command, note) in [
            (
                "touch /etc/bashtool-denied".to_owned(),
                "writing `/etc/bashtool-denied` was refused because it is outside the writable roots".to_owned(),
            ),
            (
                "echo x > .git/hooks/pre-commit".to_owned(),
                format!("sandbox: `{}/.git/hooks/pre-commit` is protected", dir.display()),
            ),
            (
                "mv .git elsewhere".to_owned(),
                format!("sandbox: `{}/.git` is protected", dir.display()),
            ),
            (
                "git config user.name someone".to_owned(),
                format!("sandbox: `{}/.git/config` is protected", dir.display()),
            ),
            (
                "echo > /dev/tcp/example.com/80".to_owned(),
                "sandbox: the network is off".to_owned(),
            ),
        ] {
            let result = server.call(json!({"command": command})).await;
            let shown = text(&result);
            assert_eq!(result.is_error, Some(true), "{flags:?} {command}: {shown}");
            assert!(shown.contains(&note), "{flags:?} {command}: {shown}");
            let details = result.structured_content.expect("details");
            assert!(
                details["notes"]
                    .as_array()
                    .is_some_and(|notes| notes.iter().any(|entry| entry.as_str().is_some_and(|entry| entry.contains(&note)))),
                "{details}"
            );
        }
    }
}

/// Issue 35, item 8: an error in a session names the shell as `bash -c`
/// does, not the session's command file.
#[tokio::test]
async fn a_session_error_names_bash_not_the_command_file() {
    let server = start(&[]).await;
    let result = server
        .call(json!({"command": "echo first\nno-such-command-here"}))
        .await;
    let shown = text(&result);
    assert!(
        shown.contains("\nbash: line 2: no-such-command-here: command not found\n"),
        "{shown}"
    );
    assert!(!shown.contains("command.sh"), "{shown}");
}

#[tokio::test]
async fn background_jobs_stop_with_the_server_unless_kept() {
    for keep in [false, true] {
        let flags: &[&str] = if keep { &["--keep-jobs"] } else { &[] };
        let server = start(flags).await;
        let started = server
            .call(json!({"command": "sleep 300", "mode": "background"}))
            .await;
        let pid = started.structured_content.expect("details")["pid"]
            .as_u64()
            .expect("pid") as u32;
        let server_pid = server.pid;
        let Server { client, dir, .. } = server;
        client.cancel().await.expect("client closed");
        wait_until_dead(&[server_pid]).await;
        if keep {
            assert!(pid_alive(pid), "kept job {pid} is gone");
            nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .expect("cleaned up");
        }
        wait_until_dead(&[pid]).await;
        drop(dir);
    }
}

mod settings {
    //! Flags and the config file reach what the model is told.

    use std::process::Stdio;

    use super::*;

    #[tokio::test]
    async fn config_file_and_flags_reach_the_tool_description() {
        let config = tempfile::NamedTempFile::new().expect("config file");
        std::fs::write(
            config.path(),
            "[timeouts]\ndefault = 7\nslow = 120\n[output]\nbudget_tokens = 500\n",
        )
        .expect("written");
        let path = config.path().to_str().expect("UTF-8 path");
        let server = start(&["--config", path, "--max-timeout", "60"]).await;
        let tools = server.client.list_all_tools().await.expect("tools/list");
        let bash = &tools[0];
        let description = bash.description.as_deref().expect("description");
        assert!(
            description.contains("Commands time out after 7 s."),
            "{description}"
        );
        assert!(description.contains("(up to 2 min)"), "{description}");
        assert!(description.contains("about 500 tokens"), "{description}");
        assert_eq!(bash.input_schema["properties"]["timeout"]["maximum"], 60);
    }

    #[tokio::test]
    async fn a_config_file_with_a_typo_is_refused_on_stderr() {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "[output]\nbudget_token = 5\n").expect("written");
        let output = command(dir.path(), &["--config", config.to_str().expect("UTF-8")])
            .stdin(Stdio::null())
            .output()
            .await
            .expect("ran");
        assert_eq!(output.status.code(), Some(2));
        assert!(output.stdout.is_empty(), "stdout carries only protocol");
        let stderr = String::from_utf8(output.stderr).expect("UTF-8");
        assert!(stderr.contains("unknown field `budget_token`"), "{stderr}");
    }

    /// Issue 35, item 4: `schema --format mcp` prints the bytes of the
    /// `bash` tool `tools/list` serves (its interactive mode, its sandbox
    /// paragraph, `<pwd>`), for the same flags, in every mode.
    #[tokio::test]
    async fn schema_mcp_format_is_the_bash_tool_tools_list_serves() {
        for flags in [
            &[][..],
            &["--stateless"][..],
            &["--output-schema", "full"][..],
            &["--sandbox", "off"][..],
            &["--network", "off"][..],
        ] {
            let server = start(flags).await;
            let tools = server.client.list_all_tools().await.expect("tools/list");
            let served = serde_json::to_string_pretty(&tools[0]).expect("JSON") + "\n";
            let dir = server.dir.path();
            let mut schema = std::process::Command::new(env!("CARGO_BIN_EXE_bashtool"));
            schema
                .args(["schema", "--format", "mcp", "--cwd"])
                .arg(dir)
                .env("XDG_CONFIG_HOME", dir)
                .env("BASHTOOL_STATE_DIR", dir.join("state"))
                .env_remove("BASHTOOL_CONFIG");
            let output = schema.args(flags).output().expect("schema");
            assert!(output.status.success(), "{output:?}");
            let printed = String::from_utf8(output.stdout).expect("UTF-8");
            assert_eq!(printed, served, "flags {flags:?}");
            let description = tools[0].description.as_deref().unwrap_or_default();
            assert!(
                description.contains("mode \"interactive\""),
                "{description}"
            );
            assert!(
                description.contains(&format!("<pwd>{}</pwd>", dir.display())),
                "{description}"
            );
            if flags.is_empty() {
                assert!(
                    description.contains("\nSandbox (workspace-write)"),
                    "{description}"
                );
                assert!(
                    description.contains("The shell is persistent"),
                    "{description}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_named_session_resumes_in_the_next_server() {
    let server = start(&["--session", "resume-test"]).await;
    std::fs::create_dir(server.path("sub")).expect("mkdir");
    server
        .call(json!({"command": "cd sub && export KEPT=yes"}))
        .await;
    let Server {
        client, dir, pid, ..
    } = server;
    client.cancel().await.expect("client closed");
    wait_until_dead(&[pid]).await;

    let transport = TokioChildProcess::new(command(dir.path(), &["--session", "resume-test"]))
        .expect("second server");
    let (sender, _progress) = mpsc::unbounded_channel();
    let client = ProgressClient { progress: sender }
        .serve(transport)
        .await
        .expect("initialize");
    let handle = send_call(&client, "bash", json!({"command": "echo $KEPT; pwd"})).await;
    let result = answer(handle).await;
    let sub = dir.path().join("sub");
    assert!(
        text(&result).starts_with(&format!("stdout:\nyes\n{}\n", sub.display())),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn the_policy_refuses_a_destructive_command_and_runs_nothing() {
    let server = start(&["--deny", "terraform destroy"]).await;
    let blocked = server.call(json!({"command": "git add -A"})).await;
    assert_eq!(blocked.is_error, Some(true));
    let details = blocked.structured_content.expect("details");
    assert_eq!(details["error_kind"], "blocked");
    assert_eq!(details["rule"], "git_add");

    let marker = server.path("ran");
    let denied = server
        .call(json!({"command": format!("touch {}; terraform destroy", marker.display())}))
        .await;
    assert_eq!(denied.is_error, Some(true));
    assert_eq!(
        denied.structured_content.expect("details")["rule"],
        "deny_pattern"
    );
    assert!(!marker.exists(), "a refused command must not run at all");
}

#[tokio::test]
async fn no_policy_lets_the_command_run() {
    let server = start(&["--no-policy"]).await;
    let result = server.call(json!({"command": "git add -A"})).await;
    let details = result.structured_content.expect("details");
    assert!(details.get("error_kind").is_none(), "{details}");
}

/// Issue 18, item 1: a call cancelled while it waits behind a running one
/// must give its place up; the next call then runs (it hung forever).
#[tokio::test]
async fn a_call_cancelled_while_queued_does_not_block_the_next_one() {
    let server = start(&[]).await;
    let started = server.path("started");
    let release = server.path("release");
    let a = server
        .send(
            "bash",
            json!({"command": format!(
                "touch {}; while [ ! -e {} ]; do sleep 0.01; done; echo A",
                started.display(),
                release.display()
            )}),
        )
        .await;
    wait_for_file(&started).await;
    let b = server.send("bash", json!({"command": "echo B"})).await;
    b.cancel(Some("test".to_owned())).await.expect("cancelled");
    // rmcp handles messages in order: once tools/list is answered, B's
    // cancel has reached the server while A still holds the session.
    server.client.list_all_tools().await.expect("tools/list");
    std::fs::write(&release, "").expect("release A");
    assert!(text(&answer(a).await).contains("A\n"));
    let c = server
        .call(json!({"command": "echo C", "timeout": 2}))
        .await;
    assert_eq!(
        text(&c),
        format!(
            "stdout:\nC\nexit code 0\n[cwd: {}]",
            server.dir.path().display()
        )
    );
}

async fn wait_for_file(path: &Path) {
    assert!(
        bashtool_tests::wait_until(DEADLINE, || path.exists()).await,
        "{} never appeared",
        path.display()
    );
}

/// Issue 18, item 7: a `bash_jobs` call and a call of an unknown tool were
/// queued in the session like `bash` calls, and as no handler claimed their
/// places, the next `bash` call waited 2 s for them to expire. The deadline
/// here is far below those 2 s and far above an `echo` in a warm session.
#[tokio::test]
async fn bash_jobs_and_rejected_calls_do_not_hold_up_the_next_bash_call() {
    let server = start(&[]).await;
    server.call(json!({"command": "true"})).await;
    let jobs = server.send("bash_jobs", json!({"action": "list"})).await;
    let unknown = server.send("nope", json!({})).await;
    let next = server.send("bash", json!({"command": "echo next"})).await;
    let next = timeout(Duration::from_millis(1500), answer(next))
        .await
        .expect("the bash call waited for calls that never take a turn");
    assert!(
        text(&next).starts_with("stdout:\nnext\n"),
        "{}",
        text(&next)
    );
    answer(jobs).await;
    let _ = timeout(DEADLINE, unknown.await_response()).await;
}

/// Issue 18, item 11: rmcp dropped lines over 16 MiB unanswered while the
/// gate let up to 32 MiB through; the oversized command must come back as
/// an error result that does not echo the command whole.
#[tokio::test]
async fn a_20_mib_call_is_answered_without_echoing_the_command() {
    let server = start(&[]).await;
    let command = "x".repeat(20 * 1024 * 1024);
    let result = server.call(json!({"command": command})).await;
    assert_eq!(result.is_error, Some(true));
    let reply = serde_json::to_string(&result).expect("json");
    assert!(reply.len() < 64 * 1024, "reply of {} bytes", reply.len());
    let details = result.structured_content.expect("details");
    assert_eq!(details["error_kind"], "invalid_input");
    assert_eq!(details["field"], "command");
}

/// Issue 18, item 11: a line over the gate's cap is skipped and answered
/// with an error carrying the request's id, and the server lives on.
#[tokio::test]
async fn a_line_over_the_cap_gets_an_error_with_its_id() {
    let server = start(&[]).await;
    let command = "x".repeat(33 * 1024 * 1024);
    let handle = server.send("bash", json!({"command": command})).await;
    let error = timeout(DEADLINE, handle.await_response())
        .await
        .expect("answer in time")
        .expect_err("protocol error");
    assert!(
        error.to_string().contains("larger than the limit"),
        "{error}"
    );
    let alive = server.call(json!({"command": "echo alive"})).await;
    assert!(text(&alive).starts_with("stdout:\nalive\n"));
}

/// Issue 18, item 6: the client's secrets, inherited by the server, do not
/// reach the session's commands unless kept with --keep-env.
#[tokio::test]
async fn the_clients_secrets_do_not_reach_commands() {
    let secrets = [
        ("ANTHROPIC_API_KEY", "sk-ant-secret"),
        ("GITHUB_TOKEN", "ghp-secret"),
        ("VISIBLE_VAR", "seen"),
    ];
    let grep =
        json!({"command": "env | grep -E '^(ANTHROPIC_API_KEY|GITHUB_TOKEN|VISIBLE_VAR)=' | sort"});
    let server = start_with_env(&[], &secrets).await;
    let result = server.call(grep.clone()).await;
    assert_eq!(
        text(&result),
        format!(
            "stdout:\nVISIBLE_VAR=seen\nexit code 0\n[cwd: {}]",
            server.dir.path().display()
        )
    );
    let tools = server.client.list_all_tools().await.expect("tools/list");
    assert!(
        tools[0]
            .description
            .as_deref()
            .is_some_and(|text| text.contains("look like secrets"))
    );
    let kept = start_with_env(&["--keep-env", "GITHUB_TOKEN"], &secrets).await;
    let result = kept.call(grep).await;
    assert_eq!(
        text(&result),
        format!(
            // Kept for commands, still masked for the model (issue 33).
            "stdout:\nGITHUB_TOKEN=[redacted: GITHUB_TOKEN]\nVISIBLE_VAR=seen\n\
             [1 secret was masked in this output as [redacted: …]]\nexit code 0\n[cwd: {}]",
            kept.dir.path().display()
        )
    );
}
