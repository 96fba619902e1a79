//! Measures what a huge output costs: `LocalExec` against a plain pipe read
//! in the same process, and the peak RSS. Also the return latency after the
//! main process exits with a leftover holding the pipe, and timeout-to-return.
//!
//! `cargo run --release -p bashtool-env-local --example throughput [bytes]`

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bashtool_core::{CommandExec, OutputBuffer, OutputConfig, SpawnOptions, Stream};
use bashtool_env_local::{LocalConfig, LocalExec, StreamCleaner};

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

fn plain_pipe(command: &str, bytes: u64) -> Duration {
    let started = Instant::now();
    let mut child = Command::new("bash")
        .args(["-c", command])
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
    assert_eq!(total, bytes);
    started.elapsed()
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

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("file"), "").expect("write");
    // Best of three, interleaved: the machine may be shared and noisy.
    let mut best = [Duration::MAX; 3];
    for _ in 0..3 {
        best[0] = best[0].min(plain_pipe(&command, bytes));
        for (index, log_dir) in [
            (1, dir.path().join("logs")),
            (2, dir.path().join("file").join("logs")),
        ] {
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
            best[index] = best[index].min(started.elapsed());
            assert_eq!(result.output.total_bytes(), bytes);
            if let Some(log) = result.log_file {
                let _ = std::fs::remove_file(log);
            }
        }
    }
    println!("plain pipe read:          {}", rate(bytes, best[0]));
    println!("LocalExec, log to disk:   {}", rate(bytes, best[1]));
    println!("LocalExec, no log:        {}", rate(bytes, best[2]));
    // Where the time goes, without pipes or processes: the cleaner alone,
    // then the cleaner feeding the core's OutputBuffer (no log).
    let mut block = Vec::with_capacity(64 * 1024);
    while block.len() + width <= 64 * 1024 {
        block.extend_from_slice("a".repeat(width - 1).as_bytes());
        block.push(b'\n');
    }
    let rounds = bytes / block.len() as u64;
    let mut cleaner = StreamCleaner::new();
    let mut scratch = String::new();
    let started = Instant::now();
    let mut cleaned = 0u64;
    for _ in 0..rounds {
        cleaned += cleaner.clean(&block, &mut scratch).len() as u64;
    }
    println!(
        "cleaner alone (memory):   {}",
        rate(cleaned, started.elapsed())
    );
    let mut output = OutputBuffer::new(&OutputConfig::default());
    let started = Instant::now();
    for _ in 0..rounds {
        output.push(Stream::Stdout, cleaner.clean(&block, &mut scratch));
    }
    output.finish();
    println!(
        "cleaner + OutputBuffer:   {}",
        rate(output.total_bytes(), started.elapsed())
    );
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
