//! Item 9: from the moment a program starts reading the terminal to the
//! interactive job's snapshot saying `awaiting_input`. The program writes
//! the wall-clock time into a file just before its read (bash's
//! `$EPOCHREALTIME`, a builtin: no fork in between; Python's `time.time()`
//! before `input()`, which waits in `select` through readline), and the
//! time is compared with the clock when the snapshot returns.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bashtool_env_local::{
    InteractiveJob, InteractiveOptions, InteractiveState, LocalConfig, PROBE_INTERVAL,
    interactive_launch,
};
use bashtool_process::RunMarker;

use crate::effort::Effort;
use crate::rounds::{Plan, Ratios};
use crate::stats::{Samples, spread};
use crate::table::Row;

const PATIENCE: Duration = Duration::from_secs(20);

async fn latency(command: &str, stamp: &Path, runs: usize) -> anyhow::Result<Samples> {
    let mut durations = Vec::with_capacity(runs);
    for _ in 0..runs {
        let _ = std::fs::remove_file(stamp);
        let marker = RunMarker::new();
        let launch = interactive_launch(
            &LocalConfig::default(),
            command,
            Path::new("/tmp"),
            &BTreeMap::new(),
            &marker,
        );
        let mut job =
            InteractiveJob::start(launch.clone(), &[], marker, InteractiveOptions::default())?;
        let snapshot = job.wait_until(tokio::time::Instant::now() + PATIENCE).await;
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64();
        job.stop().await;
        anyhow::ensure!(
            snapshot.state == InteractiveState::AwaitingInput,
            "`{command}` was not seen waiting: {snapshot:?}"
        );
        let started: f64 = std::fs::read_to_string(stamp)?.trim().parse()?;
        durations.push(Duration::from_secs_f64((now - started).max(0.0)));
    }
    Ok(Samples::from_durations(durations))
}

/// Lines printed by the throughput run (`seq 1 N`, about 7.9 MB through the
/// terminal).
const FLOOD_LINES: u32 = 1_000_000;

/// Time for `seq 1 N` through an interactive job, to its exit.
async fn flood() -> anyhow::Result<Duration> {
    let marker = RunMarker::new();
    let launch = interactive_launch(
        &LocalConfig::default(),
        &format!("seq 1 {FLOOD_LINES}"),
        Path::new("/tmp"),
        &BTreeMap::new(),
        &marker,
    );
    let start = std::time::Instant::now();
    let mut job =
        InteractiveJob::start(launch.clone(), &[], marker, InteractiveOptions::default())?;
    let snapshot = job.wait_until(tokio::time::Instant::now() + PATIENCE).await;
    let elapsed = start.elapsed();
    anyhow::ensure!(
        matches!(snapshot.state, InteractiveState::Exited(_)),
        "the flood did not end: {:?}",
        snapshot.state
    );
    Ok(elapsed)
}

/// The same through `script`, a C program that copies a terminal to a pipe.
async fn flood_baseline() -> anyhow::Result<Duration> {
    let start = std::time::Instant::now();
    let status = tokio::process::Command::new("script")
        .args(["-qc", &format!("seq 1 {FLOOD_LINES}"), "/dev/null"])
        .stdout(std::process::Stdio::null())
        .stdin(std::process::Stdio::null())
        .status()
        .await?;
    let elapsed = start.elapsed();
    anyhow::ensure!(status.success(), "script failed: {status}");
    Ok(elapsed)
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let directory = tempfile::tempdir()?;
    let stamp = directory.path().join("stamp");
    let runs = effort.runs(20);
    let bash = latency(
        &format!("echo $EPOCHREALTIME > {}; read line", stamp.display()),
        &stamp,
        runs,
    )
    .await?;
    let python = latency(
        &format!(
            "python3 -c 'import time; open(\"{}\", \"w\").write(repr(time.time())); input(\"? \")'",
            stamp.display()
        ),
        &stamp,
        runs,
    )
    .await?;
    let limit = Duration::from_millis(500);
    // The baseline of a latency is the probe interval: a read is seen at
    // the next probe at the latest, so about 1× is the best possible.
    let row = |what: &str, samples: &Samples| Row {
        number: "9",
        what: what.to_owned(),
        ours: spread(samples),
        baseline: format!("probe every {} ms", PROBE_INTERVAL.as_millis()),
        ratio: format!(
            "{:.2}× the probe interval",
            samples.median().as_secs_f64() / PROBE_INTERVAL.as_secs_f64()
        ),
        target: "< 500 ms",
        met: Some(samples.median() < limit),
    };
    // Flood runs take turns with `script`, in rounds until two rounds'
    // ratios agree within 10%.
    let plan = Plan::new(effort, 3, 6, 3);
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    let mut ratios = Ratios::default();
    while plan.another(ratios.len(), [&ratios]) {
        let (here, there) = (flood().await?, flood_baseline().await?);
        ratios.push(here.as_secs_f64() / there.as_secs_f64().max(1e-9));
        ours.push(here);
        baseline.push(there);
    }
    let (ours, baseline) = (
        Samples::from_durations(ours),
        Samples::from_durations(baseline),
    );
    let ratio = ratios.median().unwrap_or(f64::NAN);
    Ok(vec![
        row(
            "interactive: read blocked → `awaiting_input` (bash `read`)",
            &bash,
        ),
        row(
            "interactive: read blocked → `awaiting_input` (Python `input`, select)",
            &python,
        ),
        Row {
            number: "9",
            what: format!("interactive: `seq 1 {FLOOD_LINES}` through the terminal, to exit"),
            ours: spread(&ours),
            baseline: format!("`script -qc` to /dev/null, in turns: {}", spread(&baseline)),
            ratio: format!(
                "{ratio:.2}× ({})",
                ratios.summary(|ratio| format!("{ratio:.2}×"))
            ),
            target: "—",
            met: None,
        },
    ])
}
