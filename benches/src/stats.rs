//! Timing samples: warm-up, several runs, min/median/max.

use std::time::{Duration, Instant};

/// Durations of repeated runs, sorted.
#[derive(Debug, Clone)]
pub struct Samples(Vec<Duration>);

impl Samples {
    pub fn min(&self) -> Duration {
        self.0.first().copied().unwrap_or_default()
    }

    pub fn median(&self) -> Duration {
        self.0.get(self.0.len() / 2).copied().unwrap_or_default()
    }

    pub fn max(&self) -> Duration {
        self.0.last().copied().unwrap_or_default()
    }

    pub fn from_durations(mut durations: Vec<Duration>) -> Self {
        durations.sort();
        Self(durations)
    }

    /// No samples yet: the start of rounds that [`Samples::extend`] adds to.
    pub fn empty() -> Self {
        Self(Vec::new())
    }

    /// Adds another round's samples.
    pub fn extend(&mut self, other: &Samples) {
        self.0.extend_from_slice(&other.0);
        self.0.sort();
    }

    /// Median of `self` over median of `baseline`: one round's ratio.
    pub fn ratio_to(&self, baseline: &Samples) -> f64 {
        self.median().as_secs_f64() / baseline.median().as_secs_f64().max(1e-12)
    }
}

/// Runs `body` `warmup` times unmeasured, then `runs` times measured.
pub async fn measure<F, Fut>(warmup: usize, runs: usize, mut body: F) -> Samples
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    for _ in 0..warmup {
        body().await;
    }
    let mut durations = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        body().await;
        durations.push(start.elapsed());
    }
    Samples::from_durations(durations)
}

/// Like [`measure`] for two bodies, taking turns call by call: on a shared,
/// noisy machine both then see the same load, and their ratio is fair.
pub async fn measure_interleaved<A, FutA, B, FutB>(
    warmup: usize,
    runs: usize,
    mut first: A,
    mut second: B,
) -> (Samples, Samples)
where
    A: FnMut() -> FutA,
    FutA: Future<Output = ()>,
    B: FnMut() -> FutB,
    FutB: Future<Output = ()>,
{
    for _ in 0..warmup {
        first().await;
        second().await;
    }
    let mut firsts = Vec::with_capacity(runs);
    let mut seconds = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        first().await;
        firsts.push(start.elapsed());
        let start = Instant::now();
        second().await;
        seconds.push(start.elapsed());
    }
    (
        Samples::from_durations(firsts),
        Samples::from_durations(seconds),
    )
}

/// `1.23 ms`, `45.6 µs`, `2.10 s`.
pub fn human(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

/// `min / median / max` of samples.
pub fn spread(samples: &Samples) -> String {
    format!(
        "{} / {} / {}",
        human(samples.min()),
        human(samples.median()),
        human(samples.max())
    )
}
