//! Snapshots of what people read: every subcommand's `--help`, and the text
//! the model gets for a few commands.

use std::process::Command;

fn bashtool(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("TMPDIR", "/tmp")
        .env_remove("BASHTOOL_CONFIG")
        .output()
        .expect("run bashtool")
}

fn stdout(args: &[&str]) -> String {
    let output = bashtool(args);
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn help_of_every_subcommand() {
    for subcommand in ["", "run", "call", "schema", "check", "mcp", "jobs"] {
        let args: Vec<&str> = subcommand.split_whitespace().chain(["--help"]).collect();
        let output = bashtool(&args);
        assert!(output.status.success(), "bashtool {subcommand} --help");
        let name = if subcommand.is_empty() {
            "help".to_owned()
        } else {
            format!("help_{subcommand}")
        };
        insta::assert_snapshot!(name, String::from_utf8(output.stdout).expect("UTF-8"));
    }
}

#[test]
fn version_names_the_binary() {
    assert_eq!(
        stdout(&["--version"]),
        format!("bashtool {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn an_unknown_subcommand_says_what_to_do_on_stderr() {
    let output = bashtool(&["frobnicate"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).expect("UTF-8");
    assert!(
        stderr.contains("unrecognized subcommand 'frobnicate'"),
        "{stderr}"
    );
    assert!(stderr.contains("--help"), "{stderr}");
}

/// The model's text, with a state directory of its own shown as `[state]`
/// (so the log path is stable).
fn model_text(flags: &[&str], command: &str) -> String {
    let state = tempfile::tempdir().expect("temp dir");
    let mut args = vec!["run", "--model-text", "--plain-shortening"];
    args.extend(flags);
    args.extend(["--", command]);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(&args)
        .env("BASHTOOL_STATE_DIR", state.path())
        .output()
        .expect("run bashtool");
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .replace(&state.path().display().to_string(), "[state]")
}

#[test]
fn model_text_of_a_successful_command() {
    insta::assert_snapshot!(model_text(&[], "printf 'one\\ntwo\\n'"));
}

#[test]
fn model_text_of_a_failing_command() {
    insta::assert_snapshot!(model_text(&[], "echo compiling; exit 2"));
}

#[test]
fn model_text_of_a_long_output() {
    insta::assert_snapshot!(model_text(&["--budget-tokens", "25"], "seq 1 3000"));
}
