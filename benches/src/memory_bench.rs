//! Item 8: resident memory of `bashtool mcp`, idle after initialize and
//! after many `echo hi` calls. A leak shows as growth after the warm-up
//! calls, once allocator pools and caches have reached their working size.

use std::time::Duration;

use crate::effort::Effort;
use crate::mcp_client::McpServer;
use crate::servers;
use crate::table::Row;

/// Growth per call, after the warm-up, above which we call it a leak: below
/// it, page-sized allocator noise; a leak of even one small string per call
/// (about 100 bytes with malloc's overhead) is above it.
const LEAK_BYTES_PER_CALL: f64 = 64.0;

/// `VmRSS` of a process, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Direct children of a process (all its threads').
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// RSS of the server alone, and of what it runs (the session's shell).
#[derive(Debug, Clone, Copy)]
struct Rss {
    server: u64,
    descendants: u64,
}

fn rss_tree(pid: u32) -> Rss {
    let mut descendants = 0;
    let mut stack = children(pid);
    while let Some(child) = stack.pop() {
        descendants += rss_kib(child).unwrap_or(0);
        stack.extend(children(child));
    }
    Rss {
        server: rss_kib(pid).unwrap_or(0),
        descendants,
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// Lets the server finish what a call leaves behind (log writes, reaping,
/// the session's snapshot) before reading its memory.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

async fn measure(stateless: bool, warm_calls: usize, calls: usize) -> anyhow::Result<Row> {
    let spec = servers::bashtool(stateless)?;
    let label = spec.label.clone();
    let server = McpServer::start(&spec).await?;
    let pid = server
        .pid()
        .ok_or_else(|| anyhow::anyhow!("no server pid"))?;
    settle().await;
    let idle = rss_tree(pid);
    for _ in 0..warm_calls {
        server.echo().await?;
    }
    settle().await;
    let warm = rss_tree(pid);
    // A midpoint tells a leak (growth at a steady rate) from an allocator
    // settling (growth that slows down).
    let middle_calls = usize::midpoint(warm_calls, calls);
    for _ in warm_calls..middle_calls {
        server.echo().await?;
    }
    settle().await;
    let middle = rss_tree(pid);
    for _ in middle_calls..calls {
        server.echo().await?;
    }
    settle().await;
    let after = rss_tree(pid);
    server.stop().await;

    let growth_kib = after.server as i64 - warm.server as i64;
    let per_call = growth_kib as f64 * 1024.0 / (calls - warm_calls) as f64;
    let shell = if stateless {
        String::new()
    } else {
        format!(
            "; its shell: {} → {}",
            mib(warm.descendants),
            mib(after.descendants)
        )
    };
    Ok(Row {
        number: "8",
        what: format!("resident memory of `bashtool mcp`, {label}"),
        ours: format!(
            "idle {}; after {warm_calls} calls {}; after {middle_calls} {}; after {calls} {}{shell}",
            mib(idle.server),
            mib(warm.server),
            mib(middle.server),
            mib(after.server)
        ),
        baseline: "—".into(),
        ratio: format!(
            "{growth_kib:+} KiB from call {warm_calls} to {calls} ({per_call:+.0} B/call; {:+} KiB, then {:+} KiB)",
            middle.server as i64 - warm.server as i64,
            after.server as i64 - middle.server as i64
        ),
        target: "no growth (no leak)",
        met: Some(per_call < LEAK_BYTES_PER_CALL),
    })
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let (warm_calls, calls) = if effort.quick {
        (200, 2_000)
    } else {
        // The session server's RSS settles over some 7000 calls (+160,
        // +220, +124, +120, +32, +16, +12 KiB for each 1500 `echo hi`,
        // measured): a window from call 1000 caught the allocator's tail
        // (up to +66 B/call) more than any leak.
        (5_000, 14_000)
    };
    let mut rows = Vec::new();
    for stateless in [false, true] {
        rows.push(match measure(stateless, warm_calls, calls).await {
            Ok(row) => row,
            Err(error) => Row {
                number: "8",
                what: "resident memory of `bashtool mcp`".into(),
                ours: format!("could not be measured: {error:#}"),
                baseline: "—".into(),
                ratio: "—".into(),
                target: "no growth (no leak)",
                met: None,
            },
        });
    }
    Ok(rows)
}
