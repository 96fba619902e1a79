//! Shell patterns, as bash and find match them against one name: `*`, `?`,
//! bracket expressions (`[.]`, `[!a]`, `[a-z]`, `[[:alpha:]]`) and, where
//! the shell could have `extglob` on, `@(…)`, `?(…)`, `*(…)`, `+(…)` and
//! `!(…)`. The rules ask whether a pattern can match a protected name
//! (`.git`, `.`, `..`) or every name of a directory. Brace expansion
//! (`{a,b}`), which comes before, is here too.

use std::cell::Cell;

/// One character of a pattern and whether it was outside quotes (only
/// then can it be special).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PatternChar {
    pub(crate) value: char,
    pub(crate) unquoted: bool,
}

/// How the shell matches patterns in the script being checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Globbing {
    /// `shopt -s dotglob` (or `GLOBIGNORE`) may be on: `*` takes hidden
    /// names such as `.git` too.
    pub(crate) dotglob: bool,
}

impl Globbing {
    /// Seen in the script's text: a script that mentions `dotglob` or
    /// `GLOBIGNORE` may turn them on before its other commands run. (A
    /// setting left by an earlier call of a persistent session is not seen.)
    pub(crate) fn of_script(script: &str) -> Self {
        Self {
            dotglob: script.contains("dotglob") || script.contains("GLOBIGNORE"),
        }
    }
}

/// How a pattern is matched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatchOptions {
    /// A leading `.` must be matched by a `.` written in the pattern (bash
    /// without `dotglob`; POSIX leaves open whether `[.]` may, so it does
    /// here). find's `-name` has no such rule.
    pub(crate) explicit_leading_dot: bool,
    /// ASCII case is ignored (case-insensitive file systems, `-iname`).
    pub(crate) ignore_case: bool,
}

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `*`: any run of characters.
    Star,
    /// `?`: one character.
    Any,
    Bracket {
        negated: bool,
        items: Vec<BracketItem>,
    },
    Ext {
        kind: ExtKind,
        alternatives: Vec<Vec<Token>>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExtKind {
    /// `@(…)`: exactly one alternative.
    One,
    /// `?(…)`: zero or one.
    Optional,
    /// `*(…)`: zero or more.
    Many,
    /// `+(…)`: one or more.
    AtLeastOne,
    /// `!(…)`: anything no alternative matches.
    Not,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum BracketItem {
    Char(char),
    Range(char, char),
    Class(String),
}

/// Matching backtracks; a pattern built to make it explode is cut off
/// after this many steps and treated as matching (the safe answer for a
/// guard).
const MAX_STEPS: u32 = 100_000;

impl Glob {
    /// Parses a pattern whose characters carry their quoting.
    pub(crate) fn parse(characters: &[PatternChar], extglob: bool) -> Self {
        let mut parser = Parser {
            characters,
            index: 0,
            extglob,
        };
        Self {
            tokens: parser.sequence(false),
        }
    }

    /// Parses a pattern given as unquoted text (find's `-name`, a git
    /// pathspec).
    pub(crate) fn parse_text(text: &str, extglob: bool) -> Self {
        let characters: Vec<PatternChar> = text
            .chars()
            .map(|value| PatternChar {
                value,
                unquoted: true,
            })
            .collect();
        Self::parse(&characters, extglob)
    }

    /// True if nothing in the pattern is special: it matches only itself.
    pub(crate) fn is_literal(&self) -> bool {
        self.tokens
            .iter()
            .all(|token| matches!(token, Token::Literal(_)))
    }

    /// Whether the pattern matches the whole of `name`.
    pub(crate) fn matches(&self, name: &str, options: MatchOptions) -> bool {
        let name: Vec<char> = name.chars().collect();
        let matcher = Matcher {
            name: &name,
            options,
            steps: Cell::new(0),
        };
        matcher.sequence(&self.tokens, 0, name.len())
    }

    /// Whether the pattern matches every one of `names`: a pattern that
    /// takes all of these takes (nearly) everything in a directory.
    pub(crate) fn matches_all(&self, names: &[&str], options: MatchOptions) -> bool {
        !names.is_empty() && names.iter().all(|name| self.matches(name, options))
    }
}

/// Names of every kind a directory holds (case, digits, punctuation,
/// extensions): a pattern matching all of them is a match-all.
pub(crate) const ORDINARY_NAMES: &[&str] = &[
    "a",
    "Z",
    "0",
    "_x",
    "-x",
    "x.y",
    "x y",
    "x~",
    "src",
    "README.md",
    "Cargo.toml",
    "node_modules",
    "target",
];

/// The entries of `/` on a Linux system (a pattern taking all of them
/// takes most of `/` on macOS too).
pub(crate) const ROOT_NAMES: &[&str] = &[
    "bin", "boot", "dev", "etc", "home", "lib", "lib64", "media", "mnt", "opt", "proc", "root",
    "run", "sbin", "srv", "sys", "tmp", "usr", "var",
];

/// The words bash makes of unquoted `{a,b}` alternatives, in order; the word
/// itself when it has none. Sequences (`{1..3}`) are left as they are.
/// Past `limit` words, the rest stay unexpanded.
pub(crate) fn brace_expansions(characters: &[PatternChar], limit: usize) -> Vec<Vec<PatternChar>> {
    let mut done = Vec::new();
    let mut pending = vec![characters.to_vec()];
    while let Some(word) = pending.pop() {
        if done.len() + pending.len() >= limit {
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
fn first_brace(word: &[PatternChar]) -> Option<(usize, Vec<usize>, usize)> {
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

struct Parser<'a> {
    characters: &'a [PatternChar],
    index: usize,
    extglob: bool,
}

impl Parser<'_> {
    fn peek(&self, offset: usize) -> Option<PatternChar> {
        self.characters.get(self.index + offset).copied()
    }

    /// Tokens up to the end, or (inside an extglob group) up to an
    /// unquoted `|` or `)`, which is left for the caller.
    fn sequence(&mut self, in_group: bool) -> Vec<Token> {
        let mut tokens = Vec::new();
        while let Some(character) = self.peek(0) {
            if !character.unquoted {
                tokens.push(Token::Literal(character.value));
                self.index += 1;
                continue;
            }
            if in_group && matches!(character.value, '|' | ')') {
                break;
            }
            if self.extglob
                && let Some(kind) = ext_kind(character.value)
                && self
                    .peek(1)
                    .is_some_and(|next| next.unquoted && next.value == '(')
                && let Some(token) = self.ext_group(kind)
            {
                tokens.push(token);
                continue;
            }
            match character.value {
                '*' => {
                    self.index += 1;
                    tokens.push(Token::Star);
                }
                '?' => {
                    self.index += 1;
                    tokens.push(Token::Any);
                }
                '[' => {
                    if let Some(token) = self.bracket() {
                        tokens.push(token);
                    } else {
                        self.index += 1;
                        tokens.push(Token::Literal('['));
                    }
                }
                value => {
                    self.index += 1;
                    tokens.push(Token::Literal(value));
                }
            }
        }
        tokens
    }

    /// `K(a|b)` at the current position; `None` (nothing consumed) when
    /// the group is not closed, and then it is text.
    fn ext_group(&mut self, kind: ExtKind) -> Option<Token> {
        let start = self.index;
        self.index += 2;
        let mut alternatives = Vec::new();
        loop {
            alternatives.push(self.sequence(true));
            match self.peek(0) {
                Some(character) if character.value == '|' => self.index += 1,
                Some(character) if character.value == ')' => {
                    self.index += 1;
                    return Some(Token::Ext { kind, alternatives });
                }
                _ => {
                    self.index = start;
                    return None;
                }
            }
        }
    }

    /// A bracket expression at the current `[`; `None` when it has no
    /// closing `]`, and then the `[` is text.
    fn bracket(&mut self) -> Option<Token> {
        let mut index = self.index + 1;
        let negated = self
            .characters
            .get(index)
            .is_some_and(|character| character.unquoted && matches!(character.value, '!' | '^'));
        if negated {
            index += 1;
        }
        let mut items = Vec::new();
        let mut first = true;
        loop {
            let character = *self.characters.get(index)?;
            if character.value == ']' && character.unquoted && !first {
                self.index = index + 1;
                return Some(Token::Bracket { negated, items });
            }
            first = false;
            if character.value == '['
                && character.unquoted
                && self.characters.get(index + 1).map(|next| next.value) == Some(':')
                && let Some(length) = self.class_length(index + 2)
            {
                let name: String = self.characters[index + 2..index + 2 + length]
                    .iter()
                    .map(|character| character.value)
                    .collect();
                items.push(BracketItem::Class(name));
                index += 2 + length + 2;
                continue;
            }
            let is_range = self
                .characters
                .get(index + 1)
                .is_some_and(|dash| dash.value == '-')
                && self
                    .characters
                    .get(index + 2)
                    .is_some_and(|end| !(end.value == ']' && end.unquoted));
            if is_range {
                items.push(BracketItem::Range(
                    character.value,
                    self.characters[index + 2].value,
                ));
                index += 3;
            } else {
                items.push(BracketItem::Char(character.value));
                index += 1;
            }
        }
    }

    /// The length of a class name starting at `start` and closed by `:]`.
    fn class_length(&self, start: usize) -> Option<usize> {
        let rest = self.characters.get(start..)?;
        let end = rest
            .windows(2)
            .position(|pair| pair[0].value == ':' && pair[1].value == ']')?;
        rest[..end]
            .iter()
            .all(|character| character.value.is_ascii_alphabetic())
            .then_some(end)
    }
}

fn ext_kind(character: char) -> Option<ExtKind> {
    Some(match character {
        '@' => ExtKind::One,
        '?' => ExtKind::Optional,
        '*' => ExtKind::Many,
        '+' => ExtKind::AtLeastOne,
        '!' => ExtKind::Not,
        _ => return None,
    })
}

struct Matcher<'a> {
    name: &'a [char],
    options: MatchOptions,
    steps: Cell<u32>,
}

impl Matcher<'_> {
    /// A wildcard may not take the `.` that starts a hidden name.
    fn protected_dot(&self, position: usize) -> bool {
        self.options.explicit_leading_dot && position == 0 && self.name.first() == Some(&'.')
    }

    fn same(&self, left: char, right: char) -> bool {
        if self.options.ignore_case {
            left.eq_ignore_ascii_case(&right)
        } else {
            left == right
        }
    }

    /// Whether `tokens` match exactly `name[position..end]`.
    fn sequence(&self, tokens: &[Token], position: usize, end: usize) -> bool {
        let steps = self.steps.get() + 1;
        self.steps.set(steps);
        if steps > MAX_STEPS {
            return true;
        }
        let Some((token, rest)) = tokens.split_first() else {
            return position == end;
        };
        match token {
            Token::Literal(value) => {
                position < end
                    && self.same(self.name[position], *value)
                    && self.sequence(rest, position + 1, end)
            }
            Token::Any => {
                position < end
                    && !self.protected_dot(position)
                    && self.sequence(rest, position + 1, end)
            }
            // As bash's matcher: a pattern that starts with `*` never takes
            // a hidden name, even where the star could match nothing.
            Token::Star => {
                !self.protected_dot(position)
                    && (position..=end).any(|next| self.sequence(rest, next, end))
            }
            Token::Bracket { negated, items } => {
                position < end
                    && self.bracket(*negated, items, position)
                    && self.sequence(rest, position + 1, end)
            }
            Token::Ext { kind, alternatives } => self.ext(*kind, alternatives, rest, position, end),
        }
    }

    fn bracket(&self, negated: bool, items: &[BracketItem], position: usize) -> bool {
        let character = self.name[position];
        if self.protected_dot(position) {
            // Only an explicit `.` in a non-negated list may take it.
            return !negated
                && items
                    .iter()
                    .any(|item| matches!(item, BracketItem::Char('.')));
        }
        let listed = items.iter().any(|item| match item {
            BracketItem::Char(value) => self.same(character, *value),
            BracketItem::Range(low, high) => {
                (*low..=*high).contains(&character)
                    || (self.options.ignore_case
                        && ((*low..=*high).contains(&character.to_ascii_lowercase())
                            || (*low..=*high).contains(&character.to_ascii_uppercase())))
            }
            BracketItem::Class(class) => in_class(class, character),
        });
        listed != negated
    }

    /// Whether one of `alternatives` matches exactly `name[start..end]`.
    fn any_alternative(&self, alternatives: &[Vec<Token>], start: usize, end: usize) -> bool {
        alternatives
            .iter()
            .any(|alternative| self.sequence(alternative, start, end))
    }

    fn ext(
        &self,
        kind: ExtKind,
        alternatives: &[Vec<Token>],
        rest: &[Token],
        position: usize,
        end: usize,
    ) -> bool {
        let splits = position..=end;
        match kind {
            ExtKind::One => splits.into_iter().any(|next| {
                self.any_alternative(alternatives, position, next) && self.sequence(rest, next, end)
            }),
            ExtKind::Optional => {
                self.sequence(rest, position, end)
                    || splits.into_iter().any(|next| {
                        self.any_alternative(alternatives, position, next)
                            && self.sequence(rest, next, end)
                    })
            }
            ExtKind::Many | ExtKind::AtLeastOne => {
                if kind == ExtKind::Many && self.sequence(rest, position, end) {
                    return true;
                }
                // One alternative, then the group again as `*(…)`; each
                // round takes at least one character, so this ends.
                let again = Token::Ext {
                    kind: ExtKind::Many,
                    alternatives: alternatives.to_vec(),
                };
                let mut continuation = vec![again];
                continuation.extend_from_slice(rest);
                (position + 1..=end).any(|next| {
                    self.any_alternative(alternatives, position, next)
                        && self.sequence(&continuation, next, end)
                }) || (kind == ExtKind::AtLeastOne
                    && self.any_alternative(alternatives, position, position)
                    && self.sequence(rest, position, end))
            }
            ExtKind::Not => {
                !self.protected_dot(position)
                    && splits.into_iter().any(|next| {
                        !self.any_alternative(alternatives, position, next)
                            && self.sequence(rest, next, end)
                    })
            }
        }
    }
}

fn in_class(class: &str, character: char) -> bool {
    match class {
        "alpha" => character.is_alphabetic(),
        "digit" => character.is_ascii_digit(),
        "alnum" => character.is_alphanumeric(),
        "upper" => character.is_uppercase(),
        "lower" => character.is_lowercase(),
        "space" | "blank" => character.is_whitespace(),
        "punct" => character.is_ascii_punctuation(),
        "xdigit" => character.is_ascii_hexdigit(),
        "cntrl" => character.is_control(),
        "print" | "graph" => !character.is_control(),
        "word" => character.is_alphanumeric() || character == '_',
        // An unknown class: assume it may match.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASH: MatchOptions = MatchOptions {
        explicit_leading_dot: true,
        ignore_case: false,
    };
    const FIND: MatchOptions = MatchOptions {
        explicit_leading_dot: false,
        ignore_case: false,
    };

    fn matches(pattern: &str, name: &str) -> bool {
        Glob::parse_text(pattern, true).matches(name, BASH)
    }

    #[test]
    fn matches_git_the_way_bash_may() {
        for pattern in [
            ".git",
            ".g*",
            ".gi?",
            ".[g]it",
            "[.]git",
            ".gi[t]",
            ".[a-z]it",
            ".git*",
            "@(.git)",
            "+(.git|x)",
            "?(.git)",
            "*(.)git",
            "@(.|a)git",
            ".[!x]it",
            ".[[:alpha:]]it",
        ] {
            assert!(matches(pattern, ".git"), "{pattern}");
        }
        for pattern in [
            "*",
            "?git",
            "*git",
            "[!a]git",
            "[[:punct:]]git",
            "[%-0]git",
            "!(a)",
            ".git?",
            ".[!g]it",
            "*.git",
        ] {
            assert!(!matches(pattern, ".git"), "{pattern}");
        }
    }

    #[test]
    fn a_wildcard_takes_the_leading_dot_where_find_matches() {
        let star = Glob::parse_text("*", false);
        assert!(star.matches(".git", FIND));
        assert!(!star.matches(".git", BASH));
    }

    #[test]
    fn recognises_patterns_that_match_every_name() {
        for pattern in ["*", "**", "?*", "*?", "[!.]*", "!(keep)", "@(*)", "+(?)"] {
            let glob = Glob::parse_text(pattern, true);
            assert!(glob.matches_all(ORDINARY_NAMES, BASH), "{pattern}");
        }
        for pattern in ["*.log", "[a-z]*", "src", "?", "*.*", "[!x]*"] {
            let glob = Glob::parse_text(pattern, true);
            assert!(!glob.matches_all(ORDINARY_NAMES, BASH), "{pattern}");
        }
        assert!(Glob::parse_text("[a-z]*", true).matches_all(ROOT_NAMES, BASH));
    }

    #[test]
    fn an_unclosed_bracket_or_group_is_text() {
        assert!(matches("[x", "[x"));
        assert!(matches("@(x", "@(x"));
        assert!(Glob::parse_text("x[", true).is_literal());
        let quoted = [
            PatternChar {
                value: '*',
                unquoted: false,
            },
            PatternChar {
                value: '?',
                unquoted: false,
            },
        ];
        assert!(Glob::parse(&quoted, true).is_literal());
    }

    #[test]
    fn ignores_case_when_asked() {
        let options = MatchOptions {
            ignore_case: true,
            ..BASH
        };
        assert!(Glob::parse_text(".GIT", true).matches(".git", options));
        assert!(Glob::parse_text(".[G]it", true).matches(".git", options));
    }

    #[test]
    fn gives_up_on_explosive_patterns_by_matching() {
        let pattern = format!("{}b", "*(a|a)".repeat(20));
        assert!(matches(&pattern, &"a".repeat(40)));
    }
}
