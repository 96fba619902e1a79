//! No input crashes the process: deep nesting, huge input, random input.

use proptest::prelude::*;

use super::super::{PolicyConfig, Rule, check};
use super::blocked_by;

fn nested(opening: &str, middle: &str, closing: &str, depth: usize) -> String {
    format!("{}{middle}{}", opening.repeat(depth), closing.repeat(depth))
}

#[test]
fn refuses_ten_thousand_nested_braces() {
    let script = nested("{ ", "true", "; }", 10_000);
    assert_eq!(
        check(&script, &PolicyConfig::default()).map_err(|violation| violation.message),
        Err("could not parse the command: it is nested 10000 levels deep, more than the 500 this check allows; check the quoting".to_owned())
    );
}

#[test]
fn refuses_ten_thousand_nested_parentheses() {
    let script = nested("(", "true", ")", 10_000);
    assert_eq!(blocked_by(&script), Some(Rule::ParseError));
}

#[test]
fn refuses_ten_thousand_unclosed_braces() {
    assert_eq!(blocked_by(&"{".repeat(10_000)), Some(Rule::ParseError));
}

#[test]
fn checks_moderate_nesting_on_a_large_stack() {
    // ~300 levels overflow a 2 MiB stack in a debug build.
    let script = nested("if true; then ", "rm -rf /", "; fi", 300);
    assert_eq!(blocked_by(&script), Some(Rule::RmCritical));
    let script = nested("{ ", "ls", "; }", 400);
    assert_eq!(blocked_by(&script), None);
}

#[test]
fn refuses_deeply_nested_substitutions() {
    let script = format!("echo {}true{}", "$(".repeat(200), ")".repeat(200));
    assert_eq!(blocked_by(&script), Some(Rule::ParseError));
}

#[test]
fn refuses_deeply_nested_interpreters() {
    // `eval eval … cmd` runs `eval … cmd`: one more script per `eval`.
    let script = format!("{}rm -rf /", "eval ".repeat(40));
    assert_eq!(
        check(&script, &PolicyConfig::default()).map_err(|violation| violation.message),
        Err("could not parse the command: it is nested 32 levels deep, more than the 32 this check allows; check the quoting".to_owned())
    );
    let script = format!("{}rm -rf /", "eval ".repeat(20));
    assert_eq!(blocked_by(&script), Some(Rule::RmCritical));
}

#[test]
fn refuses_a_chain_of_wrappers_longer_than_it_follows() {
    let script = format!("{}rm -rf /", "nice ".repeat(70));
    assert_eq!(
        check(&script, &PolicyConfig::default()).map_err(|violation| violation.message),
        Err("could not parse the command: it is nested 65 levels deep, more than the 64 this check allows; check the quoting".to_owned())
    );
    let script = format!("{}rm -rf /", "nice ".repeat(60));
    assert_eq!(blocked_by(&script), Some(Rule::RmCritical));
}

#[test]
fn refuses_find_inside_find_beyond_the_chain_limit() {
    let script = format!(
        "find . {}-exec rm -rf / \\; {}",
        "-exec find . ".repeat(80),
        "\\; ".repeat(80)
    );
    assert_eq!(blocked_by(&script), Some(Rule::ParseError));
}

#[test]
fn finishes_nested_scripts_on_the_large_stack() {
    // Few enough openers to start on the caller's stack; the scripts nested
    // past the fourth level move to the large one.
    let braces = nested("{ ", "rm -rf /", "; }", 14);
    let script = format!("echo {}$({braces}{}", "$(echo ".repeat(7), ")".repeat(8));
    assert_eq!(blocked_by(&script), Some(Rule::RmCritical));
}

#[test]
fn sees_through_a_few_nested_interpreters() {
    let mut script = "rm -rf /".to_owned();
    for _ in 0..5 {
        script = format!("bash -c {}", shell_quote(&script));
    }
    assert_eq!(blocked_by(&script), Some(Rule::RmCritical));
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[test]
fn checks_a_256_kib_command() {
    let line = "cargo build --release && ./target/release/app --flag value | tee -a out.log\n";
    let mut script = line.repeat(256 * 1024 / line.len());
    script.push_str("git add -A\n");
    assert_eq!(blocked_by(&script), Some(Rule::GitAdd));
}

#[test]
fn checks_a_256_kib_word() {
    let script = format!("echo {}", "a".repeat(256 * 1024));
    assert_eq!(blocked_by(&script), None);
}

#[test]
fn refuses_scripts_over_a_mebibyte() {
    let script = "#".repeat(2 * 1024 * 1024);
    assert_eq!(blocked_by(&script), Some(Rule::ParseError));
}

#[test]
fn survives_a_tilde_with_a_huge_number() {
    // brush-parser unwraps the parse of the number: a panic we must catch.
    assert_eq!(
        blocked_by("rm -rf ~99999999999999999999999"),
        blocked_by("rm -rf ~99999999999999999999999")
    );
}

/// Pieces of shell syntax that nest, for random nestings.
fn fragment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "{ ",
        "; }",
        "(",
        ")",
        "$(",
        "`",
        "\"",
        "'",
        "${x:-",
        "}",
        "if true; then ",
        "; fi",
        "case x in x) ",
        ";; esac",
        "while :; do ",
        "; done",
        "[[ ",
        " ]]",
        "<(",
        "$((",
        "))",
        "bash -c '",
        "eval \"",
        "<<EOF\n",
        "\nEOF\n",
        "\\",
        "rm -rf / ",
        "git add -A ",
        "&&",
        "|",
        ";",
        "\n",
        "#",
        "~",
        "*",
        "! ",
        "f() ",
        "$'\\x",
        "=",
        "find . ",
        "-exec ",
        " \\; ",
        " -delete",
        " ! ",
        "[",
        "]",
        "@(",
        "!(",
        "[!",
        "|",
        "${x:-/}",
        "${x-~}",
        "~+",
        "../",
        "{a,",
        "xargs ",
        "parallel ",
        " ::: ",
        "flock f ",
        "git -c alias.a=",
        "git stage ",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_strings_never_panic(script in ".{0,200}") {
        let _ = check(&script, &PolicyConfig::default());
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let script = String::from_utf8_lossy(&bytes);
        let _ = check(&script, &PolicyConfig::default());
    }

    #[test]
    fn random_nestings_never_panic(pieces in prop::collection::vec(fragment(), 0..120)) {
        let script: String = pieces.concat();
        let _ = check(&script, &PolicyConfig::default());
    }

    #[test]
    fn deep_random_nestings_return(piece in fragment(), depth in 100usize..3000) {
        let script = piece.repeat(depth);
        let _ = check(&script, &PolicyConfig::default());
    }
}

/// Measures one input: `POLICY_PROBE='<fragment>|<repeat>' cargo test -p
/// bashtool-core probe_fragment -- --ignored --nocapture`.
#[test]
#[ignore = "a measuring probe, driven by POLICY_PROBE"]
fn probe_fragment() {
    let Ok(probe) = std::env::var("POLICY_PROBE") else {
        return;
    };
    let Some((fragment, repeat)) = probe.rsplit_once('|') else {
        return;
    };
    let fragment = fragment.replace("\\n", "\n");
    let script = fragment.repeat(repeat.parse().unwrap_or(1));
    let started = std::time::Instant::now();
    let result = check(&script, &PolicyConfig::default()).map_err(|violation| violation.rule);
    eprintln!("PROBE {probe:?} {:?} {result:?}", started.elapsed());
}

/// Prints how long checks take (run with `--release`); asserts nothing.
#[test]
#[ignore = "a measurement: cargo test -p bashtool-core --release measure_check_time -- --ignored --nocapture"]
fn measure_check_time() {
    let config = PolicyConfig::default();
    let one_liner = "cd /work && cargo test -p bashtool-core 2>&1 | tail -n 20";
    let line = "if [ -f \"$file\" ]; then echo \"$(basename \"$file\")\" | tee -a log.txt; fi\n";
    let script = line.repeat(1000);
    for (name, script, runs) in [
        ("one-liner", one_liner, 10_000u32),
        ("1000 lines", &script, 10),
    ] {
        let started = std::time::Instant::now();
        for _ in 0..runs {
            let _ = check(script, &config);
        }
        eprintln!("MEASURE {name}: {:?} per check", started.elapsed() / runs);
    }
}
