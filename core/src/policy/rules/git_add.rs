//! Blind `git add`: pathspecs that stage everything.

use super::super::glob::{Glob, MatchOptions, PatternChar, brace_expansions};
use super::super::words::{Segment, Word};

/// `-A`/`--all` (alone or in a bundle such as `-Af`) with no pathspec, or
/// any pathspec that may name the whole tree: `.`, `./`, `:/`, `:`, `*`,
/// quoted or not (git expands pathspec globs itself), once braces are
/// expanded (`{src,.}`) and `..` is resolved (`src/..`, `../*`), through a
/// parameter's default (`${DIR:-.}`), or as the current directory (`$PWD`,
/// `~+`).
pub(crate) fn is_blind(args: &[Word]) -> bool {
    let mut all = false;
    let mut pathspecs = Vec::new();
    let mut options_done = false;
    for arg in args {
        let value = arg.loose_value();
        if !options_done {
            if value == "--" {
                options_done = true;
                continue;
            }
            if let Some(long) = value.strip_prefix("--") {
                let name = long.split('=').next().unwrap_or_default();
                // git accepts unambiguous prefixes of long options.
                if (!name.is_empty() && "all".starts_with(name)) || name == "no-ignore-removal" {
                    all = true;
                }
                continue;
            }
            if let Some(flags) = value.strip_prefix('-').filter(|flags| !flags.is_empty()) {
                all |= flags.contains('A');
                continue;
            }
        }
        pathspecs.push(arg);
    }
    let whole_tree = pathspecs.iter().any(|pathspec| {
        pathspec.alternatives().iter().any(|value| {
            brace_expansions(&characters(value), MAX_BRACE_WORDS)
                .iter()
                .any(|expanded| names_whole_tree(expanded))
        })
    });
    whole_tree || (all && pathspecs.is_empty())
}

/// Most words the brace expansion of one pathspec may produce before the
/// rest is left unexpanded.
const MAX_BRACE_WORDS: usize = 64;

/// Stands for an expansion whose value is unknown.
const PLACEHOLDER: char = '\u{1}';

/// The pathspec's characters: the current directory at the start as `.`,
/// other expansions as a placeholder.
fn characters(word: &Word) -> Vec<PatternChar> {
    let first = word
        .segments
        .iter()
        .position(|segment| !matches!(segment, Segment::Literal { text, .. } if text.is_empty()));
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
            Segment::WorkingDir { .. } if first == Some(index) => characters.push(known('.')),
            _ => characters.push(known(PLACEHOLDER)),
        }
    }
    characters
}

/// A pathspec that matches every file of the tree, of the current
/// directory or of a directory above it.
fn names_whole_tree(pathspec: &[PatternChar]) -> bool {
    if pathspec.is_empty() {
        // git refuses an empty pathspec.
        return false;
    }
    let Some(path) = strip_magic(pathspec) else {
        return false;
    };
    let mut kept: Vec<&[PatternChar]> = Vec::new();
    for component in path.split(|character| character.value == '/') {
        match step(component) {
            Step::Stay => {}
            Step::Up => match kept.pop() {
                // `$DIR/..` is wherever `$DIR` is not.
                Some(last) if last.iter().any(|character| character.value == PLACEHOLDER) => {
                    return false;
                }
                // Above the current directory: wider still.
                Some(_) | None => {}
            },
            Step::Down => kept.push(component),
        }
    }
    // git's `*` crosses `/`: `*`, `**`, `*/*`, `?*` take every path.
    kept.iter().all(|component| {
        !component.is_empty()
            && component
                .iter()
                .all(|character| matches!(character.value, '*' | '?'))
            && component.iter().any(|character| character.value == '*')
    })
}

enum Step {
    Stay,
    Up,
    Down,
}

/// `.` and `..`, and a shell pattern that could list them (`.*` where the
/// shell still lists `.` and `..`, as bash before 5.2 and macOS's bash do).
fn step(component: &[PatternChar]) -> Step {
    let options = MatchOptions {
        explicit_leading_dot: true,
        ignore_case: false,
    };
    let glob = Glob::parse(component, true);
    if glob.matches("..", options) {
        Step::Up
    } else if component.is_empty() || glob.matches(".", options) {
        Step::Stay
    } else {
        Step::Down
    }
}

/// The path part of a pathspec without its magic prefix (`:/`, `:(top)`,
/// `:`); `None` for exclusions (`:!x`, `:^x`), which narrow rather than
/// widen.
fn strip_magic(pathspec: &[PatternChar]) -> Option<&[PatternChar]> {
    let magic = match pathspec.split_first() {
        Some((colon, magic)) if colon.value == ':' => magic,
        _ => return Some(pathspec),
    };
    if magic.first().is_some_and(|open| open.value == '(') {
        let close = magic.iter().position(|character| character.value == ')')?;
        let words: String = magic[1..close]
            .iter()
            .map(|character| character.value)
            .collect();
        if words.split(',').any(|word| word.trim() == "exclude") {
            return None;
        }
        return Some(&magic[close + 1..]);
    }
    let start = magic
        .iter()
        .position(|character| character.value != '/')
        .unwrap_or(magic.len());
    let path = &magic[start..];
    if path
        .first()
        .is_some_and(|first| matches!(first.value, '!' | '^'))
    {
        return None;
    }
    Some(path)
}
