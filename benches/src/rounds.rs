//! Rounds: a row's measurement repeated, in turns with its baseline, until
//! two consecutive rounds' ratios agree within [`AGREEMENT`] (or a cap is
//! reached, which the row then says). On a shared machine one round can be
//! off by 2×; two that agree are evidence that the load held still.

use crate::effort::Effort;
use crate::stats::{Samples, measure, measure_interleaved};

/// Two consecutive rounds agree when their ratios differ by at most this
/// fraction of the smaller one.
pub const AGREEMENT: f64 = 0.10;

/// How many rounds at least and at most.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub min: usize,
    pub max: usize,
}

impl Plan {
    /// `min`/`max` rounds for a full run; `--quick` runs at least 2 and at
    /// most `quick_max`.
    pub fn new(effort: Effort, min: usize, max: usize, quick_max: usize) -> Self {
        if effort.quick {
            Self {
                min: 2,
                max: quick_max.max(2),
            }
        } else {
            Self {
                min: min.max(2),
                max: max.max(min),
            }
        }
    }

    /// Whether to run another round after `done` rounds, given every row's
    /// ratios so far.
    pub fn another<'a>(self, done: usize, rows: impl IntoIterator<Item = &'a Ratios>) -> bool {
        if done < self.min {
            return true;
        }
        done < self.max && !rows.into_iter().all(Ratios::settled)
    }
}

/// One row's ratio (ours against its baseline), one per round.
#[derive(Debug, Clone, Default)]
pub struct Ratios(Vec<f64>);

fn agree(first: f64, second: f64) -> bool {
    let (low, high) = if first < second {
        (first, second)
    } else {
        (second, first)
    };
    // The epsilon keeps exactly 10% apart (1.0 and 1.1) inside despite
    // rounding.
    low > 0.0 && high / low - 1.0 <= AGREEMENT + 1e-9
}

impl Ratios {
    /// Rounds so far.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn push(&mut self, ratio: f64) {
        if ratio.is_finite() {
            self.0.push(ratio);
        }
    }

    /// The last two rounds agree (a row without ratios, which no round can
    /// change, counts as settled).
    pub fn settled(&self) -> bool {
        match self.0.as_slice() {
            [] => true,
            [.., first, second] => agree(*first, *second),
            [_] => false,
        }
    }

    fn sorted(&self) -> Vec<f64> {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        sorted
    }

    pub fn median(&self) -> Option<f64> {
        median(&self.0)
    }

    /// `rounds 1.62–2.01, 4 rounds, last two within 10%`, or what went
    /// wrong: the last two apart, or no two consecutive rounds ever close.
    pub fn summary(&self, format: impl Fn(f64) -> String) -> String {
        let sorted = self.sorted();
        let (Some(low), Some(high)) = (sorted.first(), sorted.last()) else {
            return "no rounds".into();
        };
        let count = self.0.len();
        let agreement = if self.settled() {
            format!("last two within {:.0}%", AGREEMENT * 100.0)
        } else if self.0.windows(2).any(|pair| agree(pair[0], pair[1])) {
            let [.., first, second] = self.0.as_slice() else {
                unreachable!("settled() is true below two rounds")
            };
            format!(
                "**last two {:.0}% apart**",
                (first.max(*second) / first.min(*second) - 1.0) * 100.0
            )
        } else {
            format!(
                "**no two consecutive rounds within {:.0}%**",
                AGREEMENT * 100.0
            )
        };
        format!(
            "rounds {}–{}, {count} rounds, {agreement}",
            format(*low),
            format(*high)
        )
    }
}

/// How a round takes turns between two sides, with the warm-up calls
/// each way.
#[derive(Debug, Clone, Copy)]
pub enum Turns {
    /// Call for call (both see the same moment's load); warm-ups in the
    /// first round, then in each later one.
    CallForCall((usize, usize)),
    /// Block for block: `per_round` calls of the first side back to back,
    /// then of the second, each block after its own warm-up. Each side is
    /// measured in its own steady state (a call right after the other
    /// side's runs in what that one left in the caches), and both blocks
    /// of a round see the same load.
    BlockForBlock(usize),
}

/// `first` and `second` taking `turns`, `per_round` calls each way a
/// round, in rounds under `plan` until they settle: both sides' samples
/// over every round, and each round's `ratio(first, second)`.
pub async fn in_rounds<A, FutA, B, FutB>(
    plan: Plan,
    turns: Turns,
    per_round: usize,
    mut first: A,
    mut second: B,
    ratio: impl Fn(&Samples, &Samples) -> f64,
) -> (Samples, Samples, Ratios)
where
    A: FnMut() -> FutA,
    FutA: Future<Output = ()>,
    B: FnMut() -> FutB,
    FutB: Future<Output = ()>,
{
    let (mut firsts, mut seconds) = (Samples::empty(), Samples::empty());
    let mut ratios = Ratios::default();
    while plan.another(ratios.len(), [&ratios]) {
        let (round_first, round_second) = match turns {
            Turns::CallForCall((first_warmup, later_warmup)) => {
                let warmup = if ratios.is_empty() {
                    first_warmup
                } else {
                    later_warmup
                };
                measure_interleaved(warmup, per_round, &mut first, &mut second).await
            }
            Turns::BlockForBlock(warmup) => (
                measure(warmup, per_round, &mut first).await,
                measure(warmup, per_round, &mut second).await,
            ),
        };
        ratios.push(ratio(&round_first, &round_second));
        firsts.extend(&round_first);
        seconds.extend(&round_second);
    }
    (firsts, seconds, ratios)
}

/// The middle value of `values` (the upper one of an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

/// `+4.2%` for a ratio of 1.042.
pub fn percent(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratios(values: &[f64]) -> Ratios {
        let mut ratios = Ratios::default();
        for value in values {
            ratios.push(*value);
        }
        ratios
    }

    #[test]
    fn settles_when_the_last_two_rounds_agree_within_ten_percent() {
        assert!(!ratios(&[1.0]).settled());
        assert!(ratios(&[2.0, 1.0, 1.1]).settled());
        assert!(!ratios(&[1.0, 1.11]).settled());
        assert!(ratios(&[]).settled());
    }

    #[test]
    fn plan_runs_the_minimum_then_stops_at_agreement_or_the_cap() {
        let plan = Plan { min: 3, max: 5 };
        let agreed = ratios(&[1.0, 1.0]);
        let apart = ratios(&[1.0, 2.0]);
        assert!(plan.another(2, [&agreed]));
        assert!(!plan.another(3, [&agreed]));
        assert!(plan.another(4, [&agreed, &apart]));
        assert!(!plan.another(5, [&apart]));
    }

    #[test]
    fn summary_names_the_spread_and_the_agreement() {
        let format = |ratio: f64| format!("{ratio:.1}×");
        assert_eq!(
            ratios(&[1.0, 2.0, 1.9]).summary(format),
            "rounds 1.0×–2.0×, 3 rounds, last two within 10%"
        );
        assert_eq!(
            ratios(&[1.0, 1.05, 1.5]).summary(format),
            "rounds 1.0×–1.5×, 3 rounds, **last two 43% apart**"
        );
        assert_eq!(
            ratios(&[1.0, 2.0, 1.0]).summary(format),
            "rounds 1.0×–2.0×, 3 rounds, **no two consecutive rounds within 10%**"
        );
    }
}
