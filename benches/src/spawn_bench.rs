//! Items 1 and 2: the cost of a call of `true` through the tool, against
//! spawning `bash -c true` directly.

use std::process::Stdio;
use std::sync::Arc;

use bashtool_core::{BashTool, ToolConfig};
use bashtool_env_local::{LocalConfig, LocalExec};
use serde_json::json;

use crate::Effort;
use crate::stats::{Samples, measure, spread};
use crate::table::Row;

/// One baseline call: tokio spawns and waits on `bash -c true`.
pub async fn bash_true_once() {
    let status = tokio::process::Command::new("bash")
        .args(["-c", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .status()
        .await;
    assert!(status.is_ok_and(|status| status.success()));
}

/// The baseline: tokio spawns and waits on `bash -c true`.
pub async fn raw_bash_true(effort: Effort) -> anyhow::Result<Samples> {
    Ok(measure(20, effort.runs(300), bash_true_once).await)
}

/// A call of `true` through the tool on an environment with `sandbox`.
async fn tool_true(effort: Effort, sandbox: bashtool_env_local::SandboxMode) -> Samples {
    let mut config = LocalConfig::default();
    config.sandbox.mode = sandbox;
    let tool = BashTool::new(ToolConfig::default(), Arc::new(LocalExec::new(config)));
    measure(20, effort.runs(300), || async {
        let result = tool.call(json!({"command": "true"})).await;
        assert!(!result.is_error, "{}", result.text());
    })
    .await
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    use bashtool_env_local::SandboxMode;
    // In turns, so that load drifts hit all three alike.
    let baseline = raw_bash_true(effort).await?;
    let ours = tool_true(effort, SandboxMode::Off).await;
    let sandboxed = tool_true(effort, SandboxMode::WorkspaceWrite).await;
    let overhead = ours.median().as_secs_f64() / baseline.median().as_secs_f64() - 1.0;
    let sandbox_cost = sandboxed.median().as_secs_f64() / ours.median().as_secs_f64() - 1.0;
    Ok(vec![
        Row {
            number: "1",
            what: "stateless call of `true` through the whole tool (no sandbox)".into(),
            ours: spread(&ours),
            baseline: format!("`bash -c true` via tokio: {}", spread(&baseline)),
            ratio: format!("{:+.1}% overhead", overhead * 100.0),
            target: "overhead ≤ 10%",
            met: Some(overhead <= 0.10),
        },
        Row {
            number: "1s",
            what: "the same call in the default sandbox (workspace-write)".into(),
            ours: spread(&sandboxed),
            baseline: format!("unsandboxed, same run: {}", spread(&ours)),
            ratio: format!("{:+.1}% for the sandbox", sandbox_cost * 100.0),
            target: "≤ 10% more",
            met: Some(sandbox_cost <= 0.10),
        },
    ])
}
