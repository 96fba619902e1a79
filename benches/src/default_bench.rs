//! Item 12: the default is fast (issue 33). A stateless call of `true`
//! end to end through `bashtool mcp --stateless` (the rmcp client in this
//! process, stdio, the real binary), in three servers taking turns call
//! for call, in rounds:
//!
//! - the default: the sandbox on (workspace-write);
//! - `--sandbox off`: what the sandbox is measured against;
//! - `--remote '<bashtool> serve'`: the same call through a local `bashtool
//!   serve` over a pipe (default sandbox over there), against the default
//!   local server.
//!
//! Every server runs in a fresh directory of its own, which is its
//! workspace and holds its state (`mcp_client::isolate`); the remote
//! server's `serve` inherits both.

use std::time::{Duration, Instant};

use crate::effort::Effort;
use crate::mcp_client::{McpServer, ServerSpec};
use crate::rounds::{Plan, Ratios, percent};
use crate::servers::bashtool_binary;
use crate::stats::{Samples, human, spread};
use crate::table::Row;

/// Issue 33's targets: the sandbox adds at most 10% to a stateless MCP
/// call, and a remote one over a local pipe at most 0.5 ms.
const SANDBOX_TARGET: f64 = 1.10;
const REMOTE_TARGET: Duration = Duration::from_micros(500);

/// The command of every call.
const COMMAND: &str = "true";

fn spec(label: &str, extra: &[String]) -> anyhow::Result<ServerSpec> {
    let mut args = vec!["mcp".to_owned(), "--stateless".to_owned()];
    args.extend(extra.iter().cloned());
    Ok(ServerSpec {
        label: label.to_owned(),
        program: bashtool_binary()?,
        args,
        env: Vec::new(),
    })
}

async fn call(server: &McpServer) -> anyhow::Result<Duration> {
    let start = Instant::now();
    server.run_command(COMMAND).await?;
    Ok(start.elapsed())
}

/// `+120.0 µs` or `−50.0 µs` for a difference in seconds.
fn signed(seconds: f64) -> String {
    let sign = if seconds < 0.0 { "−" } else { "+" };
    format!("{sign}{}", human(Duration::from_secs_f64(seconds.abs())))
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let binary = bashtool_binary()?;
    let default = McpServer::start(&spec("default", &[])?).await?;
    let off =
        McpServer::start(&spec("--sandbox off", &["--sandbox".into(), "off".into()])?).await?;
    let remote_line = format!("exec {} serve", binary.display());
    let remote = McpServer::start(&spec("--remote", &["--remote".into(), remote_line])?).await?;
    let servers = [&default, &off, &remote];

    let plan = Plan::new(effort, 5, 10, 3);
    let per_round = effort.runs(200);
    let mut samples = [Samples::empty(), Samples::empty(), Samples::empty()];
    let (mut sandbox_cost, mut remote_ratio) = (Ratios::default(), Ratios::default());
    let mut remote_extra = Vec::new();
    let mut rounds = 0;
    while plan.another(rounds, [&sandbox_cost, &remote_ratio]) {
        let warmup = if rounds == 0 { 20 } else { 3 };
        for _ in 0..warmup {
            for server in servers {
                call(server).await?;
            }
        }
        let mut round: [Vec<Duration>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..per_round {
            for (index, server) in servers.iter().enumerate() {
                round[index].push(call(server).await?);
            }
        }
        let round = round.map(Samples::from_durations);
        sandbox_cost.push(round[0].ratio_to(&round[1]));
        remote_ratio.push(round[2].ratio_to(&round[0]));
        remote_extra.push(round[2].median().as_secs_f64() - round[0].median().as_secs_f64());
        for (all, this) in samples.iter_mut().zip(&round) {
            all.extend(this);
        }
        rounds += 1;
    }
    default.stop().await;
    off.stop().await;
    remote.stop().await;

    let [sandboxed, unsandboxed, over_pipe] = samples;
    let cost = sandbox_cost.median().unwrap_or(f64::NAN);
    let extra = crate::rounds::median(&remote_extra).unwrap_or(f64::NAN);
    let (low, high) = remote_extra
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), value| {
            (low.min(*value), high.max(*value))
        });
    let what = |rest: &str| {
        format!(
            "stateless MCP call of `true` through `bashtool mcp --stateless` (rmcp client, stdio), {rest}"
        )
    };
    Ok(vec![
        Row {
            number: "12",
            what: what("default sandbox (workspace-write)"),
            ours: spread(&sandboxed),
            baseline: format!("`--sandbox off`, in turns: {}", spread(&unsandboxed)),
            ratio: format!(
                "{} for the sandbox ({})",
                percent(cost),
                sandbox_cost.summary(percent)
            ),
            target: "≤ 10% more",
            met: Some(cost <= SANDBOX_TARGET),
        },
        Row {
            number: "12",
            what: what(
                "`--remote` to a local `bashtool serve` over a pipe (default sandbox there)",
            ),
            ours: spread(&over_pipe),
            baseline: format!("the default local server, in turns: {}", spread(&sandboxed)),
            ratio: format!(
                "{} per call (median of the rounds' differences of medians, {} to {}; {:.2}× the local time, {})",
                signed(extra),
                signed(low),
                signed(high),
                remote_ratio.median().unwrap_or(f64::NAN),
                remote_ratio.summary(|ratio| format!("{ratio:.2}×"))
            ),
            target: "≤ 0.5 ms more",
            met: Some(extra <= REMOTE_TARGET.as_secs_f64()),
        },
    ])
}
