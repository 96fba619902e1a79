//! Item 2: a call of `true` through the tool on a persistent session (in
//! the default sandbox, as `bashtool mcp` runs it), against spawning
//! `bash -c true` directly (the same baseline as item 1, measured again,
//! call for call in turns with the session's); row 2s: what the sandbox
//! adds to that session call.

use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{BashTool, ToolConfig};
use bashtool_env_local::{Session, SessionConfig};
use serde_json::json;

use crate::Effort;
use crate::cpu;
use crate::rounds::{Plan, Ratios, in_turns, percent};
use crate::spawn_bench::{SANDBOX_TARGET, bash_true_once, sandbox_cost_row};
use crate::stats::{Samples, human, measure, spread};
use crate::table::Row;

/// The target: a session call at least this many times faster.
const TARGET_SPEEDUP: f64 = 10.0;

/// The tool on `session`, as `bashtool mcp` makes it.
fn session_tool(session: &Session) -> BashTool {
    BashTool::new(
        ToolConfig {
            persistent_session: true,
            ..ToolConfig::default()
        },
        Arc::new(session.clone()),
    )
}

/// One call of `true` through `tool`.
async fn call_true(tool: &BashTool) {
    let result = tool.call(json!({"command": "true"})).await;
    assert!(!result.is_error, "{}", result.text());
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    // On a worker of the runtime, as the MCP server runs its handlers:
    // from the thread that blocks on the runtime (the rest of the suite),
    // every event also has to wake that thread from a worker (~60 µs more
    // per call in turns, measured).
    let mut rows = tokio::spawn(session_rows(effort)).await??;
    rows.extend(tokio::spawn(sandbox_rows(effort)).await??);
    Ok(rows)
}

/// Row 2's three lines, on a session of their own.
async fn session_rows(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let session = Session::new(SessionConfig::default())?;
    let tool = session_tool(&session);
    let call = || call_true(&tool);
    // Two ways, because they disagree on this machine: in turns with the
    // baseline (both see the same load, but the shell must be woken after
    // each spawn, as after an agent's pause), in rounds until two agree; and
    // back to back after the baseline's own block (the shell stays hot, as
    // in a batch). The first warm-up also starts the session's shell, which
    // the first call pays for.
    let (baseline, interleaved, speedups) = in_turns(
        Plan::new(effort, 3, 6, 3),
        (50, 5),
        effort.runs(300),
        bash_true_once,
        call,
        Samples::ratio_to,
    )
    .await;
    let block_baseline = measure(20, effort.runs(1000), bash_true_once).await;
    let back_to_back = measure(50, effort.runs(1000), call).await;
    let cpu = cpu_row(effort, &session, call).await;
    session.shutdown().await?;
    Ok(vec![
        row(
            "in turns with the baseline, call for call",
            &interleaved,
            &baseline,
            Some(&speedups),
        ),
        row(
            "back to back, baseline in the block before",
            &back_to_back,
            &block_baseline,
            None,
        ),
        cpu,
    ])
}

/// Row 2s: what the default sandbox (workspace-write) adds to the session
/// call above, against the same call on a session without a sandbox.
///
/// Judged on CPU time (this process + the shell), in rounds taking turns:
/// wall time measures where the scheduler put each shell as much as the
/// sandbox (the shell woken on the caller's CPU answers ~40% faster,
/// whichever is sandboxed: rounds from -21% to +43% on 2 cores), while the
/// sandbox's own cost, its seccomp filter and Landlock's checks on the
/// shell's ~30 system calls, is CPU time wherever it runs. Wall time, in
/// turns call for call, is reported beside it.
async fn sandbox_rows(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let boxed_session = Session::new(SessionConfig::default())?;
    let sandboxed = &session_tool(&boxed_session);
    let mut config = SessionConfig::default();
    config.local.sandbox.mode = bashtool_env_local::SandboxMode::Off;
    let session = Session::new(config)?;
    let unsandboxed = &session_tool(&session);
    // Both shells started (the first call starts a session's shell).
    call_true(unsandboxed).await;
    call_true(sandboxed).await;
    let (Some(plain_shell), Some(boxed_shell)) =
        (session.shell_pid().await, boxed_session.shell_pid().await)
    else {
        anyhow::bail!("a session has no shell after a call");
    };
    let calls = effort.runs(2000);
    let plan = Plan::new(effort, 3, 8, 3);
    let (mut plain_cpu, mut boxed_cpu) = (Duration::ZERO, Duration::ZERO);
    let mut costs = Ratios::default();
    while plan.another(costs.len(), [&costs]) {
        let plain = cpu_per_call(plain_shell, calls, || call_true(unsandboxed)).await;
        let boxed = cpu_per_call(boxed_shell, calls, || call_true(sandboxed)).await;
        costs.push(boxed.as_secs_f64() / plain.as_secs_f64().max(1e-12));
        plain_cpu += plain;
        boxed_cpu += boxed;
    }
    let rounds = costs.len().max(1) as u32;
    let median = costs.median().unwrap_or(f64::NAN);
    let cpu = Row {
        number: "2s",
        what: format!(
            "CPU time of the same session call in the default sandbox (workspace-write), this process + the shell, rounds of {calls} calls each way"
        ),
        ours: human(boxed_cpu / rounds),
        baseline: format!(
            "unsandboxed session, in turns: {}",
            human(plain_cpu / rounds)
        ),
        ratio: format!(
            "{} for the sandbox ({})",
            percent(median),
            costs.summary(percent)
        ),
        target: "≤ 10% more",
        met: Some(median <= SANDBOX_TARGET),
    };
    let (plain, boxed, wall_costs) = in_turns(
        Plan::new(effort, 3, 3, 2),
        (50, 5),
        effort.runs(300),
        || call_true(unsandboxed),
        || call_true(sandboxed),
        |without, with| with.ratio_to(without),
    )
    .await;
    session.shutdown().await?;
    boxed_session.shutdown().await?;
    let mut wall = sandbox_cost_row(
        "2s",
        "wall time of the same, call for call (which CPU each shell runs on decides as much: a report)",
        "unsandboxed session",
        &boxed,
        &plain,
        &wall_costs,
    );
    wall.met = None;
    wall.target = "report";
    Ok(vec![cpu, wall])
}

/// CPU time per call of `calls` calls: this process's and the shell's.
async fn cpu_per_call<F, Fut>(shell: u32, calls: usize, call: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let (here, in_shell) = (cpu::this_process(), cpu::of_single_thread(shell));
    for _ in 0..calls {
        call().await;
    }
    let spent = cpu::this_process().saturating_sub(here)
        + cpu::of_single_thread(shell).saturating_sub(in_shell);
    spent / calls.max(1) as u32
}

/// CPU time per call: ours and the shells', for the baseline and the session.
async fn cpu_row<F, Fut>(effort: Effort, session: &Session, call: F) -> Row
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let calls = effort.runs(3000) as u32;
    let before = cpu::this_process() + cpu::reaped_children();
    for _ in 0..calls {
        bash_true_once().await;
    }
    let baseline = (cpu::this_process() + cpu::reaped_children()).saturating_sub(before) / calls;

    let shell = session.shell_pid().await;
    let shell_cpu = || shell.map_or(Duration::ZERO, cpu::of_single_thread);
    let (before, shell_before) = (cpu::this_process(), shell_cpu());
    for _ in 0..calls {
        call().await;
    }
    let here = cpu::this_process().saturating_sub(before) / calls;
    let in_shell = shell_cpu().saturating_sub(shell_before) / calls;
    let ours = here + in_shell;
    let speedup = baseline.as_secs_f64() / ours.as_secs_f64().max(1e-9);
    Row {
        number: "2",
        what: format!(
            "CPU time of a session call of `true` (this process + the shells), {calls} calls"
        ),
        ours: format!(
            "{} ({} here + {} in the shell)",
            human(ours),
            human(here),
            human(in_shell)
        ),
        baseline: format!("`bash -c true` via tokio: {}", human(baseline)),
        ratio: format!("{speedup:.1}× less"),
        target: "≥ 10× faster",
        met: Some(speedup >= TARGET_SPEEDUP),
    }
}

/// A wall-time row; `rounds`, when measured in rounds, gives the speedup
/// (the median of the rounds') and its spread.
fn row(how: &str, ours: &Samples, baseline: &Samples, rounds: Option<&Ratios>) -> Row {
    let speedup = rounds
        .and_then(Ratios::median)
        .unwrap_or_else(|| baseline.ratio_to(ours));
    let spread_of_rounds = rounds.map_or_else(String::new, |rounds| {
        format!(" ({})", rounds.summary(|ratio| format!("{ratio:.1}×")))
    });
    Row {
        number: "2",
        what: format!("session call of `true` through the whole tool on a runtime worker, {how}"),
        ours: spread(ours),
        baseline: format!("`bash -c true` via tokio: {}", spread(baseline)),
        ratio: format!("{speedup:.1}× faster{spread_of_rounds}"),
        target: "≥ 10× faster",
        met: Some(speedup >= TARGET_SPEEDUP),
    }
}
