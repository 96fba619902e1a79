//! Measures what a session call costs against a fresh `bash -c`.
//!
//! `cargo run --release -p bashtool-env-local --example session_bench [ITERATIONS]`
//!
//! Prints a table of medians and 90th percentiles, per call, sequentially.

use std::time::{Duration, Instant};

use bashtool_core::{CommandExec, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};

fn percentile(samples: &mut [Duration], fraction: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() - 1) as f64 * fraction).round() as usize;
    samples[index]
}

fn row(name: &str, samples: &mut [Duration]) {
    let median = percentile(samples, 0.5);
    let p90 = percentile(samples, 0.9);
    println!(
        "| {name:<44} | {:>9.1} µs | {:>9.1} µs |",
        median.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(1000);
    println!("| what ({iterations} sequential calls) | median | p90 |");
    println!("|---|---|---|");

    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        std::process::Command::new("bash")
            .arg("-c")
            .arg("true")
            .status()
            .expect("bash");
        samples.push(start.elapsed());
    }
    row("std spawn+wait `bash -c true`", &mut samples);

    let local = LocalExec::new(LocalConfig::default());
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        local
            .spawn("true", SpawnOptions::default())
            .await
            .expect("local");
        samples.push(start.elapsed());
    }
    row("LocalExec `true`", &mut samples);

    for (name, command) in [
        ("Session `true` (back to back)", "true"),
        ("Session `cd /tmp` (back to back)", "cd /tmp"),
    ] {
        let session = Session::new(SessionConfig::default()).expect("session");
        session
            .spawn("true", SpawnOptions::default())
            .await
            .expect("warm up");
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let start = Instant::now();
            session
                .spawn(command, SpawnOptions::default())
                .await
                .expect("session");
            samples.push(start.elapsed());
        }
        row(name, &mut samples);
    }

    // With a pause between calls, as between an agent's tool calls: the
    // shell writes its snapshot during the pause, off the call's path.
    for pause_ms in [1, 3, 10] {
        let session = Session::new(SessionConfig::default()).expect("session");
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..iterations.min(200) {
            tokio::time::sleep(Duration::from_millis(pause_ms)).await;
            let start = Instant::now();
            session
                .spawn("true", SpawnOptions::default())
                .await
                .expect("session");
            samples.push(start.elapsed());
        }
        row(
            &format!("Session `true` ({pause_ms} ms pause between calls)"),
            &mut samples,
        );
    }
}
