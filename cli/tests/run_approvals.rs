//! Approvals outside MCP, through the real binary: `bashtool run` asks on
//! its terminal (a real PTY, made by `script`), says so when stdin is not
//! one, and `bashtool call` never asks. What ran is read by the test from
//! the file the command would write.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A directory outside every writable root of the sandbox.
fn outside() -> tempfile::TempDir {
    bashtool_tests::outside_the_writable_roots(env!("CARGO_TARGET_TMPDIR"), "outside-")
}

fn bashtool(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command
        .env_remove("BASHTOOL_CONFIG")
        .env("XDG_CONFIG_HOME", state)
        .env("BASHTOOL_STATE_DIR", state.join("state"))
        .env("NO_COLOR", "1");
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn call_never_asks_and_says_so() {
    let state = tempfile::tempdir().expect("state");
    let target = outside();
    let file = target.path().join("written");
    for (input, kind) in [
        (
            serde_json::json!({"command": format!("touch {}", file.display()), "outside_sandbox": true}),
            "invalid_input",
        ),
        (
            serde_json::json!({"command": "git push --force"}),
            "blocked",
        ),
    ] {
        let mut child = bashtool(state.path())
            .arg("call")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("call");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.to_string().as_bytes())
            .expect("write");
        let output = child.wait_with_output().expect("call ends");
        let result: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
        assert_eq!(result["details"]["error_kind"], kind, "{result}");
        let text = result["content"][0]["text"].as_str().expect("text");
        assert!(
            text.contains("bashtool call never asks for approval: it has no person to ask"),
            "{text}"
        );
    }
    assert!(!file.exists());
}

#[test]
fn run_without_a_terminal_does_not_ask_and_says_so() {
    let state = tempfile::tempdir().expect("state");
    let target = outside();
    let file = target.path().join("written");
    let output = bashtool(state.path())
        .args(["run", "--outside-sandbox", "--"])
        .arg(format!("touch {}", file.display()))
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "bashtool run asks only when its stdin is a terminal, and it is not one, so nobody was asked"
        ),
        "{}",
        stderr(&output)
    );
    let blocked = bashtool(state.path())
        .args(["run", "git push --force"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(blocked.status.code(), Some(126), "{}", stderr(&blocked));
    assert!(
        stderr(&blocked).contains("stdin is a terminal, and it is not one"),
        "{}",
        stderr(&blocked)
    );
    assert!(!file.exists());
    assert!(!state.path().join("state/approvals.jsonl").exists());
}

/// `bashtool run` in a real terminal (`script` gives it a PTY), answered
/// with the line `answer`; its exit status and what the terminal showed.
fn run_in_a_terminal(state: &Path, run_args: &[String], answer: &str) -> (Option<i32>, String) {
    let mut line = vec![env!("CARGO_BIN_EXE_bashtool").to_owned(), "run".to_owned()];
    line.extend(run_args.iter().cloned());
    let quoted: Vec<String> = line
        .iter()
        .map(|word| format!("'{}'", word.replace('\'', r"'\''")))
        .collect();
    let mut child = Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env_remove("BASHTOOL_CONFIG")
        .env("XDG_CONFIG_HOME", state)
        .env("BASHTOOL_STATE_DIR", state.join("state"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(answer.as_bytes()).expect("answer typed");
    let mut shown = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut shown)
        .expect("read the terminal");
    drop(stdin);
    let status = child.wait().expect("script ends");
    (status.code(), shown)
}

#[test]
fn run_asks_on_its_terminal_and_runs_outside_the_sandbox_only_when_allowed() {
    let state = tempfile::tempdir().expect("state");
    let target = outside();
    let file = target.path().join("written");
    let args = vec![
        "--outside-sandbox".to_owned(),
        "--justification".to_owned(),
        "the report goes next to the others".to_owned(),
        "--".to_owned(),
        format!("echo hi > {}", file.display()),
    ];
    let (status, shown) = run_in_a_terminal(state.path(), &args, "d\n");
    assert_eq!(status, Some(126), "{shown}");
    assert!(
        shown.contains("run a command OUTSIDE the sandbox"),
        "{shown}"
    );
    assert!(
        shown.contains("Reason: the report goes next to the others"),
        "{shown}"
    );
    assert!(
        shown.contains("[o] allow once  [s] allow for this session (this run)  [d] deny"),
        "{shown}"
    );
    assert!(shown.contains("Not run: the user refused"), "{shown}");
    assert!(!file.exists());

    let (status, shown) = run_in_a_terminal(state.path(), &args, "o\n");
    assert_eq!(status, Some(0), "{shown}");
    assert_eq!(std::fs::read_to_string(&file).expect("written"), "hi\n");
    assert!(
        shown.contains("ran outside the sandbox, in a fresh shell: approved once by the user at the terminal of bashtool run"),
        "{shown}"
    );
    let log = std::fs::read_to_string(state.path().join("state/approvals.jsonl")).expect("log");
    let answers: Vec<String> = log
        .lines()
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            line["answer"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(answers, ["denied", "allow_once"]);
}
