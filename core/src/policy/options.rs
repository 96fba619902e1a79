//! Skips a program's own options to find where its operands start, the
//! way getopt does: `-abc` bundles, `-n 5` / `-n5`, `--long=value` /
//! `--long value`, `--` ends the options.

use super::words::Word;

/// Which of a program's options take a value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptionSpec {
    /// Short options followed by a value (attached or in the next word).
    pub(crate) short_with_value: &'static str,
    /// Long options (without `--`) whose value may be in the next word.
    pub(crate) long_with_value: &'static [&'static str],
}

/// The value given to an option: `-c X`, `-cX`, `--command X`,
/// `--command=X`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OptionValue {
    /// The option's short letter or long name.
    pub(crate) option: String,
    pub(crate) value: String,
}

/// What the options said, and the words after them.
#[derive(Debug)]
pub(crate) struct Parsed<'a> {
    /// Every character of every short-option bundle.
    pub(crate) short_flags: String,
    /// Every long option, without `--` and without its `=value`.
    pub(crate) long_flags: Vec<String>,
    /// Values of options that take one, in order.
    pub(crate) values: Vec<OptionValue>,
    pub(crate) operands: &'a [Word],
}

impl Parsed<'_> {
    pub(crate) fn has(&self, short: char, long: &str) -> bool {
        self.short_flags.contains(short) || self.long_flags.iter().any(|flag| flag == long)
    }

    /// The last value given to `-short` or `--long`.
    pub(crate) fn value_of(&self, short: char, long: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|given| given.option == long || given.option.chars().eq(std::iter::once(short)))
            .map(|given| given.value.as_str())
    }
}

/// Parses the leading options of `args`. Stops at the first operand.
pub(crate) fn parse<'a>(args: &'a [Word], spec: &OptionSpec) -> Parsed<'a> {
    let mut parsed = Parsed {
        short_flags: String::new(),
        long_flags: Vec::new(),
        values: Vec::new(),
        operands: &[],
    };
    let end = parse_into(args, 0, spec, &mut parsed).unwrap_or(args.len());
    parsed.operands = args.get(end..).unwrap_or_default();
    parsed
}

/// Parses options anywhere among the operands, as GNU getopt does unless
/// told otherwise (`su root -c CMD`): the options, and the operands in
/// order. `--` ends the options.
pub(crate) fn parse_permuted<'a>(
    args: &'a [Word],
    spec: &OptionSpec,
) -> (Parsed<'a>, Vec<&'a Word>) {
    let mut parsed = Parsed {
        short_flags: String::new(),
        long_flags: Vec::new(),
        values: Vec::new(),
        operands: &[],
    };
    let mut operands = Vec::new();
    let mut index = 0;
    while let Some(operand_index) = parse_into(args, index, spec, &mut parsed) {
        let Some(operand) = args.get(operand_index) else {
            break;
        };
        if operand_index > 0 && args[operand_index - 1].loose_value() == "--" {
            operands.extend(&args[operand_index..]);
            break;
        }
        operands.push(operand);
        index = operand_index + 1;
    }
    (parsed, operands)
}

/// Reads options from `start`; returns where the first operand is (after
/// a `--`, if that ended them), `None` at the end of `args`.
fn parse_into(
    args: &[Word],
    start: usize,
    spec: &OptionSpec,
    parsed: &mut Parsed<'_>,
) -> Option<usize> {
    let mut index = start;
    while let Some(arg) = args.get(index) {
        let value = arg.loose_value();
        index += 1;
        if value == "--" {
            return Some(index);
        }
        if let Some(long) = value.strip_prefix("--") {
            if let Some((name, option_value)) = long.split_once('=') {
                parsed.long_flags.push(name.to_owned());
                parsed.values.push(OptionValue {
                    option: name.to_owned(),
                    value: option_value.to_owned(),
                });
            } else {
                parsed.long_flags.push(long.to_owned());
                if spec.long_with_value.contains(&long) {
                    if let Some(next) = args.get(index) {
                        parsed.values.push(OptionValue {
                            option: long.to_owned(),
                            value: next.loose_value(),
                        });
                    }
                    index += 1;
                }
            }
            continue;
        }
        let Some(bundle) = value.strip_prefix('-').filter(|bundle| !bundle.is_empty()) else {
            return Some(index - 1);
        };
        for (position, flag) in bundle.char_indices() {
            parsed.short_flags.push(flag);
            if spec.short_with_value.contains(flag) {
                let attached = &bundle[position + flag.len_utf8()..];
                let value = if attached.is_empty() {
                    index += 1;
                    args.get(index - 1).map(Word::loose_value)
                } else {
                    Some(attached.to_owned())
                };
                if let Some(value) = value {
                    parsed.values.push(OptionValue {
                        option: flag.to_string(),
                        value,
                    });
                }
                break;
            }
        }
    }
    None
}

/// `NAME=value`, as `env` and `sudo` accept before the command.
pub(crate) fn is_assignment(word: &Word) -> bool {
    let value = word.loose_value();
    let Some((name, _)) = value.split_once('=') else {
        return false;
    };
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Word> {
        text.split_whitespace().map(Word::literal).collect()
    }

    const SPEC: OptionSpec = OptionSpec {
        short_with_value: "nu",
        long_with_value: &["user"],
    };

    #[test]
    fn skips_bundles_values_and_long_options() {
        let args = words("-E -u root --user admin -n5 --login=x rm -rf /");
        let parsed = parse(&args, &SPEC);
        assert_eq!(parsed.operands, &args[7..]);
        let values: Vec<(&str, &str)> = parsed
            .values
            .iter()
            .map(|given| (given.option.as_str(), given.value.as_str()))
            .collect();
        assert_eq!(
            values,
            vec![("u", "root"), ("user", "admin"), ("n", "5"), ("login", "x")]
        );
        assert_eq!(parsed.value_of('u', "user"), Some("admin"));
        assert_eq!(parsed.value_of('c', "command"), None);
    }

    #[test]
    fn finds_options_after_operands_when_permuting() {
        let args = words("root -n 5 -- -x y");
        let (parsed, operands) = parse_permuted(&args, &SPEC);
        assert_eq!(parsed.value_of('n', ""), Some("5"));
        assert_eq!(operands, vec![&args[0], &args[4], &args[5]]);
    }

    #[test]
    fn stops_after_double_dash() {
        let args = words("-E -- -rm");
        assert_eq!(parse(&args, &SPEC).operands, &args[2..]);
    }

    #[test]
    fn recognises_assignments() {
        assert!(is_assignment(&Word::literal("PATH=/bin")));
        assert!(!is_assignment(&Word::literal("1X=y")));
        assert!(!is_assignment(&Word::literal("rm")));
    }
}
