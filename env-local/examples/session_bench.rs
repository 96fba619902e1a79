//! Measures what a session call costs against a fresh `bash -c`.
//!
//! `cargo run --release -p bashtool-env-local --example session_bench [ITERATIONS]`
//!
//! The calls are interleaved (one of each kind per round), so that all see
//! the same load on a shared machine, and run back to back or with a pause
//! before each round (an agent's calls are seconds apart: the session's
//! shell writes its state snapshot after reporting the status, during that
//! pause). Prints medians, 10th and 90th percentiles of wall time; then the
//! CPU time per call (ours plus the shells'), which a loaded machine
//! disturbs much less than wall time.

use std::time::{Duration, Instant};

use bashtool_core::{CommandExec, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};

fn percentile(samples: &mut [Duration], fraction: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() - 1) as f64 * fraction).round() as usize;
    samples[index]
}

fn cell(samples: &mut [Duration]) -> String {
    let micros = |duration: Duration| duration.as_secs_f64() * 1e6;
    format!(
        "{:.0} µs ({:.0}–{:.0})",
        micros(percentile(samples, 0.5)),
        micros(percentile(samples, 0.1)),
        micros(percentile(samples, 0.9))
    )
}

/// CPU time of this process and of its reaped children.
fn cpu_self_and_children() -> (Duration, Duration) {
    use nix::sys::resource::{UsageWho, getrusage};
    let total = |who| {
        getrusage(who).map_or(Duration::ZERO, |usage| {
            let micros = |time: nix::sys::time::TimeVal| {
                Duration::from_micros(
                    (time.tv_sec() * 1_000_000 + time.tv_usec())
                        .try_into()
                        .unwrap_or(0),
                )
            };
            micros(usage.user_time()) + micros(usage.system_time())
        })
    };
    (
        total(UsageWho::RUSAGE_SELF),
        total(UsageWho::RUSAGE_CHILDREN),
    )
}

/// CPU time of a running process, from `/proc/<pid>/stat` (clock ticks).
fn cpu_of(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map_or(Vec::new(), |(_, rest)| rest.split(' ').collect());
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&index| fields.get(index)?.parse::<u64>().ok())
        .sum();
    // SAFETY: sysconf only reads a configuration value.
    #[allow(unsafe_code)]
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    Duration::from_micros(ticks * 1_000_000 / per_second as u64)
}

async fn timed(future: impl std::future::Future<Output = ()>) -> Duration {
    let start = Instant::now();
    future.await;
    start.elapsed()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(500);
    println!(
        "| pause before each round | tokio spawn+wait `bash -c true` | LocalExec `true` | Session `true` | Session `cd /tmp` | bash -c ÷ Session (medians) |"
    );
    println!("|---|---|---|---|---|---|");
    let local = LocalExec::new(LocalConfig::default());
    for pause in [Duration::ZERO, Duration::from_millis(10)] {
        let session = Session::new(SessionConfig::default()).expect("session");
        session
            .spawn("true", SpawnOptions::default())
            .await
            .expect("warm up");
        let mut samples: [Vec<Duration>; 4] = Default::default();
        let count = if pause.is_zero() {
            rounds
        } else {
            rounds.min(300)
        };
        for _ in 0..count {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            samples[0].push(
                timed(async {
                    tokio::process::Command::new("bash")
                        .arg("-c")
                        .arg("true")
                        .status()
                        .await
                        .expect("bash");
                })
                .await,
            );
            samples[1].push(
                timed(async {
                    local
                        .spawn("true", SpawnOptions::default())
                        .await
                        .expect("local");
                })
                .await,
            );
            samples[2].push(
                timed(async {
                    session
                        .spawn("true", SpawnOptions::default())
                        .await
                        .expect("session");
                })
                .await,
            );
            samples[3].push(
                timed(async {
                    session
                        .spawn("cd /tmp", SpawnOptions::default())
                        .await
                        .expect("session");
                })
                .await,
            );
        }
        let ratio = percentile(&mut samples[0], 0.5).as_secs_f64()
            / percentile(&mut samples[2], 0.5).as_secs_f64();
        let [fresh, local_samples, session_true, session_cd] = &mut samples;
        println!(
            "| {} ms | {} | {} | {} | {} | {ratio:.1}× |",
            pause.as_millis(),
            cell(fresh),
            cell(local_samples),
            cell(session_true),
            cell(session_cd),
        );
    }

    println!();
    println!("| CPU per call (this process + the shells) | µs |");
    println!("|---|---|");
    let calls = rounds.max(500) as u32;
    let (self_before, children_before) = cpu_self_and_children();
    for _ in 0..calls {
        tokio::process::Command::new("bash")
            .arg("-c")
            .arg("true")
            .status()
            .await
            .expect("bash");
    }
    let (self_after, children_after) = cpu_self_and_children();
    let fresh = (self_after.saturating_sub(self_before)
        + children_after.saturating_sub(children_before))
        / calls;
    println!(
        "| tokio spawn+wait `bash -c true` | {:.0} |",
        fresh.as_secs_f64() * 1e6
    );
    let session = Session::new(SessionConfig::default()).expect("session");
    session
        .spawn("true", SpawnOptions::default())
        .await
        .expect("warm up");
    let shell = session.shell_pid().await.expect("shell");
    let (self_before, _) = cpu_self_and_children();
    let shell_before = cpu_of(shell);
    for _ in 0..calls {
        session
            .spawn("true", SpawnOptions::default())
            .await
            .expect("session");
    }
    let (self_after, _) = cpu_self_and_children();
    let shell_cpu = cpu_of(shell).saturating_sub(shell_before);
    let ours = self_after.saturating_sub(self_before) / calls;
    let theirs = shell_cpu / calls;
    println!(
        "| Session `true` | {:.0} ({:.0} here + {:.0} in the shell, its snapshot included) |",
        (ours + theirs).as_secs_f64() * 1e6,
        ours.as_secs_f64() * 1e6,
        theirs.as_secs_f64() * 1e6
    );
    println!(
        "| ratio | {:.1}× |",
        fresh.as_secs_f64() / (ours + theirs).as_secs_f64()
    );
}
