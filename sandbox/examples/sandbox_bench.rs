//! Prints what the sandbox costs per launch: launch + wait of `bash -c
//! true` unsandboxed and sandboxed, through the one launch path,
//! interleaved, medians of many rounds. Numbers only, nothing asserted.
//! `cargo run --release -p bashtool-sandbox --example sandbox_bench [rounds]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use bashtool_process::{ChildIo, Launch, Wrapper, launch};
use bashtool_sandbox::{NetworkMode, Sandbox, SandboxConfig, SandboxMode};

/// One launch of `bash -c true` with `wrappers`, waited for.
fn launched(wrappers: &[Arc<dyn Wrapper>]) -> Duration {
    let start = Instant::now();
    let command = Launch {
        argv: vec!["bash".into(), "-c".into(), "true".into()],
        env: std::env::vars_os().collect(),
        cwd: std::env::temp_dir(),
    };
    let launched = launch(command, wrappers, ChildIo::null(), None).expect("launch");
    let status = launched.root.wait_blocking();
    assert_eq!(status, bashtool_process::ExitStatus::Code(0));
    start.elapsed()
}

/// The median and the 10th percentile (the machine is shared: the low
/// percentile shows the cost without the neighbours' noise).
fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    (samples[samples.len() / 2], samples[samples.len() / 10])
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(300);
    let workspace = tempfile::tempdir().expect("workspace");
    let state = workspace.path().join("state");
    let build = |mode, network| {
        let config = SandboxConfig {
            mode,
            network,
            ..SandboxConfig::default()
        };
        let start = Instant::now();
        let sandbox = Sandbox::new(&config, workspace.path(), Some(&state)).expect("sandbox");
        (vec![sandbox as Arc<dyn Wrapper>], start.elapsed())
    };
    let (workspace_write, built) = build(SandboxMode::WorkspaceWrite, NetworkMode::On);
    let (network_off, built_off) = build(SandboxMode::WorkspaceWrite, NetworkMode::Off);
    let (read_only, _) = build(SandboxMode::ReadOnly, NetworkMode::On);
    let plans: [(&str, &[Arc<dyn Wrapper>]); 4] = [
        ("unsandboxed", &[]),
        ("workspace-write, network on", &workspace_write),
        ("workspace-write, network off", &network_off),
        ("read-only, network on", &read_only),
    ];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); plans.len()];
    for _ in 0..rounds {
        for ((_, wrappers), samples) in plans.iter().zip(&mut samples) {
            samples.push(launched(wrappers));
        }
    }
    let results: Vec<(Duration, Duration)> = samples.into_iter().map(percentiles).collect();
    let percent =
        |value: Duration, base: Duration| (value.as_secs_f64() / base.as_secs_f64() - 1.0) * 100.0;
    println!("bash -c true, launch + wait, {rounds} interleaved rounds");
    println!("| launch | median | p10 | p10 vs unsandboxed |");
    println!("|---|---|---|---|");
    for ((name, _), &(median, low)) in plans.iter().zip(&results) {
        println!(
            "| {name} | {:.3} ms | {:.3} ms | {:+.1}% |",
            median.as_secs_f64() * 1e3,
            low.as_secs_f64() * 1e3,
            percent(low, results[0].1),
        );
    }
    println!(
        "Sandbox::new: {:.2} ms (network on), {:.2} ms (network off)",
        built.as_secs_f64() * 1e3,
        built_off.as_secs_f64() * 1e3
    );
}
