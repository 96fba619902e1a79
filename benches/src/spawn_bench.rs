//! Items 1 and 2: the cost of a call of `true` through the tool, against
//! spawning `bash -c true` directly.

use std::process::Stdio;
use std::sync::Arc;

use bashtool_core::{BashTool, ToolConfig};
use bashtool_env_local::{LocalConfig, LocalExec};
use serde_json::json;

use crate::effort::Effort;
use crate::rounds::{Plan, Ratios, percent};
use crate::stats::{Samples, measure_interleaved, spread};
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

/// The tool on a local environment with `sandbox` (and the default
/// limits: a `pids` cgroup per call where cgroups can be had).
fn tool(sandbox: bashtool_sandbox::SandboxMode) -> BashTool {
    tool_with(sandbox, bashtool_core::LimitSettings::default())
}

/// The tool on a local environment with `sandbox` and `limits`.
fn tool_with(
    sandbox: bashtool_sandbox::SandboxMode,
    limits: bashtool_core::LimitSettings,
) -> BashTool {
    let config = LocalConfig {
        limits,
        confinement: bashtool_sandbox::SandboxConfig {
            mode: sandbox,
            ..bashtool_sandbox::SandboxConfig::default()
        }
        .confinement(),
        ..LocalConfig::default()
    };
    BashTool::new(ToolConfig::default(), Arc::new(LocalExec::new(config)))
}

/// One call of `true` through `tool`.
async fn call_true(tool: &BashTool) {
    let result = tool.call(json!({"command": "true"})).await;
    assert!(!result.is_error, "{}", result.text());
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    use bashtool_sandbox::SandboxMode;
    let plain = tool(SandboxMode::Off);
    let sandboxed = tool(SandboxMode::WorkspaceWrite);
    // Row 1l: what the default `pids` limit (a cgroup per call) adds.
    let unlimited = tool_with(
        SandboxMode::Off,
        bashtool_core::LimitSettings::parse_items(["pids=off"]).expect("valid limits"),
    );
    let limits_active = bashtool_env_local::limits_info(&bashtool_core::LimitSettings::default())
        .is_ok_and(|info| info.enforced_by.is_some());
    // Rounds of call-for-call turns, so that load drifts hit both sides of a
    // ratio alike: `bash -c true` against the tool, the tool against the
    // tool in the sandbox.
    // Five rounds at least: a row whose target is a few percent needs the
    // median of several rounds; one round's ratio moves by ±3% here.
    let plan = Plan::new(effort, 5, 10, 3);
    let per_round = effort.runs(200);
    let (mut baseline, mut ours) = (Samples::empty(), Samples::empty());
    let (mut unsandboxed, mut in_sandbox) = (Samples::empty(), Samples::empty());
    let (mut without_limits, mut with_limits) = (Samples::empty(), Samples::empty());
    let (mut overhead, mut sandbox_cost) = (Ratios::default(), Ratios::default());
    let mut limits_cost = Ratios::default();
    let mut rounds = 0;
    while plan.another(
        rounds,
        [&overhead, &sandbox_cost]
            .into_iter()
            .chain(limits_active.then_some(&limits_cost)),
    ) {
        let warmup = if rounds == 0 { 20 } else { 3 };
        let (base, tool) =
            measure_interleaved(warmup, per_round, bash_true_once, || call_true(&plain)).await;
        overhead.push(tool.ratio_to(&base));
        baseline.extend(&base);
        ours.extend(&tool);
        let (tool, boxed) = measure_interleaved(
            warmup,
            per_round,
            || call_true(&plain),
            || call_true(&sandboxed),
        )
        .await;
        sandbox_cost.push(boxed.ratio_to(&tool));
        unsandboxed.extend(&tool);
        in_sandbox.extend(&boxed);
        if limits_active {
            let (off, limited) = measure_interleaved(
                warmup,
                per_round,
                || call_true(&unlimited),
                || call_true(&plain),
            )
            .await;
            limits_cost.push(limited.ratio_to(&off));
            without_limits.extend(&off);
            with_limits.extend(&limited);
        }
        rounds += 1;
    }
    let overhead_median = overhead.median().unwrap_or(f64::NAN);
    let limits_median = limits_cost.median().unwrap_or(f64::NAN);
    let limits_row = limits_active.then(|| Row {
        number: "1l",
        what: "the same call (no sandbox) under the default `pids` limit: a cgroup per call".into(),
        ours: spread(&with_limits),
        baseline: format!("`--limit pids=off`, in turns: {}", spread(&without_limits)),
        ratio: format!(
            "{} for the limit ({})",
            percent(limits_median),
            limits_cost.summary(percent)
        ),
        target: "≤ 10% more",
        met: Some(limits_median <= SANDBOX_TARGET),
    });
    let mut rows = vec![
        Row {
            number: "1",
            what: "stateless call of `true` through the whole tool (no sandbox)".into(),
            ours: spread(&ours),
            baseline: format!("`bash -c true` via tokio: {}", spread(&baseline)),
            ratio: format!(
                "{} overhead ({})",
                percent(overhead_median),
                overhead.summary(percent)
            ),
            target: "overhead ≤ 10%",
            met: Some(overhead_median <= 1.10),
        },
        sandbox_cost_row(
            "1s",
            "the same call in the default sandbox (workspace-write)",
            "unsandboxed",
            &in_sandbox,
            &unsandboxed,
            &sandbox_cost,
        ),
    ];
    rows.extend(limits_row);
    Ok(rows)
}

/// Issue #13's target: a sandboxed call costs at most this much more than
/// the same call without a sandbox (rows 1s and 2s).
const SANDBOX_TARGET: f64 = 1.10;

/// A row of what the sandbox adds: `ours` sandboxed against `baseline`,
/// the same calls without a sandbox, in turns; `costs` per round.
pub fn sandbox_cost_row(
    number: &'static str,
    what: &str,
    baseline_name: &str,
    ours: &Samples,
    baseline: &Samples,
    costs: &Ratios,
) -> Row {
    let median = costs.median().unwrap_or(f64::NAN);
    Row {
        number,
        what: what.into(),
        ours: spread(ours),
        baseline: format!("{baseline_name}, in turns: {}", spread(baseline)),
        ratio: format!(
            "{} for the sandbox ({})",
            percent(median),
            costs.summary(percent)
        ),
        target: "≤ 10% more",
        met: Some(median <= SANDBOX_TARGET),
    }
}
