//! Decodes a raw word of the AST into what the rules need: literal text
//! (quoted or not), tilde prefixes, parameter expansions, and the code that
//! runs inside it (command substitutions, also inside parameter defaults).
//!
//! brush-parser keeps words as raw source text; `brush_parser::word::parse`
//! splits one into pieces, which we flatten here.

use brush_parser::ParserOptions;
use brush_parser::word::{
    self, Parameter, ParameterExpr, ParameterTestType, SpecialParameter, TildeExpr, WordPiece,
    WordPieceWithSource,
};

use super::violation::Violation;

/// One part of a word, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Text after quote removal. `quoted` text is never globbed.
    Literal { text: String, quoted: bool },
    /// An unquoted `~` or `~user` at the start of the word.
    Tilde,
    /// `$NAME`, `${NAME}`, `${NAME:-…}`, ... `guarded` when the expansion
    /// cannot be empty (`${NAME:?}`, or a non-empty default).
    /// `alternatives` are the words it may expand to instead of the
    /// variable's value: the default of `${NAME:-word}`, `${NAME-word}`,
    /// `${NAME:=word}` and the `word` of `${NAME:+word}`.
    Parameter {
        name: String,
        guarded: bool,
        raw: String,
        alternatives: Vec<Word>,
    },
    /// The current directory, or the top of its repository: `~+`, `~+0`,
    /// `$PWD`, `$(pwd)`, `$(git rev-parse --show-toplevel)`.
    WorkingDir { raw: String },
    /// Anything else whose value is only known at run time: command and
    /// arithmetic substitutions, `~-`, ...
    Dynamic { raw: String },
}

/// A decoded word.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Word {
    pub(crate) segments: Vec<Segment>,
}

impl Word {
    /// A word made of one literal, as produced by splitting a string.
    pub(crate) fn literal(text: &str) -> Self {
        Self {
            segments: vec![Segment::Literal {
                text: text.to_owned(),
                quoted: false,
            }],
        }
    }

    /// The value when the word has no expansion at all.
    pub(crate) fn static_value(&self) -> Option<String> {
        let mut value = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal { text, .. } => value.push_str(text),
                _ => return None,
            }
        }
        Some(value)
    }

    /// The command's name as it would be looked up: quotes and escapes
    /// removed, directories dropped (`/usr/bin/git`, `\rm`, `"rm"`,
    /// `$'rm'`). `None` when the name is only known at run time (`$CMD`).
    pub(crate) fn command_name(&self) -> Option<String> {
        let value = self.static_value()?;
        let name = value.rsplit('/').next().unwrap_or_default();
        Some(name.to_owned())
    }

    /// The value with every expansion kept as its source text: what a
    /// nested interpreter would most likely see (`bash -c "rm -rf $DIR/*"`).
    pub(crate) fn loose_value(&self) -> String {
        let mut value = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal { text, .. } => value.push_str(text),
                Segment::Tilde => value.push('~'),
                Segment::Parameter { raw, .. }
                | Segment::WorkingDir { raw }
                | Segment::Dynamic { raw } => value.push_str(raw),
            }
        }
        value
    }

    /// The words this one may become, one per choice of each parameter
    /// between its value (kept as the parameter, now without
    /// alternatives) and each of its alternatives: `${DIR:-/}` is `$DIR`
    /// or `/`. At most [`MAX_ALTERNATIVES`]; the word itself when it has
    /// no alternatives.
    pub(crate) fn alternatives(&self) -> Vec<Word> {
        let mut words = vec![Word::default()];
        for segment in &self.segments {
            let Segment::Parameter {
                name,
                guarded,
                raw,
                alternatives,
            } = segment
            else {
                for word in &mut words {
                    word.segments.push(segment.clone());
                }
                continue;
            };
            let mut choices = vec![vec![Segment::Parameter {
                name: name.clone(),
                guarded: *guarded,
                raw: raw.clone(),
                alternatives: Vec::new(),
            }]];
            for alternative in alternatives {
                choices.extend(
                    alternative
                        .alternatives()
                        .into_iter()
                        .map(|word| word.segments),
                );
            }
            let mut next = Vec::with_capacity(words.len() * choices.len());
            'words: for word in &words {
                for choice in &choices {
                    if next.len() >= MAX_ALTERNATIVES {
                        break 'words;
                    }
                    let mut extended = word.clone();
                    extended.segments.extend(choice.iter().cloned());
                    next.push(extended);
                }
            }
            words = next;
        }
        words
    }

    /// The word written back as shell source with the same meaning:
    /// quoted text quoted again, expansions as written.
    pub(crate) fn to_source(&self) -> String {
        let mut source = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal { text, quoted: true } => {
                    if !text.is_empty() {
                        source.push('\'');
                        source.push_str(&text.replace('\'', "'\\''"));
                        source.push('\'');
                    }
                }
                Segment::Literal {
                    text,
                    quoted: false,
                } => source.push_str(text),
                Segment::Tilde => source.push('~'),
                Segment::Parameter { raw, .. }
                | Segment::WorkingDir { raw }
                | Segment::Dynamic { raw } => source.push_str(raw),
            }
        }
        source
    }
}

/// Most words one word's parameter alternatives may produce.
const MAX_ALTERNATIVES: usize = 64;

/// Words joined by spaces, expansions kept as their source text: what a
/// command that hands its arguments to a shell (`eval`, `watch`, `git
/// submodule foreach`) gives it.
pub(crate) fn joined(words: &[Word]) -> String {
    words
        .iter()
        .map(Word::loose_value)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Code found inside words, to be checked as scripts of its own.
pub(crate) type NestedScripts = Vec<String>;

/// Options matching bash defaults for how we read words.
pub(crate) fn parser_options() -> ParserOptions {
    ParserOptions::default()
}

/// How deep parameter defaults may nest inside one word before we give up.
const MAX_WORD_NESTING: usize = 32;

/// Decodes `raw`, appending the code inside it to `nested`.
pub(crate) fn decode(raw: &str, nested: &mut NestedScripts) -> Result<Word, Violation> {
    let pieces = parse_word(raw)?;
    let mut word = Word::default();
    let mut decoder = Decoder {
        raw,
        nested,
        segments: &mut word.segments,
    };
    decoder.pieces(&pieces, false, 0)?;
    Ok(word)
}

/// Finds the code inside an arithmetic expression or a parameter default,
/// where only substitutions matter.
pub(crate) fn collect_substitutions(
    raw: &str,
    nested: &mut NestedScripts,
    depth: usize,
) -> Result<(), Violation> {
    if !raw.contains('$') && !raw.contains('`') {
        return Ok(());
    }
    if depth > MAX_WORD_NESTING {
        return Err(super::guard::too_deep(depth, MAX_WORD_NESTING));
    }
    // Not every such text is a valid word (arithmetic has bare parentheses);
    // a failed parse here means there is no substitution we can see.
    let Ok(pieces) = word::parse(raw, &parser_options()) else {
        return Ok(());
    };
    let mut segments = Vec::new();
    let mut decoder = Decoder {
        raw,
        nested,
        segments: &mut segments,
    };
    decoder.pieces(&pieces, false, depth)
}

/// Finds the code inside an expanded here-document body.
pub(crate) fn collect_heredoc_substitutions(
    body: &str,
    nested: &mut NestedScripts,
) -> Result<(), Violation> {
    if !body.contains('$') && !body.contains('`') {
        return Ok(());
    }
    let pieces = word::parse_heredoc(body, &parser_options())
        .map_err(|error| Violation::parse_error(&error.to_string()))?;
    let mut segments = Vec::new();
    let mut decoder = Decoder {
        raw: body,
        nested,
        segments: &mut segments,
    };
    decoder.pieces(&pieces, true, 0)
}

fn parse_word(raw: &str) -> Result<Vec<WordPieceWithSource>, Violation> {
    word::parse(&shorten_tilde_numbers(raw), &parser_options())
        .map_err(|error| Violation::parse_error(&error.to_string()))
}

/// brush-parser unwraps the parse of the number in `~N` (a directory-stack
/// entry) and panics when it overflows. The number does not matter to any
/// rule, so a long one is cut to its first digit.
fn shorten_tilde_numbers(raw: &str) -> std::borrow::Cow<'_, str> {
    const LONGEST_KEPT: usize = 9;
    if !raw.contains('~') {
        return std::borrow::Cow::Borrowed(raw);
    }
    let mut shortened = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(position) = rest.find('~') {
        let (before, after) = rest.split_at(position + 1);
        shortened.push_str(before);
        let sign = after.len() - after.trim_start_matches(['+', '-']).len();
        let sign = sign.min(1);
        shortened.push_str(&after[..sign]);
        let digits = after[sign..].bytes().take_while(u8::is_ascii_digit).count();
        if digits > LONGEST_KEPT {
            shortened.push_str(&after[sign..=sign]);
        } else {
            shortened.push_str(&after[sign..sign + digits]);
        }
        rest = &after[sign + digits..];
    }
    shortened.push_str(rest);
    std::borrow::Cow::Owned(shortened)
}

struct Decoder<'a> {
    raw: &'a str,
    nested: &'a mut NestedScripts,
    segments: &'a mut Vec<Segment>,
}

impl Decoder<'_> {
    fn source(&self, piece: &WordPieceWithSource) -> String {
        self.raw
            .get(piece.start_index..piece.end_index)
            .unwrap_or_default()
            .to_owned()
    }

    fn push_literal(&mut self, text: &str, quoted: bool) {
        if let Some(Segment::Literal {
            text: previous,
            quoted: previous_quoted,
        }) = self.segments.last_mut()
            && *previous_quoted == quoted
        {
            previous.push_str(text);
            return;
        }
        self.segments.push(Segment::Literal {
            text: text.to_owned(),
            quoted,
        });
    }

    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        depth: usize,
    ) -> Result<(), Violation> {
        for piece in pieces {
            self.piece(piece, quoted, depth)?;
        }
        Ok(())
    }

    fn piece(
        &mut self,
        piece: &WordPieceWithSource,
        quoted: bool,
        depth: usize,
    ) -> Result<(), Violation> {
        match &piece.piece {
            WordPiece::Text(text) => self.push_literal(text, quoted),
            WordPiece::SingleQuotedText(text) => self.push_literal(text, true),
            WordPiece::AnsiCQuotedText(text) => self.push_literal(&decode_ansi_c(text), true),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                // `""` is an empty literal, which matters: `rm -rf ""/` is `/`.
                self.push_literal("", true);
                self.pieces(inner, true, depth)?;
            }
            WordPiece::EscapeSequence(sequence) => {
                let escaped: String = sequence.chars().skip(1).collect();
                // A backslash-newline is a line continuation: nothing.
                if escaped != "\n" {
                    self.push_literal(&escaped, true);
                }
            }
            WordPiece::TildeExpansion(expression) => {
                let raw = self.source(piece);
                match expression {
                    TildeExpr::Home | TildeExpr::UserHome(_) => self.segments.push(Segment::Tilde),
                    // `~+` and `~+0` (`~0`) are the top of the directory
                    // stack: the current directory.
                    TildeExpr::WorkingDir | TildeExpr::NthDirFromTopOfDirStack { n: 0, .. } => {
                        self.segments.push(Segment::WorkingDir { raw });
                    }
                    _ => self.segments.push(Segment::Dynamic { raw }),
                }
            }
            WordPiece::ParameterExpansion(expression) => {
                let raw = self.source(piece);
                self.parameter(expression, raw, quoted, depth)?;
            }
            WordPiece::CommandSubstitution(code)
            | WordPiece::BackquotedCommandSubstitution(code) => {
                self.nested.push(code.clone());
                let raw = self.source(piece);
                if prints_working_directory(code) {
                    self.segments.push(Segment::WorkingDir { raw });
                } else if prints_git_directory(code) {
                    // Its output is `.git`, or a path that ends in it.
                    self.push_literal(".git", true);
                } else {
                    self.segments.push(Segment::Dynamic { raw });
                }
            }
            WordPiece::ArithmeticExpression(expression) => {
                collect_substitutions(&expression.value, self.nested, depth + 1)?;
                let raw = self.source(piece);
                self.segments.push(Segment::Dynamic { raw });
            }
        }
        Ok(())
    }

    fn parameter(
        &mut self,
        expression: &ParameterExpr,
        raw: String,
        quoted: bool,
        depth: usize,
    ) -> Result<(), Violation> {
        let (parameter, guarded, inner) = parameter_parts(expression);
        for text in inner.into_iter().flatten() {
            collect_substitutions(text, self.nested, depth + 1)?;
        }
        let Some(parameter) = parameter else {
            self.segments.push(Segment::Dynamic { raw });
            return Ok(());
        };
        let name = parameter_name(parameter);
        if name == "PWD" && matches!(expression, ParameterExpr::Parameter { .. }) {
            self.segments.push(Segment::WorkingDir { raw });
            return Ok(());
        }
        let alternatives = match alternative_text(expression) {
            Some(text) => alternative_word(text, quoted, depth + 1)?
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        self.segments.push(Segment::Parameter {
            name,
            guarded,
            raw,
            alternatives,
        });
        Ok(())
    }
}

/// `pwd`, `pwd -P`, `builtin pwd`, `/bin/pwd`, `git rev-parse
/// --show-toplevel`: code whose output is the current directory or the
/// top of its repository.
fn prints_working_directory(code: &str) -> bool {
    let words: Vec<&str> = code.split_whitespace().collect();
    let words = match words.as_slice() {
        ["builtin" | "command", rest @ ..] => rest,
        all => all,
    };
    match words {
        [program, flags @ ..] if program.rsplit('/').next() == Some("pwd") => {
            flags.iter().all(|flag| matches!(*flag, "-P" | "-L"))
        }
        ["git", "rev-parse", "--show-toplevel"] => true,
        _ => false,
    }
}

/// `git rev-parse --git-dir` (or `--absolute-git-dir`, `--git-common-dir`):
/// code whose output is the repository's `.git`.
fn prints_git_directory(code: &str) -> bool {
    matches!(
        code.split_whitespace().collect::<Vec<_>>().as_slice(),
        [
            "git",
            "rev-parse",
            "--git-dir" | "--absolute-git-dir" | "--git-common-dir"
        ]
    )
}

/// The word a parameter expansion may use instead of the variable's value.
fn alternative_text(expression: &ParameterExpr) -> Option<&String> {
    match expression {
        ParameterExpr::UseDefaultValues { default_value, .. }
        | ParameterExpr::AssignDefaultValues { default_value, .. } => default_value.as_ref(),
        ParameterExpr::UseAlternativeValue {
            alternative_value, ..
        } => alternative_value.as_ref(),
        _ => None,
    }
}

/// Decodes the word of `${NAME:-word}`. Inside double quotes it is neither
/// globbed nor tilde-expanded (`"${x:-~}"` is `~`); outside, it is a word
/// of its own (`${x:-~}/y` is the home directory's `y`). The code inside
/// it is collected separately, so what it finds here is dropped. `None`
/// when it is not a word we can read (the check then treats the expansion
/// as unknown).
fn alternative_word(text: &str, quoted: bool, depth: usize) -> Result<Option<Word>, Violation> {
    if depth > MAX_WORD_NESTING {
        return Err(super::guard::too_deep(depth, MAX_WORD_NESTING));
    }
    let Ok(pieces) = parse_word(text) else {
        return Ok(None);
    };
    let mut word = Word::default();
    let mut ignored = NestedScripts::new();
    let mut decoder = Decoder {
        raw: text,
        nested: &mut ignored,
        segments: &mut word.segments,
    };
    decoder.pieces(&pieces, quoted, depth)?;
    if quoted {
        for segment in &mut word.segments {
            match segment {
                Segment::Literal { quoted, .. } => *quoted = true,
                Segment::Tilde => {
                    *segment = Segment::Literal {
                        text: "~".to_owned(),
                        quoted: true,
                    };
                }
                _ => {}
            }
        }
    }
    Ok(Some(word))
}

/// The parameter an expansion reads, whether it can be empty, and the words
/// inside it (defaults, patterns) that may hold code.
fn parameter_parts(expression: &ParameterExpr) -> (Option<&Parameter>, bool, [Option<&String>; 2]) {
    match expression {
        ParameterExpr::Parameter { parameter, .. } | ParameterExpr::Transform { parameter, .. } => {
            (Some(parameter), false, [None, None])
        }
        ParameterExpr::UseDefaultValues {
            parameter,
            default_value,
            test_type,
            ..
        }
        | ParameterExpr::AssignDefaultValues {
            parameter,
            default_value,
            test_type,
            ..
        } => {
            // `${X-word}` keeps a variable that is set but empty.
            let non_empty_default = matches!(test_type, ParameterTestType::UnsetOrNull)
                && default_value
                    .as_ref()
                    .is_some_and(|value| !value.is_empty());
            (
                Some(parameter),
                non_empty_default,
                [default_value.as_ref(), None],
            )
        }
        ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter,
            test_type,
            error_message,
            ..
        } => (
            Some(parameter),
            matches!(test_type, ParameterTestType::UnsetOrNull),
            [error_message.as_ref(), None],
        ),
        ParameterExpr::UseAlternativeValue {
            parameter,
            alternative_value,
            ..
        } => (Some(parameter), false, [alternative_value.as_ref(), None]),
        ParameterExpr::RemoveSmallestSuffixPattern {
            parameter, pattern, ..
        }
        | ParameterExpr::RemoveLargestSuffixPattern {
            parameter, pattern, ..
        }
        | ParameterExpr::RemoveSmallestPrefixPattern {
            parameter, pattern, ..
        }
        | ParameterExpr::RemoveLargestPrefixPattern {
            parameter, pattern, ..
        }
        | ParameterExpr::UppercaseFirstChar {
            parameter, pattern, ..
        }
        | ParameterExpr::UppercasePattern {
            parameter, pattern, ..
        }
        | ParameterExpr::LowercaseFirstChar {
            parameter, pattern, ..
        }
        | ParameterExpr::LowercasePattern {
            parameter, pattern, ..
        } => (Some(parameter), false, [pattern.as_ref(), None]),
        ParameterExpr::ReplaceSubstring {
            parameter,
            pattern,
            replacement,
            ..
        } => (
            Some(parameter),
            false,
            [Some(pattern), replacement.as_ref()],
        ),
        ParameterExpr::ParameterLength { .. }
        | ParameterExpr::Substring { .. }
        | ParameterExpr::VariableNames { .. }
        | ParameterExpr::MemberKeys { .. } => (None, false, [None, None]),
    }
}

fn parameter_name(parameter: &Parameter) -> String {
    match parameter {
        Parameter::Positional(index) => index.to_string(),
        Parameter::Special(special) => match special {
            SpecialParameter::AllPositionalParameters { .. } => "@".to_owned(),
            other => other.to_string(),
        },
        Parameter::Named(name)
        | Parameter::NamedWithIndex { name, .. }
        | Parameter::NamedWithAllIndices { name, .. } => name.clone(),
    }
}

/// Decodes the body of `$'…'` (brush-parser leaves it raw), so that
/// `$'rm'` and `$'\x72m'` both read as `rm`.
pub(crate) fn decode_ansi_c(body: &str) -> String {
    let mut decoded = String::with_capacity(body.len());
    let mut characters = body.chars().peekable();
    while let Some(character) = characters.next() {
        if character != '\\' {
            decoded.push(character);
            continue;
        }
        let Some(escape) = characters.next() else {
            decoded.push('\\');
            break;
        };
        match escape {
            'n' => decoded.push('\n'),
            't' => decoded.push('\t'),
            'r' => decoded.push('\r'),
            'a' => decoded.push('\u{7}'),
            'b' => decoded.push('\u{8}'),
            'e' | 'E' => decoded.push('\u{1b}'),
            'f' => decoded.push('\u{c}'),
            'v' => decoded.push('\u{b}'),
            'x' => {
                let value = take_digits(&mut characters, 16, 2);
                push_code(&mut decoded, value);
            }
            'u' => {
                let value = take_digits(&mut characters, 16, 4);
                push_code(&mut decoded, value);
            }
            'U' => {
                let value = take_digits(&mut characters, 16, 8);
                push_code(&mut decoded, value);
            }
            '0'..='7' => {
                let first = escape.to_digit(8).unwrap_or(0);
                let rest = take_digits(&mut characters, 8, 2);
                let value = rest.map_or(Some(first), |(rest, count)| {
                    Some(first * 8u32.pow(count) + rest)
                });
                push_code(&mut decoded, value.map(|value| (value, 1)));
            }
            other => decoded.push(other),
        }
    }
    decoded
}

/// Reads up to `max` digits of `radix`: the value and how many were read.
fn take_digits(
    characters: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    max: u32,
) -> Option<(u32, u32)> {
    let mut value: u32 = 0;
    let mut count = 0;
    while count < max {
        let Some(digit) = characters.peek().and_then(|next| next.to_digit(radix)) else {
            break;
        };
        value = value.saturating_mul(radix).saturating_add(digit);
        count += 1;
        characters.next();
    }
    (count > 0).then_some((value, count))
}

fn push_code(decoded: &mut String, value: Option<(u32, u32)>) {
    if let Some(character) = value.and_then(|(value, _)| char::from_u32(value)) {
        decoded.push(character);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(raw: &str) -> Word {
        decode(raw, &mut Vec::new()).expect("decodes")
    }

    #[test]
    fn removes_quotes_and_escapes() {
        for raw in [
            "rm",
            "\"rm\"",
            "'rm'",
            "\\rm",
            "r\\m",
            "$'rm'",
            "$'\\x72m'",
            "$'\\162m'",
        ] {
            assert_eq!(decoded(raw).static_value().as_deref(), Some("rm"), "{raw}");
        }
    }

    #[test]
    fn keeps_expansions_as_source_in_the_loose_value() {
        let word = decoded("\"rm -rf $DIR/*\"");
        assert_eq!(word.static_value(), None);
        assert_eq!(word.loose_value(), "rm -rf $DIR/*");
    }

    #[test]
    fn finds_substitutions_in_defaults() {
        let mut nested = Vec::new();
        decode("${x:-$(rm -rf /)}", &mut nested).expect("decodes");
        assert_eq!(nested, vec!["rm -rf /".to_owned()]);
    }

    #[test]
    fn cuts_huge_directory_stack_numbers() {
        assert_eq!(shorten_tilde_numbers("~99999999999999999999/x"), "~9/x");
        assert_eq!(shorten_tilde_numbers("~+12 ~-3 ~user"), "~+12 ~-3 ~user");
    }

    #[test]
    fn marks_guarded_parameters() {
        assert_eq!(
            decoded("${DIR:?}").segments,
            vec![Segment::Parameter {
                name: "DIR".to_owned(),
                guarded: true,
                raw: "${DIR:?}".to_owned(),
                alternatives: Vec::new(),
            }]
        );
    }

    fn alternatives(raw: &str) -> Vec<String> {
        decoded(raw)
            .alternatives()
            .iter()
            .map(Word::to_source)
            .collect()
    }

    #[test]
    fn lists_what_a_parameter_may_expand_to() {
        assert_eq!(alternatives("${DIR:-/}"), ["${DIR:-/}", "/"]);
        assert_eq!(alternatives("${X-~}/y"), ["${X-~}/y", "~/y"]);
        assert_eq!(alternatives("\"${X:-~}\""), ["${X:-~}", "'~'"]);
        assert_eq!(alternatives("${X:+\"a b\"}"), ["${X:+\"a b\"}", "'a b'"]);
        assert_eq!(
            alternatives("${A:-${B:-/}}x"),
            ["${A:-${B:-/}}x", "${B:-/}x", "/x"]
        );
        assert_eq!(alternatives("plain"), ["plain"]);
    }

    #[test]
    fn bounds_the_alternatives_of_a_word() {
        let word = "${A:-a}${B:-b}".repeat(10);
        assert_eq!(decoded(&word).alternatives().len(), MAX_ALTERNATIVES);
    }

    #[test]
    fn an_unset_or_empty_test_guards_but_an_unset_test_does_not() {
        let guarded = |raw: &str| match &decoded(raw).segments[..] {
            [Segment::Parameter { guarded, .. }] => *guarded,
            other => panic!("{other:?}"),
        };
        assert!(guarded("${X:-a}"));
        assert!(!guarded("${X-a}"));
        assert!(!guarded("${X:-}"));
    }

    #[test]
    fn knows_the_forms_of_the_current_directory() {
        for raw in [
            "~+",
            "~+0",
            "~0",
            "$PWD",
            "${PWD}",
            "\"$PWD\"",
            "$(pwd)",
            "`pwd -P`",
            "$(git rev-parse --show-toplevel)",
        ] {
            assert!(
                matches!(
                    decoded(raw).segments.iter().find(|segment| !matches!(segment, Segment::Literal { text, .. } if text.is_empty())),
                    Some(Segment::WorkingDir { .. })
                ),
                "{raw}"
            );
        }
        for raw in ["~-", "~1", "${PWD%/*}", "$(pwdx 1)"] {
            assert!(
                !decoded(raw)
                    .segments
                    .iter()
                    .any(|segment| matches!(segment, Segment::WorkingDir { .. })),
                "{raw}"
            );
        }
    }
}
