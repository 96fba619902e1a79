//! `bashtool call`, `run`, `schema` and `check` through the real binary.

use std::process::{Command, Output, Stdio};

use bashtool_tests::call_json;
use serde_json::{Value, json};

fn bashtool() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bashtool"))
}

fn call(input: &str) -> (Value, Output) {
    let mut call = bashtool();
    call.arg("call").stderr(Stdio::piped());
    call_json(call, input)
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

/// `bashtool` with no user config file and no inherited secrets of its own.
fn isolated(dir: &std::path::Path) -> Command {
    let mut command = bashtool();
    command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG");
    command
}

fn call_with(mut command: Command, args: &[&str], input: &str) -> Value {
    command.arg("call").args(args).stderr(Stdio::piped());
    let (result, output) = call_json(command, input);
    assert!(output.status.success(), "{output:?}");
    result
}

/// Issue 18, item 6: the client's secrets do not reach commands, in a
/// fresh shell or a session, unless kept on purpose.
#[test]
fn inherited_secrets_are_withheld_from_commands() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = r#"{"command": "env | grep -E '^(ANTHROPIC_API_KEY|GITHUB_TOKEN|DB_PASSWORD|VISIBLE_VAR|CALL_TOKEN)=' | sort", "environment": {"CALL_TOKEN": "given"}}"#;
    let secrets = |mut command: Command| {
        command
            .env("ANTHROPIC_API_KEY", "sk-ant-secret")
            .env("GITHUB_TOKEN", "ghp-secret")
            .env("DB_PASSWORD", "hunter2")
            .env("VISIBLE_VAR", "seen");
        command
    };
    let seen = "stdout:\nCALL_TOKEN=given\nVISIBLE_VAR=seen\nexit code 0";
    let result = call_with(secrets(isolated(dir.path())), &[], env);
    assert_eq!(result["content"][0]["text"], json!(seen));
    let session = call_with(
        secrets(isolated(dir.path())),
        &["--session", "secrets"],
        env,
    );
    assert_eq!(
        session["content"][0]["text"],
        json!(format!("{seen}\n[cwd: {}]", dir.path().display()))
    );
    let result = call_with(
        secrets(isolated(dir.path())),
        &["--keep-env", "github_*", "--drop-env", "VISIBLE_*"],
        env,
    );
    assert_eq!(
        result["content"][0]["text"],
        // Kept for commands, still masked for the model (issue 33).
        json!(
            "stdout:\nCALL_TOKEN=given\nGITHUB_TOKEN=[redacted: GITHUB_TOKEN]\n\
             [1 secret was masked in this output as [redacted: …]]\nexit code 0"
        )
    );
}

/// Issue 18, item 6: the generated description says so.
#[test]
fn the_description_says_secrets_are_withheld() {
    let output = bashtool().args(["schema"]).output().expect("schema");
    let schema: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert!(
        schema["description"]
            .as_str()
            .is_some_and(|text| text.contains("look like secrets")),
        "{schema}"
    );
}

/// Issue 18, item 11: stdin is read with a cap, and the error result does
/// not echo the input back.
#[test]
fn call_refuses_input_over_the_cap_without_echoing_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = format!(r#"{{"command": "{}"}}"#, "x".repeat(33 * 1024 * 1024));
    let result = call_with(isolated(dir.path()), &[], &input);
    assert_eq!(result["details"]["field"], json!("input"));
    assert_eq!(result["details"]["error_kind"], json!("invalid_input"));
    assert!(
        result.to_string().len() < 4096,
        "{} bytes",
        result.to_string().len()
    );
    // Under the cap but over the command limit: refused, echoed as a prefix.
    let input = format!(r#"{{"command": "{}"}}"#, "y".repeat(4 * 1024 * 1024));
    let result = call_with(isolated(dir.path()), &[], &input);
    assert_eq!(result["details"]["field"], json!("command"));
    assert_eq!(
        result["details"]["command"],
        json!(format!("{}... [4194304 bytes in all]", "y".repeat(200)))
    );
}

/// Issue 18, item 13: `check` reads the config file the server reads, so a
/// hook refuses what the server refuses.
#[test]
fn check_and_run_follow_the_config_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[policy]\ndeny_patterns = [\"terraform destroy\"]\n[env]\nFROM_FILE = \"yes\"\n",
    )
    .expect("config");
    let blocked = isolated(dir.path())
        .args(["check", "--config"])
        .arg(&config)
        .arg("terraform destroy -auto-approve")
        .output()
        .expect("check");
    assert_eq!(blocked.status.code(), Some(1), "{blocked:?}");
    // The default location is read too.
    std::fs::create_dir(dir.path().join("bashtool")).expect("mkdir");
    std::fs::copy(&config, dir.path().join("bashtool/config.toml")).expect("copy");
    let blocked = isolated(dir.path())
        .args(["check", "terraform destroy"])
        .output()
        .expect("check");
    assert_eq!(blocked.status.code(), Some(1), "{blocked:?}");
    let run = isolated(dir.path())
        .args(["run", "echo $FROM_FILE"])
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&run.stdout), "yes\n");
    let refused = isolated(dir.path())
        .args(["run", "terraform destroy"])
        .output()
        .expect("run");
    assert_eq!(refused.status.code(), Some(126), "{refused:?}");
}

/// Issue 18, item 13: `schema --format mcp` describes the persistent
/// session `bashtool mcp` serves, and an output schema without type arrays.
#[test]
fn schema_mcp_describes_the_persistent_session_without_type_arrays() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = isolated(dir.path())
        .args(["schema", "--format", "mcp"])
        .output()
        .expect("schema");
    let schema: Value = serde_json::from_slice(&output.stdout).expect("json");
    let description = schema["description"].as_str().expect("description");
    assert!(
        description.contains("The shell is persistent"),
        "{description}"
    );
    let output_schema = schema["outputSchema"].to_string();
    assert!(!output_schema.contains(r#""type":["#), "{output_schema}");
    let stateless = isolated(dir.path())
        .args(["schema", "--format", "mcp", "--stateless"])
        .output()
        .expect("schema");
    let schema: Value = serde_json::from_slice(&stateless.stdout).expect("json");
    assert!(
        schema["description"]
            .as_str()
            .is_some_and(|text| text.contains("do NOT persist"))
    );
}

/// Issue 18, item 12: a command starting with `-` runs as a command in a
/// fresh shell too (`bash -c -x` read it as an option of bash).
#[test]
fn call_runs_a_command_starting_with_a_dash() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("-hello");
    std::fs::write(&program, "#!/bin/sh\necho \"hello $1\"\n").expect("write");
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let input = json!({
        "command": "-hello world",
        "environment": {"PATH": format!("{}:/usr/bin:/bin", dir.path().display())},
    });
    let result = call_with(isolated(dir.path()), &[], &input.to_string());
    assert_eq!(
        result["content"][0]["text"],
        json!("stdout:\nhello world\nexit code 0")
    );
}

/// bashtool run by a command inside bashtool's own sandbox (an agent that
/// tests its tools): there `clone3` is refused (the filter answers
/// `ENOSYS`), so the inner one starts its commands with the `clone` child
/// that resets our signal handlers itself, and they start as they should:
/// no blocked signal, SIGTERM not ignored.
#[test]
fn bashtool_inside_its_own_sandbox_still_runs_commands() {
    let dir = tempfile::tempdir().expect("temp dir");
    let inner = dir.path().join("inner.json");
    std::fs::write(
        &inner,
        json!({"command": "grep -E '^Sig(Blk|Ign)' /proc/self/status; echo inner-ok"}).to_string(),
    )
    .expect("write the inner input");
    // The inner result goes to a file: printed, a line that long would
    // reach the test shortened.
    let inner_result = dir.path().join("inner-result.json");
    let outer = json!({
        "command": format!(
            "'{}' call --sandbox off < '{}' > '{}'",
            env!("CARGO_BIN_EXE_bashtool"),
            inner.display(),
            inner_result.display()
        ),
    });
    let result = call_with(isolated(dir.path()), &[], &outer.to_string());
    assert_eq!(result["details"]["exit_code"], json!(0), "{result}");
    assert_eq!(
        result["details"]["sandbox"]["mode"],
        json!("workspace-write"),
        "{result}"
    );
    let inner: Value =
        serde_json::from_str(&std::fs::read_to_string(&inner_result).expect("the inner result"))
            .expect("inner JSON");
    assert_eq!(inner["details"]["exit_code"], json!(0), "{inner}");
    let text = inner["content"][0]["text"].as_str().expect("inner text");
    assert!(text.contains("inner-ok"), "{text}");
    let mask = |field: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or_else(|| panic!("no {field} in {text}"))
    };
    assert_eq!(mask("SigBlk:"), 0, "{text}");
    // SIGTERM is signal 15 on every architecture bashtool runs on.
    assert_eq!(mask("SigIgn:") & (1 << (15 - 1)), 0, "{text}");
}
