//! Item 2: a call of `true` through the tool on a persistent session,
//! against spawning `bash -c true` directly (the same baseline as item 1,
//! measured again in this run).

use std::sync::Arc;

use bashtool_core::{BashTool, ToolConfig};
use bashtool_env_local::{Session, SessionConfig};
use serde_json::json;

use crate::Effort;
use crate::spawn_bench::raw_bash_true;
use crate::stats::{measure, spread};
use crate::table::Row;

/// The target: a session call at least this many times faster.
const TARGET_SPEEDUP: f64 = 10.0;

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let baseline = raw_bash_true(effort).await?;
    let session = Session::new(SessionConfig::default())?;
    let tool = BashTool::new(
        ToolConfig {
            persistent_session: true,
            ..ToolConfig::default()
        },
        Arc::new(session.clone()),
    );
    // The warm-up also starts the session's shell, which the first call pays for.
    let ours = measure(50, effort.runs(1000), || async {
        let result = tool.call(json!({"command": "true"})).await;
        assert!(!result.is_error, "{}", result.text());
    })
    .await;
    session.shutdown().await?;
    let speedup = baseline.median().as_secs_f64() / ours.median().as_secs_f64();
    Ok(vec![Row {
        number: "2",
        what: "session call of `true` through the whole tool".into(),
        ours: spread(&ours),
        baseline: format!("`bash -c true` via tokio: {}", spread(&baseline)),
        ratio: format!("{speedup:.1}× faster"),
        target: "≥ 10× faster",
        met: Some(speedup >= TARGET_SPEEDUP),
    }])
}
