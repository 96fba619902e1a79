//! Persistent sessions with real bash: state carries over, and no command
//! can break the session.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{BashTool, CallContext, ToolConfig, ToolResult};
use bashtool_env_local::{LocalConfig, Session, SessionConfig};
use serde_json::{Value, json};

fn session_config(dir: &Path) -> SessionConfig {
    SessionConfig {
        local: LocalConfig {
            working_directory: dir.to_path_buf(),
            kill_grace: Duration::from_millis(500),
            ..LocalConfig::default()
        },
        ..SessionConfig::default()
    }
}

fn tool_for(session: &Session) -> BashTool {
    BashTool::new(
        ToolConfig {
            persistent_session: true,
            ..ToolConfig::default()
        },
        Arc::new(session.clone()),
    )
}

async fn run(tool: &BashTool, command: &str) -> ToolResult {
    tool.call(json!({ "command": command })).await
}

#[tokio::test]
async fn smoke() {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = Session::new(session_config(dir.path())).expect("session");
    let tool = tool_for(&session);
    for command in ["echo hi; x=5; cd /tmp", "echo $x; pwd", "exit 3", "echo $x; pwd", "sleep 30 & echo started", "echo S 1 0; printf 'P/\\0'"] {
        let result = run(&tool, command).await;
        println!("--- {command}\n{}\n", result.text());
    }
    let result = tool.call(json!({"command": "sleep 20", "timeout": 1})).await;
    println!("--- timeout\n{}\n", result.text());
    let result = run(&tool, "echo $x; pwd").await;
    println!("--- after\n{}\n", result.text());
    let _: Value = json!(null);
    let _ = CallContext::default();
}
