//! Recursive `rm` of critical data: the root, the home directory, a `.git`
//! directory, the current or a parent directory, or everything in the
//! current directory. Unquoted brace expansions are expanded first, so
//! `/{,}` is seen as the `/ /` bash makes of it.

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
    if starts_at_home(word) {
        return true;
    }
    let placeholders = brace_expansions(&characters(word, false));
    let emptied = brace_expansions(&characters(word, true));
    placeholders.iter().any(|characters| {
        // Tilde expansion comes after brace expansion: `{a,~}` is home.
        characters
            .first()
            .is_some_and(|first| first.unquoted && first.value == '~')
            || has_git_component(characters)
            || globs_current_directory(characters)
            || is_current_or_parent(characters)
    }) || emptied
        .iter()
        .any(|characters| is_root_when_empty(characters))
}

/// Most words one brace expansion may produce before the rest is ignored
/// (`{a,b}{c,d}...` grows exponentially).
const MAX_BRACE_WORDS: usize = 256;

/// The words bash makes of unquoted `{a,b}` alternatives, in order; the word
/// itself when it has none. Sequences (`{1..3}`) are left as they are.
fn brace_expansions(characters: &[Character]) -> Vec<Vec<Character>> {
    let mut done = Vec::new();
    let mut pending = vec![characters.to_vec()];
    while let Some(word) = pending.pop() {
        if done.len() + pending.len() >= MAX_BRACE_WORDS {
            done.push(word);
            continue;
        }
        match first_brace(&word) {
            Some((open, commas, close)) => {
                let mut bounds = vec![open];
                bounds.extend(commas);
                bounds.push(close);
                // Pushed in reverse, so that they pop in order.
                for pair in bounds.windows(2).rev() {
                    let mut expanded = word[..open].to_vec();
                    expanded.extend_from_slice(&word[pair[0] + 1..pair[1]]);
                    expanded.extend_from_slice(&word[close + 1..]);
                    pending.push(expanded);
                }
            }
            None => done.push(word),
        }
    }
    done
}

/// The first unquoted `{` whose matching `}` encloses at least one comma at
/// its own level: its index, the commas' and the `}`'s.
fn first_brace(word: &[Character]) -> Option<(usize, Vec<usize>, usize)> {
    for open in 0..word.len() {
        if !word[open].unquoted || word[open].value != '{' {
            continue;
        }
        let mut depth = 0;
        let mut commas = Vec::new();
        for (index, character) in word.iter().enumerate().skip(open + 1) {
            if !character.unquoted {
                continue;
            }
            match character.value {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    if commas.is_empty() {
                        break;
                    }
                    return Some((open, commas, index));
                }
                '}' => depth -= 1,
                ',' if depth == 0 => commas.push(index),
                _ => {}
            }
        }
    }
    None
}

/// `.`, `./`, `..`, `../..`: the current directory or one above it.
fn is_current_or_parent(characters: &[Character]) -> bool {
    if characters.first().is_none_or(|first| first.value == '/') {
        return false;
    }
    components(characters)
        .into_iter()
        .filter(|component| !component.is_empty())
        .all(|component| matches!(text(component).as_str(), "." | ".."))
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

/// One character of a word, whether a glob would treat it as special, and
/// whether it was outside quotes (braces expand only there).
#[derive(Clone, Copy)]
struct Character {
    value: char,
    wildcard: bool,
    unquoted: bool,
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
                    unquoted: !quoted,
                }));
            }
            Segment::Parameter { guarded: false, .. } if empty_parameters => {}
            Segment::Tilde | Segment::Parameter { .. } | Segment::Dynamic { .. } => {
                characters.push(Character {
                    value: '\u{1}',
                    wildcard: false,
                    unquoted: false,
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
fn has_git_component(characters: &[Character]) -> bool {
    components(characters)
        .into_iter()
        .any(|component| glob_matches(component, ".git"))
}

/// `*`, `.*`, `./*`, `*/`: everything in the current directory.
fn globs_current_directory(characters: &[Character]) -> bool {
    let parts: Vec<&[Character]> = components(characters)
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
fn is_root_when_empty(characters: &[Character]) -> bool {
    if characters.first().is_none_or(|first| first.value != '/') {
        return false;
    }
    let mut depth: Vec<&[Character]> = Vec::new();
    for component in components(characters) {
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
