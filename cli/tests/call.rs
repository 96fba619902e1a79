//! `bashtool call`, `run`, `schema` and `check` through the real binary.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn bashtool() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bashtool"))
}

fn call(input: &str) -> (Value, Output) {
    let mut child = bashtool()
        .arg("call")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bashtool call");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write input");
    let output = child.wait_with_output().expect("bashtool call ends");
    let value = serde_json::from_slice(&output.stdout).expect("one JSON result on stdout");
    (value, output)
}

#[test]
fn call_shortens_a_hundred_thousand_lines_keeping_both_ends() {
    let (result, output) = call(r#"{"command":"seq 1 100000"}"#);
    assert!(output.status.success());
    let text = result["content"][0]["text"].as_str().expect("text");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..2], ["stdout:", "1"]);
    assert!(lines.contains(&"100000"));
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("... (") && line.ends_with("lines omitted) ..."))
    );
    assert!(text.len() < 8500, "{} chars", text.len());
    assert_eq!(result["is_error"], json!(false));
    assert_eq!(result["details"]["exit_code"], json!(0));
    assert_eq!(result["details"]["total_lines"], json!(100_000));
    assert_eq!(result["details"]["truncated"], json!(true));
}

#[test]
fn call_reports_a_failing_command_as_an_error_result_with_exit_zero() {
    let (result, output) = call(r#"{"command":"echo out; echo err >&2; exit 3"}"#);
    assert!(output.status.success());
    assert_eq!(
        result["content"][0]["text"],
        json!("stdout:\nout\nstderr:\nerr\nexit code 3")
    );
    assert_eq!(result["is_error"], json!(true));
    assert_eq!(result["details"]["exit_code"], json!(3));
}

#[test]
fn call_answers_input_that_is_not_json_with_an_error_result() {
    let (result, output) = call("ls -la");
    assert!(output.status.success());
    assert_eq!(result["is_error"], json!(true));
    assert_eq!(result["details"]["field"], json!("input"));
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(
        text.starts_with("invalid input: the input is not valid JSON ("),
        "{text}"
    );
}

#[test]
fn call_rejects_invalid_fields_without_running_anything() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = dir.path().join("ran");
    let input = json!({"command": format!("touch {}", marker.display()), "timeout": 0});
    let (result, output) = call(&input.to_string());
    assert!(output.status.success());
    assert_eq!(result["details"]["field"], json!("timeout"));
    assert_eq!(
        result["content"][0]["text"],
        json!("invalid input: 'timeout' must be a whole number of seconds from 1 to 1800; got 0")
    );
    assert!(!marker.exists());
}

#[test]
fn run_exits_with_the_command_status_and_streams_its_output() {
    let output = bashtool()
        .args(["run", "--", "echo visible; echo problem >&2; exit 7"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "visible\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("problem\n[exit code 7 · "), "{stderr}");
}

#[test]
fn run_json_prints_only_the_result() {
    let output = bashtool()
        .args(["run", "--json", "--", "printf hi"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(
        result["content"][0]["text"],
        json!("stdout:\nhi\nexit code 0")
    );
}

#[test]
fn run_returns_124_on_timeout() {
    let output = bashtool()
        .args([
            "run",
            "--timeout",
            "1",
            "--model-text",
            "--",
            "echo started; sleep 20",
        ])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(124));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.starts_with("stdout:\nstarted\n[command timed out after 1s;"),
        "{text}"
    );
}

#[test]
fn check_exits_by_verdict() {
    let allowed = bashtool()
        .args(["check", "ls -la"])
        .output()
        .expect("check");
    assert_eq!(allowed.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&allowed.stdout), "allowed\n");
    let blocked = bashtool()
        .args(["check", "git add -A"])
        .output()
        .expect("check");
    assert_eq!(blocked.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&blocked.stdout),
        "permission denied: blind git add commands (git add -A, git add ., git add --all, git add *) are not allowed, specify files explicitly\n"
    );
    let usage = bashtool()
        .args(["check", "--bogus"])
        .output()
        .expect("check");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn schema_prints_each_api_shape() {
    for (format, name_path) in [
        ("anthropic", "/name"),
        ("openai", "/function/name"),
        ("mcp", "/name"),
    ] {
        let output = bashtool()
            .args(["schema", "--format", format])
            .output()
            .expect("schema");
        assert!(output.status.success());
        let value: Value = serde_json::from_slice(&output.stdout).expect("json");
        assert_eq!(value.pointer(name_path), Some(&json!("bash")), "{format}");
    }
}
