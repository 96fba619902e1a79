//! Measures what a session call costs against a fresh `bash -c`.
//!
//! `cargo run --release -p bashtool-env-local --example session_bench [ITERATIONS]`
//!
//! Prints a table of medians and 90th percentiles per call. Each row runs
//! its calls one after another, either back to back or with a pause before
//! each call (an agent's calls are seconds apart: the session's shell writes
//! its state snapshot after reporting the status, during that pause). The
//! baselines get the same pauses, so the ratios compare like with like.

use std::time::{Duration, Instant};

use bashtool_core::{CommandExec, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};

fn percentile(samples: &mut [Duration], fraction: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() - 1) as f64 * fraction).round() as usize;
    samples[index]
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

async fn measure<F, Fut>(iterations: usize, pause: Duration, mut call: F) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let start = Instant::now();
        call().await;
        samples.push(start.elapsed());
    }
    samples
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(500);
    println!(
        "| pause before each call | tokio spawn+wait `bash -c true` | LocalExec `true` | Session `true` | Session `cd /tmp` | bash -c ÷ Session |"
    );
    println!("|---|---|---|---|---|---|");
    let local = LocalExec::new(LocalConfig::default());
    for pause in [
        Duration::ZERO,
        Duration::from_millis(1),
        Duration::from_millis(10),
    ] {
        let count = if pause.is_zero() {
            iterations
        } else {
            iterations.min(200)
        };
        let mut fresh = measure(count, pause, || async {
            tokio::process::Command::new("bash")
                .arg("-c")
                .arg("true")
                .status()
                .await
                .expect("bash");
        })
        .await;
        let mut local_samples = measure(count, pause, || async {
            local
                .spawn("true", SpawnOptions::default())
                .await
                .expect("local");
        })
        .await;
        let session = Session::new(SessionConfig::default()).expect("session");
        session
            .spawn("true", SpawnOptions::default())
            .await
            .expect("warm up");
        let mut session_true = measure(count, pause, || async {
            session
                .spawn("true", SpawnOptions::default())
                .await
                .expect("session");
        })
        .await;
        let mut session_cd = measure(count, pause, || async {
            session
                .spawn("cd /tmp", SpawnOptions::default())
                .await
                .expect("session");
        })
        .await;
        let fresh_median = percentile(&mut fresh, 0.5);
        let session_median = percentile(&mut session_true, 0.5);
        let cell = |samples: &mut Vec<Duration>| {
            format!(
                "{:.0} µs (p90 {:.0})",
                micros(percentile(samples, 0.5)),
                micros(percentile(samples, 0.9))
            )
        };
        println!(
            "| {} ms | {} | {} | {} | {} | {:.1}× |",
            pause.as_millis(),
            cell(&mut fresh),
            cell(&mut local_samples),
            cell(&mut session_true),
            cell(&mut session_cd),
            fresh_median.as_secs_f64() / session_median.as_secs_f64()
        );
    }
}
