//! The multi-pattern search under the masking: every literal (the secrets'
//! values and the shapes' anchors) in one pass, leftmost first and the
//! longest at a position. Teddy, aho-corasick's SIMD searcher, where the
//! CPU has it: a pass over output that holds none of the literals runs at
//! several GB/s. Teddy takes a limited number of literals, so they are
//! split into groups searched side by side; past a few groups (or without
//! SIMD) one Aho-Corasick automaton takes them all.

use aho_corasick::packed;
use aho_corasick::{AhoCorasick, Input, MatchKind, Span};

/// Literals per Teddy group (it takes up to 128; fewer keep its buckets
/// selective).
const GROUP_SIZE: usize = 64;
/// Most Teddy groups before one automaton is used instead.
const MAX_GROUPS: usize = 4;

/// A literal found in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub start: usize,
    pub end: usize,
    /// Its index in the literals the engine was built from.
    pub pattern: usize,
}

struct Group {
    searcher: packed::Searcher,
    /// The group's pattern ids → indexes of the engine's literals.
    ids: Vec<usize>,
}

enum Searcher {
    Packed(Vec<Group>),
    Automaton(AhoCorasick),
}

/// The search over a fixed set of literals.
pub(crate) struct Engine {
    searcher: Searcher,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.searcher {
            Searcher::Packed(groups) => format!("teddy, {} groups", groups.len()),
            Searcher::Automaton(_) => "aho-corasick".to_owned(),
        };
        formatter.write_str(&kind)
    }
}

/// What one scan remembers of each group's last answer: a group's leftmost
/// match from an earlier position is still its leftmost from a later one
/// that is not past its start.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    answers: Vec<Option<(usize, Option<Found>)>>,
}

impl Cache {
    pub fn clear(&mut self) {
        self.answers.clear();
    }
}

impl Engine {
    /// The engine over `literals` (none empty).
    pub fn new(literals: &[Vec<u8>]) -> Self {
        Self {
            searcher: packed_groups(literals).map_or_else(
                || Searcher::Automaton(automaton(literals)),
                Searcher::Packed,
            ),
        }
    }

    /// The leftmost literal at or after `from` (the longest of those that
    /// start there).
    pub fn find(&self, haystack: &[u8], from: usize, cache: &mut Cache) -> Option<Found> {
        if from >= haystack.len() {
            return None;
        }
        match &self.searcher {
            Searcher::Automaton(automaton) => automaton
                .find(Input::new(haystack).span(from..haystack.len()))
                .map(|found| Found {
                    start: found.start(),
                    end: found.end(),
                    pattern: found.pattern().as_usize(),
                }),
            Searcher::Packed(groups) => {
                cache.answers.resize(groups.len(), None);
                let mut best: Option<Found> = None;
                for (group, answer) in groups.iter().zip(cache.answers.iter_mut()) {
                    let found = match *answer {
                        Some((searched_from, found))
                            if searched_from <= from
                                && found.is_none_or(|found| found.start >= from) =>
                        {
                            found
                        }
                        _ => {
                            let found = group
                                .searcher
                                .find_in(haystack, Span::from(from..haystack.len()))
                                .map(|found| Found {
                                    start: found.start(),
                                    end: found.end(),
                                    pattern: group.ids[found.pattern().as_usize()],
                                });
                            *answer = Some((from, found));
                            found
                        }
                    };
                    if let Some(found) = found
                        && best.is_none_or(|best| {
                            found.start < best.start
                                || (found.start == best.start && found.end > best.end)
                        })
                    {
                        best = Some(found);
                    }
                }
                best
            }
        }
    }
}

fn packed_groups(literals: &[Vec<u8>]) -> Option<Vec<Group>> {
    // Teddy fingerprints a literal by its first bytes, as many as the
    // group's shortest has (up to 4): a three-byte anchor among the others
    // made the whole group match nearly everywhere (0.7 GB/s against 3.5
    // on ordinary text, measured), so the short ones get a group of
    // their own.
    let (short, long): (Vec<usize>, Vec<usize>) =
        (0..literals.len()).partition(|&index| literals[index].len() < 4);
    let mut groups = Vec::new();
    for ids in [short, long] {
        for chunk in ids.chunks(GROUP_SIZE) {
            if groups.len() == MAX_GROUPS {
                return None;
            }
            let mut builder = packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostLongest)
                .builder();
            for &index in chunk {
                builder.add(&literals[index]);
            }
            groups.push(Group {
                searcher: builder.build()?,
                ids: chunk.to_vec(),
            });
        }
    }
    Some(groups)
}

fn automaton(literals: &[Vec<u8>]) -> AhoCorasick {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(literals)
        // Literals of bytes always build; only limits on their total size
        // could fail, far above what environment values reach.
        .unwrap_or_else(|_| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(Vec::<Vec<u8>>::new())
                .expect("an empty automaton builds")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(engine: &Engine, text: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut cache = Cache::default();
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(hit) = engine.find(text, from, &mut cache) {
            found.push((hit.start, hit.end, hit.pattern));
            from = hit.end;
        }
        found
    }

    #[test]
    fn groups_find_the_leftmost_and_longest_like_one_automaton() {
        let mut literals: Vec<Vec<u8>> = (0..200)
            .map(|number| format!("word{number:03}x").into_bytes())
            .collect();
        literals.push(b"word007xyz".to_vec());
        let engine = Engine::new(&literals);
        assert!(
            matches!(engine.searcher, Searcher::Packed(_)) || cfg!(not(target_arch = "x86_64"))
        );
        let text = b"a word150x b word007xyz c word199x word000x";
        let expected = vec![(2, 10, 150), (13, 23, 200), (26, 34, 199), (35, 43, 0)];
        assert_eq!(all(&engine, text), expected);
        let automaton = Engine {
            searcher: Searcher::Automaton(automaton(&literals)),
        };
        assert_eq!(all(&automaton, text), expected);
    }
}
