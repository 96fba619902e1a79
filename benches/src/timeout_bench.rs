//! Item 4: from a timeout's deadline to the call's return, with the tree
//! stopped; for a command that exits on SIGTERM and one that ignores it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bashtool_core::{BashTool, ToolConfig};
use bashtool_env_local::{LocalConfig, LocalExec};
use serde_json::json;

use crate::effort::Effort;
use crate::stats::{Samples, spread};
use crate::table::Row;

const TIMEOUT: Duration = Duration::from_secs(1);
const GRACE: Duration = Duration::from_millis(500);

async fn lateness(tool: &BashTool, command: &str, runs: usize, expected: Duration) -> Samples {
    let mut durations = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let result = tool.call(json!({"command": command, "timeout": 1})).await;
        assert!(result.details.timed_out, "{}", result.text());
        durations.push(start.elapsed().saturating_sub(expected));
    }
    Samples::from_durations(durations)
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let config = LocalConfig {
        kill_grace: GRACE,
        ..LocalConfig::default()
    };
    let tool = BashTool::new(ToolConfig::default(), Arc::new(LocalExec::new(config)));
    let runs = effort.runs(10);
    let polite = lateness(&tool, "sleep 30 & sleep 30; wait", runs, TIMEOUT).await;
    let stubborn = lateness(
        &tool,
        "trap '' TERM; sleep 30 & sleep 30; wait",
        runs,
        TIMEOUT + GRACE,
    )
    .await;
    let limit = Duration::from_millis(50);
    Ok(vec![
        Row {
            number: "4",
            what: "timeout deadline → return, command exits on SIGTERM".into(),
            ours: spread(&polite),
            baseline: "—".into(),
            ratio: "—".into(),
            target: "< 50 ms",
            met: Some(polite.median() < limit),
        },
        Row {
            number: "4",
            what: format!(
                "timeout deadline → return, command ignores SIGTERM (grace {} ms)",
                GRACE.as_millis()
            ),
            ours: spread(&stubborn),
            baseline: format!("grace {} ms (subtracted)", GRACE.as_millis()),
            ratio: "—".into(),
            target: "grace + < 50 ms",
            met: Some(stubborn.median() < limit),
        },
    ])
}
