//! Item 7: MCP round trips of `echo hi` over stdio, calls per second, for
//! `bashtool mcp` (session and `--stateless`) against other MCP shell
//! servers, with the same client in the same run.

use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::Effort;
use crate::mcp_client::McpServer;
use crate::servers;
use crate::stats::Samples;
use crate::table::Row;

/// Calls in flight at once in the parallel rows: an agent's parallel tool
/// calls on one connection.
const PARALLEL: usize = 8;
/// Unmeasured calls per server before the runs (process start-up, JIT, caches).
const WARMUP_CALLS: usize = 20;

/// One server in the comparison and what was measured on it.
struct Contender {
    label: String,
    server: Result<McpServer, String>,
    sequential: Vec<Duration>,
    parallel: Vec<Duration>,
}

impl Contender {
    async fn start(label: String, spec: anyhow::Result<crate::mcp_client::ServerSpec>) -> Self {
        let server = match spec {
            Ok(spec) => match McpServer::start(&spec).await {
                Ok(server) => Ok(server),
                Err(error) => Err(format!("could not be run: {error:#}")),
            },
            Err(error) => Err(format!("{error:#}")),
        };
        Self {
            label,
            server,
            sequential: Vec::new(),
            parallel: Vec::new(),
        }
    }

    fn name(&self) -> &str {
        &self.label
    }

    /// Runs `body` on the server if it still works; a failure takes it out
    /// of the comparison with the reason, instead of ending the suite.
    async fn measure(&mut self, calls: usize, parallel: bool) {
        let Ok(server) = &self.server else { return };
        let start = Instant::now();
        let outcome = if parallel {
            run_parallel(server, calls).await
        } else {
            run_sequential(server, calls).await
        };
        match outcome {
            Ok(()) if parallel => self.parallel.push(start.elapsed()),
            Ok(()) => self.sequential.push(start.elapsed()),
            Err(error) => {
                if let Ok(server) = std::mem::replace(
                    &mut self.server,
                    Err(format!("failed during the run: {error:#}")),
                ) {
                    server.stop().await;
                }
            }
        }
    }

    /// `1234 calls/s (min–max)`, or why there is no number.
    fn cell(&self, calls: usize, parallel: bool) -> (String, Option<f64>) {
        let durations = if parallel {
            &self.parallel
        } else {
            &self.sequential
        };
        match &self.server {
            Err(reason) => (format!("{}: {reason}", self.name()), None),
            Ok(_) if durations.is_empty() => (format!("{}: no runs", self.name()), None),
            Ok(_) => {
                let samples = Samples::from_durations(durations.clone());
                let rate = |duration: Duration| calls as f64 / duration.as_secs_f64();
                let median = rate(samples.median());
                (
                    format!(
                        "{}: {median:.0} calls/s ({:.0}–{:.0})",
                        self.name(),
                        rate(samples.max()),
                        rate(samples.min())
                    ),
                    Some(median),
                )
            }
        }
    }
}

async fn run_sequential(server: &McpServer, calls: usize) -> anyhow::Result<()> {
    for _ in 0..calls {
        server.echo().await?;
    }
    Ok(())
}

/// `calls` calls, `PARALLEL` in flight at all times on the one connection.
async fn run_parallel(server: &McpServer, calls: usize) -> anyhow::Result<()> {
    let mut lanes = JoinSet::new();
    for lane in 0..PARALLEL {
        let peer = server.peer();
        let call = server.echo_call();
        let share = calls / PARALLEL + usize::from(lane < calls % PARALLEL);
        lanes.spawn(async move {
            for _ in 0..share {
                call.run(&peer).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(lane) = lanes.join_next().await {
        lane??;
    }
    Ok(())
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let calls = if effort.quick { 80 } else { 400 };
    let runs = effort.runs(7);

    let mut ours = Vec::new();
    for stateless in [false, true] {
        let spec = servers::bashtool(stateless);
        let label = spec
            .as_ref()
            .map_or_else(|_| "bashtool".to_owned(), |spec| spec.label.clone());
        ours.push(Contender::start(label, spec).await);
    }
    let mut others = Vec::new();
    for (label, spec) in servers::comparators() {
        others.push(Contender::start(label, spec).await);
    }

    for contender in ours.iter_mut().chain(others.iter_mut()) {
        contender.measure(WARMUP_CALLS, false).await;
        contender.measure(WARMUP_CALLS, true).await;
        contender.sequential.clear();
        contender.parallel.clear();
    }
    // Runs take turns across servers so that all see the same load on a
    // shared machine.
    for _ in 0..runs {
        for parallel in [false, true] {
            for contender in ours.iter_mut().chain(others.iter_mut()) {
                contender.measure(calls, parallel).await;
            }
        }
    }

    let mut rows = Vec::new();
    for parallel in [false, true] {
        let baseline_cells: Vec<(String, Option<f64>)> = others
            .iter()
            .map(|other| other.cell(calls, parallel))
            .collect();
        let fastest = others
            .iter()
            .zip(&baseline_cells)
            .filter_map(|(other, (_, rate))| rate.map(|rate| (other.name(), rate)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let baseline = baseline_cells
            .iter()
            .map(|(text, _)| text.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        for contender in &ours {
            let (text, rate) = contender.cell(calls, parallel);
            let (ratio, met) = match (rate, fastest) {
                (Some(rate), Some((name, best))) => {
                    (format!("{:.1}× {name}", rate / best), Some(rate > best))
                }
                (_, None) => ("no comparator ran".into(), None),
                (None, Some(_)) => ("—".into(), Some(false)),
            };
            rows.push(Row {
                number: "7",
                what: format!(
                    "MCP stdio round trip of `echo hi`, {}, {calls} calls a run, {}",
                    if parallel {
                        format!("{PARALLEL} in flight on one connection")
                    } else {
                        "sequential".into()
                    },
                    contender.label
                ),
                ours: text,
                baseline: baseline.clone(),
                ratio,
                target: "more calls/s than every server compared",
                met,
            });
        }
    }

    for contender in ours.into_iter().chain(others) {
        if let Ok(server) = contender.server {
            server.stop().await;
        }
    }
    Ok(rows)
}
