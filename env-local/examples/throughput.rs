//! Measures what a huge output costs: `LocalExec` against a plain pipe read
//! in the same process, and the peak RSS. Also the return latency after the
//! main process exits with a leftover holding the pipe, and timeout-to-return.
//!
//! `cargo run --release -p bashtool-env-local --example throughput [bytes]`

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bashtool_core::{CommandExec, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec};

fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib / 1024)
}

fn rate(bytes: u64, elapsed: Duration) -> String {
    format!(
        "{:.2} GB/s ({:.2} s)",
        bytes as f64 / elapsed.as_secs_f64() / 1e9,
        elapsed.as_secs_f64()
    )
}

#[tokio::main]
async fn main() {
    let bytes: u64 = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1_000_000_000);
    let width: usize = std::env::args()
        .nth(2)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(100);
    // `yes` writes big blocks: the generator is not the bottleneck.
    let command = format!("yes {} | head -c {bytes}", "a".repeat(width - 1));

    let started = Instant::now();
    let mut child = Command::new("bash")
        .args(["-c", &command])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let read = stdout.read(&mut buffer).expect("read");
        if read == 0 {
            break;
        }
        total += read as u64;
    }
    child.wait().expect("wait");
    let plain = started.elapsed();
    println!(
        "plain pipe read:          {total} bytes, {}",
        rate(total, plain)
    );

    let dir = tempfile::tempdir().expect("tempdir");
    for (label, log_dir) in [
        ("LocalExec, log to disk:  ", dir.path().join("logs")),
        (
            "LocalExec, no log:       ",
            dir.path().join("file").join("logs"),
        ),
    ] {
        std::fs::write(dir.path().join("file"), "").expect("write");
        let exec = LocalExec::new(LocalConfig {
            log_dir: Some(log_dir),
            max_log_bytes: u64::MAX,
            ..LocalConfig::default()
        });
        let started = Instant::now();
        let result = exec
            .spawn(&command, SpawnOptions::default())
            .await
            .expect("runs");
        let elapsed = started.elapsed();
        println!(
            "{label} {} bytes, {}",
            result.output.total_bytes(),
            rate(result.output.total_bytes(), elapsed)
        );
        if let Some(log) = result.log_file {
            let _ = std::fs::remove_file(log);
        }
    }
    println!("peak RSS:                 {} MiB", peak_rss_mib());

    let exec = LocalExec::new(LocalConfig {
        log_dir: Some(dir.path().join("logs")),
        ..LocalConfig::default()
    });
    let mut latencies = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        exec.spawn("sleep 30 & echo started", SpawnOptions::default())
            .await
            .expect("runs");
        latencies.push(started.elapsed());
    }
    latencies.sort();
    println!(
        "`sleep 30 & echo started` returns after: median {:?}, max {:?}",
        latencies[5], latencies[9]
    );
    let mut latencies = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        exec.spawn("true", SpawnOptions::default())
            .await
            .expect("runs");
        latencies.push(started.elapsed());
    }
    latencies.sort();
    println!(
        "`true` call: median {:?}, max {:?}",
        latencies[5], latencies[9]
    );
    let mut latencies = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        exec.spawn(
            "(sleep 300 &); sleep 300",
            SpawnOptions::default().timeout(Duration::from_millis(500)),
        )
        .await
        .expect("runs");
        latencies.push(started.elapsed().saturating_sub(Duration::from_millis(500)));
    }
    latencies.sort();
    println!(
        "timeout to return: median {:?}, max {:?}",
        latencies[2], latencies[4]
    );
}
