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
fn version_names_the_binary_and_the_protocols_it_speaks() {
    assert_eq!(
        stdout(&["-V"]),
        format!("bashtool {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        stdout(&["--version"]),
        format!(
            "bashtool {}\n\
             MCP protocol versions: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 \
             (stdio; --http: those with sessions, 2025-11-25 and older)\n\
             serve protocol: bashtool-serve/1\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

const SUBCOMMANDS: [&str; 10] = [
    "run",
    "call",
    "schema",
    "check",
    "mcp",
    "jobs",
    "sandbox",
    "serve",
    "completions",
    "man",
];

#[test]
fn bash_completions_parse_and_know_every_subcommand() {
    let script = stdout(&["completions", "bash"]);
    let directory = tempfile::tempdir().expect("temp dir");
    let path = directory.path().join("bashtool.bash");
    std::fs::write(&path, &script).expect("written");
    let check = Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .expect("run bash -n");
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    // The script completes the subcommands: bash lists them for `bashtool <TAB>`.
    let listed = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(bashtool ''); COMP_CWORD=1; COMP_LINE='bashtool '; \
             COMP_POINT=9; _bashtool bashtool '' bashtool; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display()
        ))
        .output()
        .expect("run bash");
    let words = String::from_utf8(listed.stdout).expect("UTF-8");
    let words: Vec<&str> = words.lines().collect();
    for subcommand in SUBCOMMANDS {
        assert!(words.contains(&subcommand), "{subcommand} not in {words:?}");
    }
}

#[test]
fn completions_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = bashtool(&["completions", shell]);
        assert!(output.status.success(), "completions {shell}");
        let script = String::from_utf8(output.stdout).expect("UTF-8");
        assert!(script.contains("serve"), "{shell}: {script}");
    }
    let output = bashtool(&["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("[possible values: bash, elvish, fish, powershell, zsh]"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn man_page_is_valid_roff_with_every_subcommand() {
    let page = stdout(&["man"]);
    assert!(
        page.starts_with(&format!(
            ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n.TH bashtool 1  \"bashtool {}\" \n",
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        &page[..200.min(page.len())]
    );
    for subcommand in SUBCOMMANDS {
        let heading = format!(".SH \"BASHTOOL {}\"\n", subcommand.to_uppercase());
        assert!(page.contains(&heading), "no section {heading:?}");
    }
    // groff reads it without a warning (-k: UTF-8 input). Outside CI a
    // machine without groff skips this part; in CI it must run (.ci/run
    // installs groff-base).
    let spawned = Command::new("groff")
        .args(["-k", "-man", "-ww", "-z", "-Tutf8"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut groff) = spawned else {
        assert!(
            std::env::var_os("CI").is_none(),
            "groff is missing in CI: .ci/run installs groff-base"
        );
        println!("SKIPPED: groff is not installed (apt-get install groff-base)");
        return;
    };
    std::io::Write::write_all(&mut groff.stdin.take().expect("stdin"), page.as_bytes())
        .expect("written");
    let output = groff.wait_with_output().expect("groff ran");
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
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
