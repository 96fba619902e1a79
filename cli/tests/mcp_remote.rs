//! `bashtool mcp --remote`: the MCP server runs here and the commands run
//! in a `bashtool serve` it starts (on this machine, so the test can look).
//! The real binary on both ends, driven by the real rmcp client.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::time::timeout;

const DEADLINE: Duration = Duration::from_secs(30);

async fn call(
    client: &rmcp::service::RunningService<RoleClient, ()>,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    timeout(
        DEADLINE,
        client.call_tool(CallToolRequestParams::new("bash").with_arguments(arguments)),
    )
    .await
    .expect("answer in time")
    .expect("answer")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|content| content.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_remotely_in_one_persistent_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    for sub in ["tmp", "state", "work/sub", "local"] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    let binary = env!("CARGO_BIN_EXE_bashtool");
    let line = format!(
        "TMPDIR={root}/tmp BASHTOOL_STATE_DIR={root}/state exec {binary} serve --kill-grace 1",
        root = root.display()
    );
    let mut command = tokio::process::Command::new(binary);
    command
        .arg("mcp")
        .arg("--remote")
        .arg(&line)
        .arg("--cwd")
        .arg(root.join("work"))
        .current_dir(root.join("local"))
        .env("XDG_CONFIG_HOME", root.join("local"))
        .env("BASHTOOL_STATE_DIR", root.join("local"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG");
    let transport = TokioChildProcess::new(command).expect("spawn bashtool mcp");
    let client = timeout(DEADLINE, ().serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize");
    let first = call(
        &client,
        json!({"command": "cd sub && export GREETING=hi && pwd"}),
    )
    .await;
    assert_eq!(first.is_error, Some(false), "{}", text(&first));
    let details = first.structured_content.expect("structured content");
    assert_eq!(details["environment"], format!("remote: {line}"));
    assert_eq!(
        details["working_directory"],
        root.join("work/sub").display().to_string()
    );
    let second = call(&client, json!({"command": "echo \"$GREETING from $PWD\""})).await;
    assert_eq!(
        text(&second).lines().nth(1),
        Some(format!("hi from {}", root.join("work/sub").display()).as_str()),
        "{}",
        text(&second)
    );
    client.cancel().await.expect("close");
}
