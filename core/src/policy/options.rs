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

/// What the options said, and the words after them.
#[derive(Debug)]
pub(crate) struct Parsed<'a> {
    /// Every character of every short-option bundle.
    pub(crate) short_flags: String,
    /// Every long option, without `--` and without its `=value`.
    pub(crate) long_flags: Vec<String>,
    /// Values of options that take one, in order.
    pub(crate) values: Vec<String>,
    pub(crate) operands: &'a [Word],
}

impl Parsed<'_> {
    pub(crate) fn has(&self, short: char, long: &str) -> bool {
        self.short_flags.contains(short) || self.long_flags.iter().any(|flag| flag == long)
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
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let value = arg.loose_value();
        index += 1;
        if value == "--" {
            break;
        }
        if let Some(long) = value.strip_prefix("--") {
            if let Some((name, option_value)) = long.split_once('=') {
                parsed.long_flags.push(name.to_owned());
                parsed.values.push(option_value.to_owned());
            } else {
                parsed.long_flags.push(long.to_owned());
                if spec.long_with_value.contains(&long) {
                    if let Some(next) = args.get(index) {
                        parsed.values.push(next.loose_value());
                    }
                    index += 1;
                }
            }
            continue;
        }
        let Some(bundle) = value.strip_prefix('-').filter(|bundle| !bundle.is_empty()) else {
            index -= 1;
            break;
        };
        for (position, flag) in bundle.char_indices() {
            parsed.short_flags.push(flag);
            if spec.short_with_value.contains(flag) {
                let attached = &bundle[position + flag.len_utf8()..];
                if attached.is_empty() {
                    if let Some(next) = args.get(index) {
                        parsed.values.push(next.loose_value());
                    }
                    index += 1;
                } else {
                    parsed.values.push(attached.to_owned());
                }
                break;
            }
        }
    }
    parsed.operands = args.get(index..).unwrap_or_default();
    parsed
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
        assert_eq!(parsed.values, vec!["root", "admin", "5", "x"]);
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
