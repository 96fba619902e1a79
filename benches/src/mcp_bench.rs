//! Item 7: MCP round trips of `echo hi` over stdio, calls per second, for
//! `bashtool mcp` (session and `--stateless`) against other MCP shell
//! servers, each driven by three clients: rmcp (in this process), the
//! official Python SDK and the official TypeScript SDK (scripts in
//! `benches/clients/`). Every (client, server) pair has its own server
//! process; runs take turns across all pairs, sequential then 8 in flight,
//! in rounds until every row's ratio against the best peer (same client,
//! same mode, same round) agrees with the round before within 10%.

use std::time::Instant;

use tokio::task::JoinSet;

use crate::clients::{self, Client};
use crate::effort::Effort;
use crate::external_client::ExternalClient;
use crate::mcp_client::{EchoCall, McpServer, ServerSpec};
use crate::rounds::{Plan, Ratios};
use crate::servers;
use crate::table::Row;

/// Calls in flight at once in the parallel rows: an agent's parallel tool
/// calls on one connection.
const PARALLEL: usize = 8;
/// Unmeasured calls per pair before the rounds (process start-up, JIT,
/// caches), sequential and in parallel.
const WARMUP_CALLS: usize = 20;
/// The two modes, by index: sequential, then `PARALLEL` in flight.
const MODES: [usize; 2] = [1, PARALLEL];

/// How the calls of one (client, server) pair are made.
enum Driver {
    Rmcp(McpServer),
    External(ExternalClient),
}

impl Driver {
    /// Calls per second of one run, and for a script client its mean time
    /// per call and per schema validation.
    async fn run(
        &mut self,
        calls: usize,
        concurrency: usize,
    ) -> anyhow::Result<(f64, Option<(f64, Option<f64>)>)> {
        match self {
            Self::Rmcp(server) => {
                let start = Instant::now();
                if concurrency == 1 {
                    for _ in 0..calls {
                        server.echo().await?;
                    }
                } else {
                    run_parallel(server, calls, concurrency).await?;
                }
                Ok((calls as f64 / start.elapsed().as_secs_f64(), None))
            }
            Self::External(client) => {
                let measured = client.run(calls, concurrency).await?;
                Ok((
                    measured.calls_per_second,
                    Some((measured.call_ms, measured.validate_ms)),
                ))
            }
        }
    }

    async fn stop(self) {
        match self {
            Self::Rmcp(server) => server.stop().await,
            Self::External(client) => client.stop().await,
        }
    }
}

/// `calls` calls, `concurrency` in flight at all times on the one connection.
async fn run_parallel(server: &McpServer, calls: usize, concurrency: usize) -> anyhow::Result<()> {
    let mut lanes = JoinSet::new();
    for lane in 0..concurrency {
        let peer = server.peer();
        let call = server.echo_call();
        let share = calls / concurrency + usize::from(lane < calls % concurrency);
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

/// One (client, server) pair and what was measured on it, per mode.
struct Contender {
    client: usize,
    server: String,
    ours: bool,
    driver: Result<Driver, String>,
    rates: [Vec<f64>; 2],
    /// This round's rate, per mode.
    latest: [Option<f64>; 2],
    /// Script clients: mean ms per call and per validation, per run.
    call_ms: [Vec<f64>; 2],
    validate_ms: [Vec<f64>; 2],
}

impl Contender {
    fn new(client: usize, server: &str, ours: bool, driver: Result<Driver, String>) -> Self {
        Self {
            client,
            server: server.to_owned(),
            ours,
            driver,
            rates: [Vec::new(), Vec::new()],
            latest: [None, None],
            call_ms: [Vec::new(), Vec::new()],
            validate_ms: [Vec::new(), Vec::new()],
        }
    }

    /// One run in `mode`; a failure takes the pair out of the comparison with
    /// the reason, instead of ending the suite.
    async fn measure(&mut self, calls: usize, mode: usize, record: bool) {
        self.latest[mode] = None;
        let Ok(driver) = &mut self.driver else { return };
        match driver.run(calls, MODES[mode]).await {
            Ok((rate, client_times)) if record => {
                self.rates[mode].push(rate);
                self.latest[mode] = Some(rate);
                if let Some((call_ms, validate_ms)) = client_times {
                    self.call_ms[mode].push(call_ms);
                    if let Some(validate_ms) = validate_ms {
                        self.validate_ms[mode].push(validate_ms);
                    }
                }
            }
            Ok(_) => {}
            Err(error) => {
                if let Ok(driver) = std::mem::replace(
                    &mut self.driver,
                    Err(format!("failed during the run: {error:#}")),
                ) {
                    driver.stop().await;
                }
            }
        }
    }

    /// `1234 calls/s (1100–1300)`, or why there is no number.
    fn cell(&self, mode: usize) -> String {
        let rates = sorted(&self.rates[mode]);
        match (&self.driver, rates.first(), rates.last()) {
            (Err(reason), _, _) => reason.clone(),
            (Ok(_), Some(low), Some(high)) => {
                format!("{:.0} calls/s ({low:.0}–{high:.0})", rates[rates.len() / 2])
            }
            (Ok(_), _, _) => "no runs".into(),
        }
    }

    /// Where a call's time goes in a script client, sequential runs only
    /// (in parallel a call's time includes its wait for a lane).
    fn client_times(&self, mode: usize) -> Option<String> {
        if MODES[mode] != 1 {
            return None;
        }
        let call_ms = median(&self.call_ms[mode])?;
        Some(match median(&self.validate_ms[mode]) {
            Some(validate_ms) => format!(
                "; {call_ms:.2} ms per call in the client, {validate_ms:.3} ms of it validating the output schema"
            ),
            None => format!("; {call_ms:.2} ms per call in the client"),
        })
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

fn median(values: &[f64]) -> Option<f64> {
    sorted(values).get(values.len() / 2).copied()
}

/// Starts `client` on `spec`'s server; a script client calls the tool the
/// rmcp client found with `tools/list` (`call`).
async fn start(
    client: &Client,
    spec: &anyhow::Result<ServerSpec>,
    call: Option<&EchoCall>,
) -> Result<Driver, String> {
    let spec = spec.as_ref().map_err(|error| format!("{error:#}"))?;
    match &client.launcher {
        Err(reason) => Err(reason.clone()),
        Ok(None) => McpServer::start(spec)
            .await
            .map(Driver::Rmcp)
            .map_err(|error| format!("could not be run: {error:#}")),
        Ok(Some(launcher)) => {
            let call = call.ok_or("no shell tool found (the rmcp client could not list it)")?;
            ExternalClient::start(launcher, spec, call, PARALLEL)
                .await
                .map(Driver::External)
                .map_err(|error| format!("could not be run: {error:#}"))
        }
    }
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let calls = if effort.quick { 100 } else { 300 };
    let plan = Plan::new(effort, 3, 6, 3);
    let clients = clients::all();

    let mut servers: Vec<(String, bool, anyhow::Result<ServerSpec>)> = Vec::new();
    for stateless in [false, true] {
        let spec = servers::bashtool(stateless);
        let label = spec
            .as_ref()
            .map_or_else(|_| "bashtool".to_owned(), |spec| spec.label.clone());
        servers.push((label, true, spec));
    }
    for (label, spec) in servers::comparators() {
        servers.push((label, false, spec));
    }

    let mut contenders = Vec::new();
    for (label, ours, spec) in &servers {
        // rmcp first: it finds the server's shell tool for the scripts.
        let mut call = None;
        for (index, client) in clients.iter().enumerate() {
            let driver = start(client, spec, call.as_ref()).await;
            if let Ok(Driver::Rmcp(server)) = &driver {
                call = Some(server.echo_call());
            }
            contenders.push(Contender::new(index, label, *ours, driver));
        }
    }
    for contender in &mut contenders {
        for mode in 0..MODES.len() {
            contender.measure(WARMUP_CALLS, mode, false).await;
        }
    }

    // Every row's ratios, by (client, mode, index of the contender).
    let mut ratios: Vec<((usize, usize, usize), Ratios)> = Vec::new();
    for (index, contender) in contenders.iter().enumerate() {
        if contender.ours {
            for mode in 0..MODES.len() {
                ratios.push(((contender.client, mode, index), Ratios::default()));
            }
        }
    }
    let mut done = 0;
    while plan.another(done, ratios.iter().map(|(_, ratios)| ratios)) {
        // Turns across clients and servers, so that load drifts hit all.
        for mode in 0..MODES.len() {
            for contender in &mut contenders {
                contender.measure(calls, mode, true).await;
            }
        }
        for ((client, mode, index), row) in &mut ratios {
            let best_peer = contenders
                .iter()
                .filter(|other| !other.ours && other.client == *client)
                .filter_map(|other| other.latest[*mode])
                .max_by(f64::total_cmp);
            if let (Some(ours), Some(best)) = (contenders[*index].latest[*mode], best_peer) {
                row.push(ours / best);
            }
        }
        done += 1;
    }

    let rows = table_rows(&clients, &contenders, &ratios, calls);
    for contender in contenders {
        if let Ok(driver) = contender.driver {
            driver.stop().await;
        }
    }
    Ok(rows)
}

const TARGET: &str = "more calls/s than every server compared, same client";

fn table_rows(
    clients: &[Client],
    contenders: &[Contender],
    ratios: &[((usize, usize, usize), Ratios)],
    calls: usize,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for (client_index, client) in clients.iter().enumerate() {
        if let Err(reason) = &client.launcher {
            rows.push(Row {
                number: "7",
                what: format!(
                    "MCP stdio round trip of `echo hi`, client: {}",
                    client.label
                ),
                ours: reason.clone(),
                baseline: "—".into(),
                ratio: "—".into(),
                target: TARGET,
                met: None,
            });
            continue;
        }
        for (mode, concurrency) in MODES.iter().enumerate() {
            let peers = contenders
                .iter()
                .filter(|other| !other.ours && other.client == client_index);
            let baseline = peers
                .map(|peer| {
                    format!(
                        "{}: {}{}",
                        peer.server,
                        peer.cell(mode),
                        peer.client_times(mode).unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            for ((row_client, row_mode, index), row_ratios) in ratios {
                if *row_client != client_index || *row_mode != mode {
                    continue;
                }
                let ours = &contenders[*index];
                let (ratio, met) = match row_ratios.median() {
                    Some(median) => (
                        format!(
                            "{median:.2}× the best peer ({})",
                            row_ratios.summary(|ratio| format!("{ratio:.2}×"))
                        ),
                        Some(median > 1.0),
                    ),
                    None if ours.driver.is_err() => ("—".into(), Some(false)),
                    None => ("no peer ran".into(), None),
                };
                rows.push(Row {
                    number: "7",
                    what: format!(
                        "MCP stdio round trip of `echo hi`, {}, {calls} calls a run; client: {}; server: {}",
                        if *concurrency == 1 {
                            "sequential".to_owned()
                        } else {
                            format!("{concurrency} in flight on one connection")
                        },
                        client.label,
                        ours.server
                    ),
                    ours: format!(
                        "{}{}",
                        ours.cell(mode),
                        ours.client_times(mode).unwrap_or_default()
                    ),
                    baseline: baseline.clone(),
                    ratio,
                    target: TARGET,
                    met,
                });
            }
        }
    }
    rows
}
