//! Which error-like groups of the omitted middle are shown within the
//! salient share of the budget, and which of their lines.
//!
//! Fair shares: every group first gets its core (its error-like lines and
//! the lines right around them), real failures before decoys; then each
//! grows by the lines nearest its errors up to an equal share of what is
//! left; then, in order, they take the rest. So the first of several
//! failures cannot starve the others, and a long block is kept whole when
//! there is room for it.

use crate::config::OutputConfig;

use super::groups::Group;
use super::markers::{Location, group_marker};
use super::tracker::SalientTracker;
use super::units::{Unit, entry_unit, units_cost};

/// A group of error-like lines chosen for the middle.
pub(super) struct Part<'a> {
    pub units: Vec<Unit<'a>>,
    /// An outlier's group rather than a failure's.
    pub rare: bool,
}

/// The chars a part costs besides its lines: its marker (with a gap as large
/// as it can be) and a stream header.
fn part_overhead(units: &[Unit<'_>], total_lines: u64, rare: bool) -> usize {
    match (units.first(), units.last()) {
        (Some(first), Some(last)) => {
            group_marker(total_lines, first.location(), last.location(), rare).len()
                + 1
                + crate::output::lines::HEADER_COST
        }
        _ => 0,
    }
}

/// The core of a group: its error-like lines (rank 0), the line after and
/// the line before each (ranks 1 and 2).
const CORE_RANK: usize = 2;

/// A group's lines and which of them are chosen so far.
struct Candidate<'a> {
    units: Vec<Unit<'a>>,
    chosen: Vec<bool>,
    /// Unit indexes with their rank: 0 for an error-like line, then `2d - 1`
    /// for a line `d` after the nearest one and `2d` for one `d` before.
    order: Vec<(usize, usize)>,
    /// Position in `order` of the next unit to add.
    next: usize,
    /// The chosen units' cost, markers included (0 when none).
    cost: usize,
    /// Shown after the real failures: 1 for an outlier, 2 for a decoy.
    priority: u8,
    rare: bool,
}

impl<'a> Candidate<'a> {
    fn new(units: Vec<Unit<'a>>, group: &Group) -> Self {
        let salient: Vec<usize> = (0..units.len())
            .filter(|index| units[*index].salient)
            .collect();
        let mut order: Vec<(usize, usize)> = (0..units.len())
            .map(|index| {
                let rank = salient
                    .iter()
                    .map(|error| match index.cmp(error) {
                        std::cmp::Ordering::Equal => 0,
                        std::cmp::Ordering::Greater => 2 * (index - error) - 1,
                        std::cmp::Ordering::Less => 2 * (error - index),
                    })
                    .min()
                    .unwrap_or(usize::MAX);
                (rank, index)
            })
            .collect();
        order.sort_unstable();
        Self {
            chosen: vec![false; units.len()],
            units,
            order,
            next: 0,
            cost: 0,
            priority: if group.decoy { 2 } else { u8::from(group.rare) },
            rare: group.rare,
        }
    }

    fn chosen_units(&self) -> Vec<Unit<'a>> {
        self.units
            .iter()
            .zip(&self.chosen)
            .filter(|(_, chosen)| **chosen)
            .map(|(unit, _)| *unit)
            .collect()
    }

    fn is_started(&self) -> bool {
        self.cost > 0
    }

    /// Adds the next units in rank order, up to `max_rank`, while the total
    /// stays within `limit` (for this candidate) and `budget` (for all).
    fn grow(&mut self, max_rank: usize, limit: usize, used: &mut usize, costs: &Costs<'_>) {
        while let Some(&(rank, index)) = self.order.get(self.next) {
            if rank > max_rank {
                return;
            }
            self.chosen[index] = true;
            let cost = costs.of(&self.chosen_units(), self.rare);
            let total = *used - self.cost + cost;
            if cost > limit || total > costs.budget {
                self.chosen[index] = false;
                return;
            }
            *used = total;
            self.cost = cost;
            self.next += 1;
        }
    }
}

struct Costs<'c> {
    config: &'c OutputConfig,
    total_lines: u64,
    budget: usize,
}

impl Costs<'_> {
    fn of(&self, units: &[Unit<'_>], rare: bool) -> usize {
        units_cost(units, self.config) + part_overhead(units, self.total_lines, rare)
    }
}

/// The parts shown between `head_end` and `tail_start` within `budget`
/// (markers included), in output order, and what they cost.
pub(super) fn choose_parts<'a>(
    groups: &[&'a Group],
    (head_end, tail_start): (u64, u64),
    budget: usize,
    total_lines: u64,
    config: &OutputConfig,
) -> (Vec<Part<'a>>, usize) {
    let costs = Costs {
        config,
        total_lines,
        budget,
    };
    let mut candidates: Vec<Candidate<'a>> = groups
        .iter()
        .filter_map(|group| {
            let units: Vec<Unit<'_>> = group
                .entries
                .iter()
                .filter_map(|entry| entry_unit(entry).restrict(head_end, tail_start))
                .collect();
            units
                .iter()
                .any(|unit| unit.salient)
                .then(|| Candidate::new(units, group))
        })
        .collect();
    // Real failures first, then outliers, then decoys; each kind in output
    // order.
    let mut priority: Vec<usize> = (0..candidates.len()).collect();
    priority.sort_by_key(|index| candidates[*index].priority);
    // Two rounds: the failures and decoys, then the outliers with what is
    // left (an error-like line says more than a line that is only unusual).
    let mut used = 0;
    for round in [false, true] {
        let indexes: Vec<usize> = priority
            .iter()
            .copied()
            .filter(|index| candidates[*index].rare == round)
            .collect();
        share_out(&mut candidates, &indexes, &mut used, &costs);
    }
    let parts = candidates
        .iter()
        .filter(|candidate| candidate.is_started())
        .map(|candidate| Part {
            units: candidate.chosen_units(),
            rare: candidate.rare,
        })
        .collect();
    (parts, used)
}

/// Cores first, then equal shares, then the rest in order, among the
/// candidates at `indexes` (in priority order).
fn share_out(
    candidates: &mut [Candidate<'_>],
    indexes: &[usize],
    used: &mut usize,
    costs: &Costs<'_>,
) {
    for index in indexes {
        candidates[*index].grow(CORE_RANK, usize::MAX, used, costs);
    }
    let started = indexes
        .iter()
        .filter(|index| candidates[**index].is_started())
        .count();
    if let Some(share) = (costs.budget - *used).checked_div(started) {
        for index in indexes {
            let candidate = &mut candidates[*index];
            if candidate.is_started() {
                let limit = candidate.cost + share;
                candidate.grow(usize::MAX, limit, used, costs);
            }
        }
    }
    for index in indexes {
        let candidate = &mut candidates[*index];
        if candidate.is_started() {
            candidate.grow(usize::MAX, usize::MAX, used, costs);
        }
    }
}

/// How many error-like lines between `head_end` and `tail_start` are not
/// shown, and where the first of them is.
pub(super) fn omitted_errors(
    tracker: &SalientTracker,
    parts: &[Part<'_>],
    (head_end, tail_start): (u64, u64),
) -> (u64, Option<Location>) {
    let shown: Vec<Unit<'_>> = parts.iter().flat_map(|part| part.units.clone()).collect();
    let covering = |number: u64| {
        shown
            .iter()
            .find(|unit| unit.first <= number && number <= unit.last())
    };
    let mut omitted = 0;
    let mut first_omitted = None;
    let salient = tracker.groups().iter().flat_map(|group| {
        group
            .entries
            .iter()
            .filter(|entry| entry.salient && !group.is_rare_line(entry.line.number))
    });
    for entry in salient {
        let Some(unit) = entry_unit(entry).restrict(head_end, tail_start) else {
            continue;
        };
        let covered: u64 = shown
            .iter()
            .filter_map(|shown| shown.restrict(unit.first - 1, unit.last() + 1))
            .map(|overlap| overlap.count)
            .sum();
        if covered >= unit.count {
            continue;
        }
        omitted += unit.count - covered;
        if first_omitted.is_none() {
            let mut number = unit.first;
            while let Some(shown) = covering(number) {
                number = shown.last() + 1;
            }
            first_omitted = unit
                .restrict(number - 1, u64::MAX)
                .map(|rest| rest.location());
        }
    }
    // Those that came after the groups were full, less those in the tail.
    let overflow = tracker.overflow();
    let in_tail = overflow
        .recent
        .iter()
        .filter(|number| **number >= tail_start)
        .count() as u64;
    let overflow_omitted = overflow.count.saturating_sub(in_tail);
    if overflow_omitted > 0 {
        omitted += overflow_omitted;
        if first_omitted.is_none()
            && let Some((number, log_line)) = overflow.first
        {
            first_omitted = Some(log_line.map_or(Location::Output(number), Location::Log));
        }
    }
    (omitted, first_omitted)
}
