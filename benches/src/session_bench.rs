//! Item 2: a call of `true` through the tool on a persistent session,
//! against spawning `bash -c true` directly (the same baseline as item 1,
//! measured again, call for call in turns with the session's).

use std::sync::Arc;

use bashtool_core::{BashTool, ToolConfig};
use bashtool_env_local::{Session, SessionConfig};
use serde_json::json;

use crate::Effort;
use crate::spawn_bench::bash_true_once;
use crate::stats::{Samples, measure, measure_interleaved, spread};
use crate::table::Row;

/// The target: a session call at least this many times faster.
const TARGET_SPEEDUP: f64 = 10.0;

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let session = Session::new(SessionConfig::default())?;
    let tool = BashTool::new(
        ToolConfig {
            persistent_session: true,
            ..ToolConfig::default()
        },
        Arc::new(session.clone()),
    );
    let call = || async {
        let result = tool.call(json!({"command": "true"})).await;
        assert!(!result.is_error, "{}", result.text());
    };
    // Two ways, because they disagree on this machine: in turns with the
    // baseline (both see the same load, but the shell must be woken after
    // each spawn, as after an agent's pause), and back to back after the
    // baseline's own block (the shell stays hot, as in a batch). The warm-up
    // also starts the session's shell, which the first call pays for.
    let (baseline, interleaved) =
        measure_interleaved(50, effort.runs(1000), bash_true_once, call).await;
    let block_baseline = measure(20, effort.runs(1000), bash_true_once).await;
    let back_to_back = measure(50, effort.runs(1000), call).await;
    session.shutdown().await?;
    Ok(vec![
        row(
            "in turns with the baseline, call for call",
            &interleaved,
            &baseline,
        ),
        row(
            "back to back, baseline in the block before",
            &back_to_back,
            &block_baseline,
        ),
    ])
}

fn row(how: &str, ours: &Samples, baseline: &Samples) -> Row {
    let speedup = baseline.median().as_secs_f64() / ours.median().as_secs_f64();
    Row {
        number: "2",
        what: format!("session call of `true` through the whole tool, {how}"),
        ours: spread(ours),
        baseline: format!("`bash -c true` via tokio: {}", spread(baseline)),
        ratio: format!("{speedup:.1}× faster"),
        target: "≥ 10× faster",
        met: Some(speedup >= TARGET_SPEEDUP),
    }
}
