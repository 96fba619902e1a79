//! Item 9: the remote path. A call of `true` through the tool over an
//! established connection to a local `bashtool serve` (a pipe, no network),
//! against the same call on a local `LocalExec`, taking turns; then 1 GiB
//! of output through the remote path: throughput against the same command
//! run locally, and this process's peak RSS before and after.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bashtool_core::{BashTool, ToolConfig};
use bashtool_env_local::{LocalConfig, LocalExec};
use bashtool_env_remote::{RemoteConfig, RemoteExec};
use serde_json::json;

use crate::effort::Effort;
use crate::rounds::{Plan, Ratios, Turns, in_rounds};
use crate::servers::bashtool_binary;
use crate::stats::{Samples, human, measure_interleaved, spread};
use crate::table::Row;

/// 1 GiB of 64-byte lines.
const GIB_COMMAND: &str =
    "yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789a | head -c 1073741824";

/// `VmHWM` (peak resident set) of this process, in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|value| {
                    value
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<f64>()
                        .ok()
                })
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// `true` over loopback SSH (reported, no target), or a row saying why not.
async fn ssh_row(effort: Effort, local_tool: &BashTool, dir: &std::path::Path) -> Row {
    let row = |ours: String, baseline: String, ratio: String| Row {
        number: "10",
        what: "call of `true` over an established loopback SSH connection to `bashtool serve`"
            .into(),
        ours,
        baseline,
        ratio,
        target: "report",
        met: None,
    };
    let ssh_dir = dir.join("ssh");
    let outcome = async {
        std::fs::create_dir_all(&ssh_dir)?;
        let sshd = crate::ssh_loopback::start(&ssh_dir)?;
        let line = format!(
            "{} 'TMPDIR={dir} exec {binary} serve --cwd {dir}'",
            sshd.ssh,
            dir = dir.display(),
            binary = bashtool_binary()?.display()
        );
        let remote = RemoteExec::command(line, RemoteConfig::default());
        remote.connect().await?;
        let tool = BashTool::new(ToolConfig::default(), Arc::new(remote.clone()));
        let call = |tool: &BashTool| {
            let tool = tool.clone();
            async move {
                let result = tool.call(json!({"command": "true"})).await;
                assert!(!result.is_error, "{}", result.text());
            }
        };
        let samples =
            measure_interleaved(10, effort.runs(200), || call(&tool), || call(local_tool)).await;
        remote.shutdown(std::time::Duration::from_secs(5)).await;
        drop(sshd);
        anyhow::Ok(samples)
    }
    .await;
    match outcome {
        Ok((over_ssh, here)) => row(
            spread(&over_ssh),
            format!("same call on a local `LocalExec`: {}", spread(&here)),
            format!("{} per call", difference(&over_ssh, &here)),
        ),
        Err(error) => row(
            format!("not measured: {error:#}"),
            String::new(),
            String::new(),
        ),
    }
}

/// `+34.0 µs` or `−120.5 µs`: the median of `remote` less that of `local`
/// (a remote call can be the faster one: the local one forks this larger
/// process).
fn difference(remote: &Samples, local: &Samples) -> String {
    let (remote, local) = (remote.median(), local.median());
    if remote >= local {
        format!("+{}", human(remote.saturating_sub(local)))
    } else {
        format!("−{}", human(local.saturating_sub(remote)))
    }
}

async fn timed_gib(tool: &BashTool) -> anyhow::Result<f64> {
    let start = Instant::now();
    let result = tool
        .call(json!({"command": GIB_COMMAND, "timeout": 600}))
        .await;
    anyhow::ensure!(!result.is_error, "{}", result.text());
    anyhow::ensure!(
        result.details.total_bytes == 1 << 30,
        "{} bytes arrived",
        result.details.total_bytes
    );
    Ok(start.elapsed().as_secs_f64())
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let dir = tempfile::tempdir()?;
    let line = format!(
        "TMPDIR={dir} exec {binary} serve --cwd {dir}",
        dir = dir.path().display(),
        binary = bashtool_binary()?.display()
    );
    let remote = RemoteExec::command(line, RemoteConfig::default());
    remote.connect().await?;
    let local = LocalExec::new(LocalConfig {
        working_directory: dir.path().to_path_buf(),
        log_dir: Some(dir.path().join("local-logs")),
        ..LocalConfig::default()
    });
    let remote_tool = BashTool::new(ToolConfig::default(), Arc::new(remote.clone()));
    let local_tool = BashTool::new(ToolConfig::default(), Arc::new(local.clone()));
    let call = |tool: &BashTool| {
        let tool = tool.clone();
        async move {
            let result = tool.call(json!({"command": "true"})).await;
            assert!(!result.is_error, "{}", result.text());
        }
    };
    // Rounds of call-for-call turns until two rounds' extra times agree
    // within 10% (as ratios of the remote time to the local one).
    let (over_pipe, here, ratios) = in_rounds(
        Plan::new(effort, 3, 6, 3),
        Turns::CallForCall((20, 3)),
        effort.runs(100),
        || call(&remote_tool),
        || call(&local_tool),
        Samples::ratio_to,
    )
    .await;
    let extra = over_pipe.median().saturating_sub(here.median());
    let signed_extra = difference(&over_pipe, &here);
    let mut rows = vec![Row {
        number: "10",
        what: "call of `true` over an established connection to a local `bashtool serve` (pipe)"
            .into(),
        ours: spread(&over_pipe),
        baseline: format!(
            "same call on a local `LocalExec`, in turns: {}",
            spread(&here)
        ),
        ratio: format!(
            "{signed_extra} per call ({:.2}× the local time; {})",
            ratios.median().unwrap_or(f64::NAN),
            ratios.summary(|ratio| format!("{ratio:.2}×"))
        ),
        target: "≤ 0.5 ms more",
        met: Some(extra.as_secs_f64() <= 0.0005),
    }];

    rows.push(ssh_row(effort, &local_tool, dir.path()).await);

    // 1 GiB each way in turns, in rounds (at most 3: each costs seconds).
    // The peak so far is other items' (the suite runs in one process):
    // writing 5 to clear_refs resets VmHWM to the current RSS.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let peak_before = peak_rss_mib();
    let plan = Plan::new(effort, 2, 3, 2);
    let (mut remote_times, mut local_times) = (Vec::new(), Vec::new());
    let mut ratios = Ratios::default();
    while plan.another(ratios.len(), [&ratios]) {
        let remote_seconds = timed_gib(&remote_tool).await?;
        let local_seconds = timed_gib(&local_tool).await?;
        ratios.push(remote_seconds / local_seconds);
        remote_times.push(Duration::from_secs_f64(remote_seconds));
        local_times.push(Duration::from_secs_f64(local_seconds));
    }
    let peak_after = peak_rss_mib();
    let (remote_times, local_times) = (
        Samples::from_durations(remote_times),
        Samples::from_durations(local_times),
    );
    let rate = |samples: &Samples| 1.0 / samples.median().as_secs_f64();
    rows.push(Row {
        number: "10",
        what:
            "1 GiB of output through the remote path (serve → pipe → RemoteExec → bounded capture)"
                .into(),
        ours: format!(
            "{} ({:.2} GiB/s); local peak RSS {peak_before:.0} → {peak_after:.0} MiB",
            spread(&remote_times),
            rate(&remote_times)
        ),
        baseline: format!(
            "same command on a local `LocalExec`, in turns: {} ({:.2} GiB/s)",
            spread(&local_times),
            rate(&local_times)
        ),
        ratio: format!(
            "{:.2}× the local time ({})",
            ratios.median().unwrap_or(f64::NAN),
            ratios.summary(|ratio| format!("{ratio:.2}×"))
        ),
        target: "bounded memory; as fast as the pipe allows",
        met: None,
    });
    remote.shutdown(std::time::Duration::from_secs(5)).await;
    local.shutdown().await;
    Ok(rows)
}
