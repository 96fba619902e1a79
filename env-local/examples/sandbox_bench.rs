//! Prints what the sandbox costs per launch: spawn + wait of `bash -c true`
//! unsandboxed and sandboxed, interleaved, medians of many rounds. Numbers
//! only, nothing asserted. `cargo run --release -p bashtool-env-local
//! --example sandbox_bench [rounds]`

#![allow(unsafe_code)]

use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bashtool_env_local::{Launch, NetworkMode, Sandbox, SandboxConfig, SandboxMode, SpawnWrapper};

fn command() -> Command {
    let mut command = Command::new("bash");
    command
        .args(["-c", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn posix_spawn() -> Duration {
    let start = Instant::now();
    command().process_group(0).status().expect("spawn");
    start.elapsed()
}

fn forked(wrapper: Option<Arc<dyn SpawnWrapper>>) -> Duration {
    let start = Instant::now();
    if let Some(wrapper) = &wrapper {
        // The parent's part of each launch (the mount namespace's check).
        let mut launch = Launch {
            argv: vec!["bash".into(), "-c".into(), "true".into()],
            env: Vec::new(),
            cwd: std::env::temp_dir(),
        };
        wrapper.wrap(&mut launch).expect("wrap");
    }
    let mut command = command();
    // SAFETY: setsid and the wrapper's async-signal-safe steps.
    unsafe {
        command.pre_exec(move || {
            nix::unistd::setsid()?;
            match &wrapper {
                Some(wrapper) => wrapper.pre_exec(),
                None => Ok(()),
            }
        });
    }
    let status = command.status().expect("spawn");
    assert!(status.success());
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
        (sandbox as Arc<dyn SpawnWrapper>, start.elapsed())
    };
    let (workspace_write, built) = build(SandboxMode::WorkspaceWrite, NetworkMode::On);
    let (network_off, built_off) = build(SandboxMode::WorkspaceWrite, NetworkMode::Off);
    let (read_only, _) = build(SandboxMode::ReadOnly, NetworkMode::On);
    let names = [
        "unsandboxed, posix_spawn (env-local's path where clone3 is missing)",
        "unsandboxed, fork + setsid in pre_exec",
        "workspace-write, network on",
        "workspace-write, network off",
        "read-only, network on",
    ];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    for _ in 0..rounds {
        samples[0].push(posix_spawn());
        samples[1].push(forked(None));
        samples[2].push(forked(Some(Arc::clone(&workspace_write))));
        samples[3].push(forked(Some(Arc::clone(&network_off))));
        samples[4].push(forked(Some(Arc::clone(&read_only))));
    }
    let results: Vec<(Duration, Duration)> = samples.into_iter().map(percentiles).collect();
    let percent =
        |value: Duration, base: Duration| (value.as_secs_f64() / base.as_secs_f64() - 1.0) * 100.0;
    println!("bash -c true, spawn + wait, {rounds} interleaved rounds");
    println!("| launch | median | p10 | p10 vs posix_spawn | p10 vs fork |");
    println!("|---|---|---|---|---|");
    for (name, &(median, low)) in names.iter().zip(&results) {
        println!(
            "| {name} | {:.3} ms | {:.3} ms | {:+.1}% | {:+.1}% |",
            median.as_secs_f64() * 1e3,
            low.as_secs_f64() * 1e3,
            percent(low, results[0].1),
            percent(low, results[1].1),
        );
    }
    println!(
        "Sandbox::new: {:.2} ms (network on), {:.2} ms (network off: creates the shared namespace)",
        built.as_secs_f64() * 1e3,
        built_off.as_secs_f64() * 1e3
    );
}
