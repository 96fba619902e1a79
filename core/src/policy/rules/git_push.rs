//! Forced `git push`.

use super::super::words::Word;

/// Long options of `git push` whose value may be the next word.
const LONG_WITH_VALUE: &[&str] = &["push-option", "repo", "receive-pack", "exec"];

/// `--force`, `-f` (also in a bundle such as `-fu`), `--mirror`, or a `+`
/// refspec. `--force-with-lease` and `--force-if-includes` are fine, but
/// `--force` wins when both are given.
pub(crate) fn is_forced(args: &[Word]) -> bool {
    let mut forced = false;
    let mut options_done = false;
    let mut skip_value = false;
    for arg in args {
        if skip_value {
            skip_value = false;
            continue;
        }
        let value = arg.loose_value();
        if !options_done {
            if value == "--" {
                options_done = true;
                continue;
            }
            if let Some(long) = value.strip_prefix("--") {
                match long.split_once('=') {
                    Some((name, _)) => forced |= name == "mirror",
                    None => match long {
                        "force" | "mirror" => forced = true,
                        "no-force" => forced = false,
                        name if LONG_WITH_VALUE.contains(&name) => skip_value = true,
                        _ => {}
                    },
                }
                continue;
            }
            if let Some(flags) = value.strip_prefix('-').filter(|flags| !flags.is_empty()) {
                for (position, flag) in flags.char_indices() {
                    if flag == 'f' {
                        forced = true;
                    }
                    // `-o VALUE` / `-oVALUE`: a push option, not flags.
                    if flag == 'o' {
                        skip_value = position + 1 == flags.len();
                        break;
                    }
                }
                continue;
            }
        }
        forced |= value.starts_with('+');
    }
    forced
}
