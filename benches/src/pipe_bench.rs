//! Item 3b: 1 GB of 80-byte lines (`yes` of 79 characters, `head -c`)
//! through the real `bashtool call` binary (the JSON input on stdin, as a
//! model's call), against the same producer piped into `cat > /dev/null`,
//! in turns, in rounds until two consecutive ratios agree within 10%; and
//! the peak RSS of the `bashtool` process.

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::effort::Effort;
use crate::rounds::{Plan, Ratios};
use crate::servers::bashtool_binary;
use crate::table::Row;

/// 79 characters: with `yes`'s newline, 80-byte lines.
const LINE: &str =
    "the quick brown fox jumps over the lazy dog, and again and again, 0123456789 ab";

fn producer(bytes: u64) -> String {
    format!("yes '{LINE}' | head -c {bytes}")
}

/// The baseline: the producer piped into `cat > /dev/null`.
fn through_cat(bytes: u64) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let status = std::process::Command::new("bash")
        .args(["-c", &format!("{} | cat > /dev/null", producer(bytes))])
        .stdin(Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "the baseline failed: {status}");
    Ok(start.elapsed())
}

/// Waits for `pid` and returns its `ru_maxrss` in KiB: the peak of the
/// process itself and of the children it waited for (here `bash`, `yes`,
/// `head`, all smaller than it).
fn wait_peak_kib(pid: u32) -> anyhow::Result<(i32, u64)> {
    let (status, peak) = bashtool_process::wait_with_peak(pid)?;
    Ok((status, peak))
}

/// One call through `bashtool call` (defaults, as a user runs it; log and
/// state in `dir`): its time and peak RSS in KiB.
fn through_bashtool(program: &Path, dir: &Path, bytes: u64) -> anyhow::Result<(Duration, u64)> {
    let result_file = dir.join("result.json");
    let start = Instant::now();
    let mut child = std::process::Command::new(program)
        .arg("call")
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&result_file)?)
        .spawn()?;
    let input = json!({"command": producer(bytes), "timeout": 1800}).to_string();
    {
        let mut stdin = child.stdin.take().context("no stdin")?;
        stdin.write_all(input.as_bytes())?;
    }
    // Reaped here, not through `child`, to read its rusage.
    let (status, peak_kib) = wait_peak_kib(child.id())?;
    let elapsed = start.elapsed();
    anyhow::ensure!(status == 0, "bashtool call exited with status {status:#x}");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&result_file)?)?;
    let total = result
        .pointer("/details/total_bytes")
        .and_then(Value::as_u64);
    anyhow::ensure!(
        total == Some(bytes) && result.get("is_error") == Some(&Value::Bool(false)),
        "bashtool saw {total:?} of {bytes} bytes: {}",
        result.pointer("/content/0/text").unwrap_or(&Value::Null)
    );
    // The log is as large as the output: keep the disk free between rounds.
    let _ = std::fs::remove_dir_all(dir.join("state"));
    Ok((elapsed, peak_kib))
}

fn measure(effort: Effort, bytes: u64) -> anyhow::Result<Vec<Row>> {
    let program = bashtool_binary()?;
    let dir = tempfile::tempdir()?;
    // Five rounds at least: single rounds swing from 38% to 111% on this
    // machine, and the median of two or three moved by more than 10%
    // between consecutive runs.
    let plan = Plan::new(effort, 5, 8, 3);
    let gigabytes = |duration: Duration| bytes as f64 / 1e9 / duration.as_secs_f64();
    let (mut ours, mut baseline, mut ratios) = (Vec::new(), Vec::new(), Ratios::default());
    let mut peak_kib = 0;
    // One unmeasured pass each: page cache, binary, allocator.
    through_cat(bytes / 10)?;
    through_bashtool(&program, dir.path(), bytes / 10)?;
    while plan.another(ours.len(), [&ratios]) {
        let cat = through_cat(bytes)?;
        let (tool, peak) = through_bashtool(&program, dir.path(), bytes)?;
        peak_kib = peak_kib.max(peak);
        ratios.push(gigabytes(tool) / gigabytes(cat));
        ours.push(gigabytes(tool));
        baseline.push(gigabytes(cat));
    }
    let spread = |rates: &[f64]| {
        let mut sorted = rates.to_vec();
        sorted.sort_by(f64::total_cmp);
        format!(
            "{:.2} / {:.2} / {:.2} GB/s",
            sorted.first().copied().unwrap_or_default(),
            sorted[sorted.len() / 2],
            sorted.last().copied().unwrap_or_default()
        )
    };
    let ratio = ratios.median().unwrap_or(0.0);
    let peak_mib = peak_kib as f64 / 1024.0;
    Ok(vec![
        Row {
            number: "3b",
            what: format!(
                "{:.1} GB of 80-byte lines through `bashtool call` (the binary, defaults, log written)",
                bytes as f64 / 1e9
            ),
            ours: spread(&ours),
            baseline: format!(
                "same producer into `cat > /dev/null`: {}",
                spread(&baseline)
            ),
            ratio: format!(
                "{:.0}% ({})",
                ratio * 100.0,
                ratios.summary(|ratio| format!("{:.0}%", ratio * 100.0))
            ),
            target: "≥ 50% of `cat`",
            met: Some(ratio >= 0.50),
        },
        Row {
            number: "3b",
            what: "peak RSS of that `bashtool call` process (largest of the rounds)".into(),
            ours: format!("{peak_mib:.1} MiB"),
            baseline: "—".into(),
            ratio: "—".into(),
            target: "< 64 MiB",
            met: Some(peak_mib < 64.0),
        },
    ])
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let bytes: u64 = if effort.quick {
        200_000_000
    } else {
        1_000_000_000
    };
    tokio::task::spawn_blocking(move || measure(effort, bytes)).await?
}
