//! Bounded memory: a huge output passes with the peak RSS of this test
//! binary (its own process, so VmHWM is ours alone) far below its size.
//! 128 MiB (twice the RSS limit) here so a debug build finishes quickly; the 1 GB number comes
//! from `cargo run --release -p bashtool-env-local --example throughput`.

use std::time::{Duration, Instant};

use bashtool_core::SpawnOptions;
use bashtool_env_local::LocalExec;
use bashtool_tests::{peak_rss_bytes, run_with, temp_dir, test_config};

const OUTPUT_BYTES: u64 = 128 * 1024 * 1024;
const RSS_LIMIT: u64 = 64 * 1024 * 1024;

#[tokio::test]
async fn huge_output_keeps_memory_bounded() {
    let dir = temp_dir();
    let exec = LocalExec::new(test_config(dir.path()));
    // Lines of 1000 bytes: per-line work is what a debug build is slow at.
    let command = format!("yes {} | head -c {OUTPUT_BYTES}", "a".repeat(999));
    let started = Instant::now();
    let result = run_with(
        &exec,
        &command,
        SpawnOptions::default().timeout(Duration::from_secs(600)),
    )
    .await
    .expect("runs");
    let elapsed = started.elapsed();
    assert_eq!(result.exit_code, Some(0));
    assert_eq!(result.output.total_bytes(), OUTPUT_BYTES);
    let log_size = std::fs::metadata(result.log_file.expect("log"))
        .expect("stat")
        .len();
    // The log keeps the first and the last part of the output within the
    // cap of one log file (64 MiB) and says so; the model's counts cover
    // everything.
    let cap = bashtool_env_local::DEFAULT_MAX_LOG_FILE_BYTES;
    assert!((cap / 2..=cap).contains(&log_size), "{log_size}");
    assert!(
        result
            .notes
            .iter()
            .any(|note| note.starts_with("the output was over the log file's size cap of 64.0 MiB")),
        "{:?}",
        result.notes
    );
    let peak = peak_rss_bytes();
    eprintln!(
        "{} MiB in {elapsed:?}; peak RSS {} MiB",
        OUTPUT_BYTES >> 20,
        peak >> 20
    );
    assert!(peak < RSS_LIMIT, "peak RSS {peak} bytes");
}
