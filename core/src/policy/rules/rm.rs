//! Recursive `rm` of critical data: the root, the home directory, a `.git`
//! directory, or everything in the current directory.

use super::super::words::{Segment, Word};
use super::super::{PolicyConfig, Rule, Violation};

pub(crate) fn check(config: &PolicyConfig, args: &[Word]) -> Result<(), Violation> {
    if config.rm_critical && is_critical(args) {
        return Err(Violation::new(Rule::RmCritical));
    }
    Ok(())
}

/// Recursive (`-r`, `-R`, `--recursive`, in any bundle, anywhere: GNU rm
/// takes options after operands too) with at least one critical target.
/// `-f` does not matter: stdin is `/dev/null`, so rm never asks.
fn is_critical(args: &[Word]) -> bool {
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
    recursive && targets.into_iter().any(is_critical_target)
}

fn is_critical_target(word: &Word) -> bool {
    starts_at_home(word)
        || has_git_component(word)
        || globs_current_directory(word)
        || is_root_when_empty(word)
}

/// `~`, `~user`, `~/x`, `$HOME`, `${HOME}/x`, `"$HOME"`.
fn starts_at_home(word: &Word) -> bool {
    let first = word
        .segments
        .iter()
        .find(|segment| !matches!(segment, Segment::Literal { text, .. } if text.is_empty()));
    match first {
        Some(Segment::Tilde) => true,
        Some(Segment::Parameter { name, .. }) => name == "HOME",
        _ => false,
    }
}

/// One character of a word, and whether a glob would treat it as special.
#[derive(Clone, Copy)]
struct Character {
    value: char,
    wildcard: bool,
}

/// The word's characters with every expansion replaced: unguarded
/// parameters by nothing (as if empty), anything else by a placeholder.
fn characters(word: &Word, empty_parameters: bool) -> Vec<Character> {
    let mut characters = Vec::new();
    for segment in &word.segments {
        match segment {
            Segment::Literal { text, quoted } => {
                characters.extend(text.chars().map(|value| Character {
                    value,
                    wildcard: !quoted && matches!(value, '*' | '?' | '['),
                }));
            }
            Segment::Parameter { guarded: false, .. } if empty_parameters => {}
            Segment::Tilde | Segment::Parameter { .. } | Segment::Dynamic { .. } => {
                characters.push(Character {
                    value: '\u{1}',
                    wildcard: false,
                });
            }
        }
    }
    characters
}

/// Path components, split on `/`.
fn components(characters: &[Character]) -> Vec<&[Character]> {
    characters
        .split(|character| character.value == '/' && !character.wildcard)
        .collect()
}

fn text(component: &[Character]) -> String {
    component.iter().map(|character| character.value).collect()
}

/// `.git`, `x/.git`, `.git/objects`, and unquoted globs matching `.git`
/// (`.g*`, `.git*`).
fn has_git_component(word: &Word) -> bool {
    let characters = characters(word, false);
    components(&characters)
        .into_iter()
        .any(|component| glob_matches(component, ".git"))
}

/// `*`, `.*`, `./*`, `*/`: everything in the current directory.
fn globs_current_directory(word: &Word) -> bool {
    let characters = characters(word, false);
    let parts: Vec<&[Character]> = components(&characters)
        .into_iter()
        .filter(|component| text(component) != "." && !component.is_empty())
        .collect();
    if characters.first().is_some_and(|first| first.value == '/') {
        return false;
    }
    matches!(parts.as_slice(), [only] if is_match_all(only))
}

/// The word is `/` or `/*` once unguarded variables are empty: `/`, `//`,
/// `/.`, `/*`, `"$DIR"/*`, `"$PREFIX/"`. `${DIR:?}` is guarded.
fn is_root_when_empty(word: &Word) -> bool {
    let characters = characters(word, true);
    if characters.first().is_none_or(|first| first.value != '/') {
        return false;
    }
    let mut depth: Vec<&[Character]> = Vec::new();
    for component in components(&characters) {
        match text(component).as_str() {
            "" | "." => {}
            ".." => {
                depth.pop();
            }
            _ => depth.push(component),
        }
    }
    match depth.as_slice() {
        [] => true,
        [only] => is_match_all(only),
        _ => false,
    }
}

/// `*`, `**`, `.*`: matches every entry of a directory.
fn is_match_all(component: &[Character]) -> bool {
    let wildcards_only = component
        .iter()
        .all(|character| character.wildcard && character.value == '*');
    let dot_star =
        matches!(component, [dot, star] if dot.value == '.' && star.wildcard && star.value == '*');
    (!component.is_empty() && wildcards_only) || dot_star
}

/// Whether a component (with unquoted `*` and `?`) matches `name`. As in
/// bash, a wildcard never matches the leading dot of a hidden name.
fn glob_matches(pattern: &[Character], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    if name.first() == Some(&'.') && pattern.first().is_none_or(|first| first.wildcard) {
        return false;
    }
    // Classic two-pointer wildcard match with backtracking on the last `*`.
    let (mut pattern_index, mut name_index) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while name_index < name.len() {
        match pattern.get(pattern_index) {
            Some(character) if character.wildcard && character.value == '*' => {
                star = Some((pattern_index, name_index));
                pattern_index += 1;
            }
            Some(character)
                if (character.wildcard && character.value == '?')
                    || (!(character.wildcard && character.value == '[')
                        && character.value == name[name_index]) =>
            {
                pattern_index += 1;
                name_index += 1;
            }
            _ => match star {
                Some((star_pattern, star_name)) => {
                    pattern_index = star_pattern + 1;
                    name_index = star_name + 1;
                    star = Some((star_pattern, star_name + 1));
                }
                None => return false,
            },
        }
    }
    pattern[pattern_index..]
        .iter()
        .all(|character| character.wildcard && character.value == '*')
}
