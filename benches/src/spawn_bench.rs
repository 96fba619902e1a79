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

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let baseline = raw_bash_true(effort).await?;
    let tool = BashTool::new(
        ToolConfig::default(),
        Arc::new(LocalExec::new(LocalConfig::default())),
    );
    let ours = measure(20, effort.runs(300), || async {
        let result = tool.call(json!({"command": "true"})).await;
        assert!(!result.is_error, "{}", result.text());
    })
    .await;
    let overhead = ours.median().as_secs_f64() / baseline.median().as_secs_f64() - 1.0;
    Ok(vec![Row {
        number: "1",
        what: "stateless call of `true` through the whole tool".into(),
        ours: spread(&ours),
        baseline: format!("`bash -c true` via tokio: {}", spread(&baseline)),
        ratio: format!("{:+.1}% overhead", overhead * 100.0),
        target: "overhead ≤ 10%",
        met: Some(overhead <= 0.10),
    }])
}
