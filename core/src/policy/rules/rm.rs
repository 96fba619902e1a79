//! Recursive `rm` of critical data: the root, the home directory, a `.git`
//! directory, the current or a parent directory, or everything in one of
//! them. A word is judged by every value it may take: each choice of a
//! parameter's default (`${DIR:-/}`), unguarded variables empty or not,
//! unquoted brace expansions expanded (`/{,}` is the `/ /` bash makes of
//! it), `..` resolved (`./x/../..`), and each pattern (`.[g]it`, `*`)
//! against what it could match.

use super::super::config::PolicyConfig;
use super::super::glob::{
    Glob, Globbing, MatchOptions, ORDINARY_NAMES, PatternChar, ROOT_NAMES, brace_expansions,
};
use super::super::violation::{Rule, Violation};
use super::super::words::{Segment, Word};

pub(crate) fn check(
    config: &PolicyConfig,
    args: &[Word],
    globbing: Globbing,
) -> Result<(), Violation> {
    if config.rm_critical && is_critical(args, globbing) {
        return Err(Violation::new(Rule::RmCritical));
    }
    Ok(())
}

/// Recursive (`-r`, `-R`, `--recursive`, in any bundle, anywhere: GNU rm
/// takes options after operands too) with at least one critical target.
/// `-f` does not matter: stdin is `/dev/null`, so rm never asks.
fn is_critical(args: &[Word], globbing: Globbing) -> bool {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut options_done = false;
    for arg in args {
        if !options_done && let Some(value) = arg.static_value() {
            if value == "--" {
                options_done = true;
                continue;
            }
            if let Some(long) = value.strip_prefix("--") {
                // GNU accepts unambiguous prefixes: `--rec`.
                recursive |= !long.is_empty() && "recursive".starts_with(long);
                continue;
            }
            if let Some(flags) = value.strip_prefix('-').filter(|flags| !flags.is_empty()) {
                recursive |= flags.contains(['r', 'R']);
                continue;
            }
        }
        targets.push(arg);
    }
    recursive
        && targets
            .into_iter()
            .any(|target| is_critical_target(target, globbing))
}

/// Whether deleting `word` recursively could delete critical data: any of
/// its values is, or is under, the root, home, a `.git` directory, the
/// current or a parent directory, or everything in one of them.
pub(crate) fn is_critical_target(word: &Word, globbing: Globbing) -> bool {
    let alternatives = word.alternatives();
    // Each alternative gets its share of the brace expansions, so that one
    // word costs about as much however it is built.
    let brace_words = (MAX_BRACE_WORDS / (2 * alternatives.len().max(1))).max(2);
    alternatives
        .iter()
        .any(|word| is_critical_value(word, globbing, brace_words))
}

/// Most words the brace expansions of one word may produce, over all its
/// alternatives, before the rest is left unexpanded (`{a,b}{c,d}...` grows
/// exponentially).
const MAX_BRACE_WORDS: usize = 256;

fn is_critical_value(word: &Word, globbing: Globbing, brace_words: usize) -> bool {
    if starts_at_home(word) {
        return true;
    }
    // Expansions as placeholders, then unguarded variables as empty: the
    // classic `rm -rf "$DIR"/` with `DIR` unset.
    [false, true].into_iter().any(|empty_parameters| {
        brace_expansions(&characters(word, empty_parameters), brace_words)
            .iter()
            .any(|characters| {
                // Tilde expansion comes after brace expansion: `{a,~}` is home.
                characters
                    .first()
                    .is_some_and(|first| first.unquoted && first.value == '~')
                    || has_git_component(characters, globbing)
                    || is_critical_directory(characters, globbing)
            })
    })
}

/// `~`, `~user`, `~/x`, `$HOME`, `${HOME}/x`, `"$HOME"`.
fn starts_at_home(word: &Word) -> bool {
    match first_meaningful(word).map(|index| &word.segments[index]) {
        Some(Segment::Tilde) => true,
        Some(Segment::Parameter { name, .. }) => name == "HOME",
        _ => false,
    }
}

/// Where the first segment that is not empty text is (`""~` is not home,
/// but `""$HOME` is).
fn first_meaningful(word: &Word) -> Option<usize> {
    word.segments
        .iter()
        .position(|segment| !matches!(segment, Segment::Literal { text, .. } if text.is_empty()))
}

/// Stands for an expansion whose value is unknown.
const PLACEHOLDER: char = '\u{1}';

/// The word's characters with every expansion replaced: unguarded
/// parameters by nothing (as if empty) when asked, the current directory
/// at the start by `.`, anything else by a placeholder.
fn characters(word: &Word, empty_parameters: bool) -> Vec<PatternChar> {
    let first = first_meaningful(word);
    let mut characters = Vec::new();
    for (index, segment) in word.segments.iter().enumerate() {
        let known = |value| PatternChar {
            value,
            unquoted: false,
        };
        match segment {
            Segment::Literal { text, quoted } => {
                characters.extend(text.chars().map(|value| PatternChar {
                    value,
                    unquoted: !quoted,
                }));
            }
            Segment::Parameter { guarded: false, .. } if empty_parameters => {}
            Segment::WorkingDir { .. } if first == Some(index) => characters.push(known('.')),
            Segment::Tilde
            | Segment::Parameter { .. }
            | Segment::WorkingDir { .. }
            | Segment::Dynamic { .. } => characters.push(known(PLACEHOLDER)),
        }
    }
    characters
}

/// Path components, split on `/`.
fn components(characters: &[PatternChar]) -> Vec<&[PatternChar]> {
    characters
        .split(|character| character.value == '/')
        .collect()
}

fn pattern(component: &[PatternChar]) -> Glob {
    // extglob may be on: `@(.git)` then matches `.git`; off, bash refuses
    // the word as a syntax error, so reading it as a pattern costs nothing.
    Glob::parse(component, true)
}

fn options(globbing: Globbing) -> MatchOptions {
    MatchOptions {
        explicit_leading_dot: !globbing.dotglob,
        // `.GIT` is `.git` on a case-insensitive file system (macOS).
        ignore_case: true,
    }
}

/// A component that is, or is a pattern that could match, `.git`: `.git`,
/// `x/.git`, `.git/objects`, `.g*`, `.[g]it`, `[.]git`, `@(.git)`.
fn has_git_component(characters: &[PatternChar], globbing: Globbing) -> bool {
    components(characters)
        .into_iter()
        .any(|component| pattern(component).matches(".git", options(globbing)))
}

/// What a component does to a path.
enum Step {
    /// `` (from `//`) or `.`.
    Stay,
    /// `..`, or a pattern that could match it (`.*`, `.?` where the shell
    /// still lists `.` and `..`, as bash before 5.2 does).
    Up,
    Down,
}

fn step(component: &[PatternChar]) -> Step {
    let glob = pattern(component);
    let options = MatchOptions {
        explicit_leading_dot: true,
        ignore_case: false,
    };
    if glob.matches("..", options) {
        Step::Up
    } else if component.is_empty() || glob.matches(".", options) {
        Step::Stay
    } else {
        Step::Down
    }
}

/// The path, once `.` and `..` are resolved, is `/`, the current
/// directory or one above it, or everything in one of them (`/*`, `*`,
/// `../*`, `x/../..`, `./*/..`).
fn is_critical_directory(characters: &[PatternChar], globbing: Globbing) -> bool {
    if characters.is_empty() {
        return false;
    }
    let absolute = characters[0].value == '/';
    let mut kept: Vec<&[PatternChar]> = Vec::new();
    for component in components(characters) {
        match step(component) {
            Step::Stay => {}
            Step::Up => match kept.last() {
                // `$DIR/..` is wherever `$DIR` is not: unknown, unless
                // absolute, where the worst case is that `$DIR` was one
                // component.
                Some(last)
                    if !absolute && last.iter().any(|character| character.value == PLACEHOLDER) =>
                {
                    return false;
                }
                Some(_) => {
                    kept.pop();
                }
                // Above the current directory, or `/..`, which is `/`.
                None => {}
            },
            Step::Down => kept.push(component),
        }
    }
    let names = if absolute { ROOT_NAMES } else { ORDINARY_NAMES };
    match kept.as_slice() {
        [] => true,
        [only] => {
            let glob = pattern(only);
            !glob.is_literal() && glob.matches_all(names, options(globbing))
        }
        _ => false,
    }
}
