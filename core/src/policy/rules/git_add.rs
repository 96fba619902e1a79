//! Blind `git add`: pathspecs that stage everything.

use super::super::words::Word;

/// `-A`/`--all` (alone or in a bundle such as `-Af`) with no pathspec, or
/// any pathspec naming the whole tree: `.`, `./`, `:/`, `:`, `*`, quoted or
/// not (git expands pathspec globs itself).
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
        pathspecs.push(value);
    }
    if pathspecs.iter().any(|pathspec| names_whole_tree(pathspec)) {
        return true;
    }
    all && pathspecs.is_empty()
}

/// A pathspec that matches every file of the tree (or of the current
/// directory).
fn names_whole_tree(pathspec: &str) -> bool {
    let Some(path) = strip_magic(pathspec) else {
        return false;
    };
    let mut path = path;
    loop {
        let trimmed = path.trim_start_matches("./").trim_end_matches('/');
        let trimmed = trimmed.strip_suffix("/.").unwrap_or(trimmed);
        if trimmed == path {
            break;
        }
        path = trimmed;
    }
    path.is_empty() || path == "." || path.chars().all(|character| matches!(character, '*' | '/'))
}

/// The path part of a pathspec without its magic prefix (`:/`, `:(top)`,
/// `:`); `None` for exclusions (`:!x`, `:^x`), which narrow rather than
/// widen.
fn strip_magic(pathspec: &str) -> Option<&str> {
    let Some(magic) = pathspec.strip_prefix(':') else {
        return Some(pathspec);
    };
    if let Some(long) = magic.strip_prefix('(') {
        let (words, path) = long.split_once(')')?;
        if words.split(',').any(|word| word.trim() == "exclude") {
            return None;
        }
        return Some(path);
    }
    let path = magic.trim_start_matches(['/']);
    if path.starts_with(['!', '^']) {
        return None;
    }
    Some(path)
}
