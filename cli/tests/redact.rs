//! Secrets masked in output (issue 33, item 3), through the real binary:
//! a file holding a withheld variable's value and a private key block,
//! printed with `cat`, reaches the model, the log, a background job's
//! output file, progress notifications and an interactive transcript
//! masked; under `--redact off` it does not. The files are read by the
//! test itself, not through bashtool.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use bashtool_tests::{call_json, wait_until};
use rmcp::model::ProgressNotificationParam;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc;

mod mcp_support;
use mcp_support::{DEADLINE, ProgressClient, answer, send_call, text};

/// Withheld by the default drop patterns (`*SECRET*`).
const VARIABLE: &str = "DEPLOY_SECRET";
const VALUE: &str = "my-deploy-credential-42";
const KEY_BLOCK: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACBmRmFrZUZha2VGYWtlRmFrZUZha2VGYWtlRmFrZUZha2VGYWtlAAAAJg
-----END OPENSSH PRIVATE KEY-----";

/// What the file holds, and what the model must see of it.
fn file_text() -> String {
    format!("db = {VALUE}\n{KEY_BLOCK}\ntail line\n")
}
const MASKED: &str = "db = [redacted: DEPLOY_SECRET]\n[redacted: private key]\ntail line\n";
const NOTE: &str = "2 secrets were masked in this output as [redacted: …]";

/// A directory with `secrets.txt`, the state directory inside it.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("secrets.txt"), file_text()).expect("write");
    dir
}

fn bashtool(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env(VARIABLE, VALUE)
        .stderr(Stdio::piped());
    command
}

fn call(dir: &Path, flags: &[&str], input: &Value) -> (Value, Output) {
    let mut command = bashtool(dir);
    command.arg("call").args(flags);
    call_json(command, &input.to_string())
}

fn model_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().expect("text")
}

fn read(path: &Value) -> String {
    std::fs::read_to_string(path.as_str().expect("a path")).expect("read")
}

#[test]
fn the_model_and_the_log_see_the_file_masked_and_the_notes_say_how_many() {
    let dir = workspace();
    let (result, output) = call(dir.path(), &[], &json!({"command": "cat secrets.txt"}));
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        model_text(&result),
        format!("stdout:\n{MASKED}[{NOTE}]\nexit code 0")
    );
    assert_eq!(result["details"]["notes"], json!([NOTE]));
    assert_eq!(
        read(&result["details"]["log_file"]),
        format!("$ cat secrets.txt\nstdout:\n{MASKED}")
    );
}

#[test]
fn a_persistent_session_masks_as_well() {
    let dir = workspace();
    let (result, output) = call(
        dir.path(),
        &["--session", "redact-test"],
        &json!({"command": "cat secrets.txt"}),
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(result["details"]["notes"], json!([NOTE]));
    let text = model_text(&result);
    assert!(
        text.starts_with(&format!("stdout:\n{MASKED}[{NOTE}]\n")),
        "{text}"
    );
}

#[test]
fn drop_env_patterns_name_the_variables_whose_values_are_masked() {
    let dir = workspace();
    std::fs::write(dir.path().join("conn.txt"), "conn-string-value\n").expect("write");
    let mut command = bashtool(dir.path());
    command
        .env("CONNECTION", "conn-string-value")
        .args(["call", "--drop-env", "CONN*"]);
    let input = json!({"command": "cat conn.txt; echo \"[$CONNECTION]\""});
    let (result, _) = call_json(command, &input.to_string());
    assert_eq!(
        model_text(&result),
        "stdout:\n[redacted: CONNECTION]\n[]\n[1 secret was masked in this output as [redacted: …]]\nexit code 0"
    );
}

#[test]
fn redact_off_passes_the_output_on_as_written() {
    let dir = workspace();
    let (result, output) = call(
        dir.path(),
        &["--redact", "off"],
        &json!({"command": "cat secrets.txt"}),
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        model_text(&result),
        format!("stdout:\n{}exit code 0", file_text())
    );
    assert_eq!(result["details"].get("notes"), None);
    assert_eq!(
        read(&result["details"]["log_file"]),
        format!("$ cat secrets.txt\nstdout:\n{}", file_text())
    );
}

#[test]
fn the_config_file_turns_masking_off_and_the_flag_back_on() {
    let dir = workspace();
    let config = dir.path().join("bashtool.toml");
    std::fs::write(&config, "[redact]\nmode = \"off\"\n").expect("write");
    let input = json!({"command": "cat secrets.txt"});
    let mut command = bashtool(dir.path());
    command.env("BASHTOOL_CONFIG", &config).arg("call");
    let (result, _) = call_json(command, &input.to_string());
    assert_eq!(
        model_text(&result),
        format!("stdout:\n{}exit code 0", file_text())
    );
    let mut command = bashtool(dir.path());
    command
        .env("BASHTOOL_CONFIG", &config)
        .args(["call", "--redact", "on"]);
    let (result, _) = call_json(command, &input.to_string());
    assert_eq!(result["details"]["notes"], json!([NOTE]));
}

/// The value printed in two writes with a pause between them reaches
/// bashtool in two reads; it is masked as if it came in one.
#[test]
fn a_value_split_between_two_reads_is_masked() {
    let dir = workspace();
    let (head, tail) = VALUE.split_at(9);
    let command = format!("printf %s '{head}'; sleep 0.2; printf '%s\\n' '{tail}'");
    let (result, _) = call(dir.path(), &[], &json!({ "command": command }));
    assert_eq!(
        model_text(&result),
        "stdout:\n[redacted: DEPLOY_SECRET]\n[1 secret was masked in this output as [redacted: …]]\nexit code 0"
    );
}

#[test]
fn redact_env_names_more_variables_and_short_values_stay() {
    let dir = workspace();
    let command = "echo \"$CONNECTION $API_TOKEN\"";
    let mut plain = bashtool(dir.path());
    plain
        .env("CONNECTION", "conn-string-value")
        // Withheld from commands: the command prints an empty value.
        .env("API_TOKEN", "short12")
        .arg("call");
    let (result, _) = call_json(plain, &json!({ "command": command }).to_string());
    assert_eq!(
        model_text(&result),
        "stdout:\nconn-string-value \nexit code 0"
    );
    let mut named = bashtool(dir.path());
    named
        .env("CONNECTION", "conn-string-value")
        // Passed on, and a secret by the drop patterns, but too short.
        .env("SHORT_TOKEN", "short12")
        .args(["call", "--redact-env", "CONN*", "--keep-env", "SHORT_TOKEN"]);
    let command = "echo \"$CONNECTION $SHORT_TOKEN\"";
    let (result, _) = call_json(named, &json!({ "command": command }).to_string());
    assert_eq!(
        model_text(&result),
        "stdout:\n[redacted: CONNECTION] short12\n[1 secret was masked in this output as [redacted: …]]\nexit code 0"
    );
}

#[test]
fn bad_redact_flags_are_refused_and_nothing_runs() {
    let dir = workspace();
    let marker = dir.path().join("ran");
    let script = format!("touch {}", marker.display());
    for (flags, message) in [
        (
            vec!["--redact", "maybe"],
            "invalid value 'maybe' for '--redact <on|off>': expected on or off, not \"maybe\"",
        ),
        (
            vec!["--redact-env", "A=B"],
            "--redact-env: \"A=B\" is not a pattern of variable names: use letters, digits, _ and the wildcards * and ?",
        ),
        (
            vec!["--redact-env", ""],
            "--redact-env: \"\" is not a pattern of variable names: use letters, digits, _ and the wildcards * and ?",
        ),
    ] {
        let output = bashtool(dir.path())
            .arg("run")
            .args(&flags)
            .arg(&script)
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{flags:?}: {stderr}");
        assert!(!marker.exists(), "{flags:?} ran the command");
    }
    let config = dir.path().join("bad.toml");
    std::fs::write(&config, "[redact]\nmode = \"maybe\"\n").expect("write");
    let output = bashtool(dir.path())
        .env("BASHTOOL_CONFIG", &config)
        .args(["run", &script])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(!marker.exists());
}

#[tokio::test]
async fn a_background_job_writes_its_output_file_masked() {
    let dir = workspace();
    let (result, _) = call(
        dir.path(),
        &[],
        &json!({"command": "cat secrets.txt", "mode": "background"}),
    );
    let file = result["details"]["output_file"]
        .as_str()
        .expect("output file")
        .to_owned();
    let ended = wait_until(DEADLINE, || {
        std::fs::read_to_string(&file).is_ok_and(|text| text.contains("[background job exited"))
    })
    .await;
    assert!(ended, "the job did not end");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        format!("{MASKED}\n[background job exited with code 0]\n")
    );
}

/// The server alone holds the value (the client does not): the server
/// masks, and `--redact off` reaches it.
#[test]
fn a_remote_server_masks_with_its_own_variables_as_the_client_asks() {
    let dir = workspace();
    let server = format!(
        "env {VARIABLE}={VALUE} {} serve",
        env!("CARGO_BIN_EXE_bashtool")
    );
    let input = json!({"command": "cat secrets.txt"});
    let mut command = bashtool(dir.path());
    command
        .env_remove(VARIABLE)
        .args(["call", "--remote", &server, "--cwd"])
        .arg(dir.path());
    let (result, output) = call_json(command, &input.to_string());
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        model_text(&result),
        format!("stdout:\n{MASKED}[{NOTE}]\nexit code 0")
    );
    let mut command = bashtool(dir.path());
    command
        .env_remove(VARIABLE)
        .args(["call", "--redact", "off", "--remote", &server, "--cwd"])
        .arg(dir.path());
    let (result, _) = call_json(command, &input.to_string());
    assert_eq!(
        model_text(&result),
        format!("stdout:\n{}exit code 0", file_text())
    );
}

/// An interactive job that prints the secrets file and waits for input:
/// its first answer.
async fn interactive_cat(client: &McpClient) -> rmcp::model::CallToolResult {
    answer(
        send_call(
            client,
            "bash",
            json!({"command": "cat secrets.txt; read -p 'more? ' answer", "mode": "interactive"}),
        )
        .await,
    )
    .await
}

type McpClient = rmcp::service::RunningService<RoleClient, ProgressClient>;

/// `bashtool mcp` in `dir` with `flags`, the secret in its environment.
async fn start_mcp(
    dir: &Path,
    flags: &[&str],
) -> (
    McpClient,
    mpsc::UnboundedReceiver<ProgressNotificationParam>,
) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command
        .arg("mcp")
        .arg("--cwd")
        .arg(dir)
        .args(flags)
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG")
        .env(VARIABLE, VALUE);
    let transport = TokioChildProcess::new(command).expect("spawn bashtool mcp");
    let (sender, progress) = mpsc::unbounded_channel();
    let client = tokio::time::timeout(
        DEADLINE,
        ProgressClient { progress: sender }.serve(transport),
    )
    .await
    .expect("initialize in time")
    .expect("initialize");
    (client, progress)
}

/// Through `bashtool mcp`: progress notifications while the command runs,
/// and an interactive program's answer and transcript.
#[tokio::test]
async fn progress_and_the_interactive_transcript_are_masked() {
    let dir = workspace();
    let (client, mut progress) = start_mcp(dir.path(), &[]).await;

    // Progress: the notifications (each a window of the latest lines) up
    // to the marker, none with the value.
    let handle = send_call(
        &client,
        "bash",
        json!({"command": "grep db secrets.txt; echo progress-marker; sleep 300"}),
    )
    .await;
    let mut seen = String::new();
    while !seen.contains("progress-marker") {
        let param = tokio::time::timeout(DEADLINE, progress.recv())
            .await
            .expect("progress in time")
            .expect("client open");
        seen.push_str(param.message.as_deref().unwrap_or_default());
    }
    assert!(seen.contains("db = [redacted: DEPLOY_SECRET]"), "{seen}");
    assert!(!seen.contains(VALUE), "{seen}");
    handle.cancel(None).await.expect("cancelled");

    // Interactive: the program prints the file and waits for input.
    let result = interactive_cat(&client).await;
    let shown = text(&result);
    assert!(
        shown.starts_with(&format!("stdout:\n{MASKED}more? \n[{NOTE}]\n[job ")),
        "{shown}"
    );
    assert!(
        !shown.contains(VALUE) && !shown.contains("b3BlbnNza"),
        "{shown}"
    );
    let details = result.structured_content.expect("details");
    assert_eq!(details["notes"][0], json!(NOTE), "{details}");
    let transcript = details["log_file"].as_str().expect("transcript").to_owned();
    // The transcript takes whole lines as they come (the prompt's line
    // when it ends): the file's lines, masked.
    let written = wait_until(DEADLINE, || {
        std::fs::read_to_string(&transcript).is_ok_and(|text| text == MASKED)
    })
    .await;
    assert!(
        written,
        "the transcript holds {:?}",
        std::fs::read_to_string(&transcript)
    );
    client.cancel().await.expect("closed");
}

/// Under `--redact off` the interactive answer and transcript hold the
/// file as printed.
#[tokio::test]
async fn redact_off_leaves_the_interactive_transcript_as_printed() {
    let dir = workspace();
    let (client, _progress) = start_mcp(dir.path(), &["--redact", "off"]).await;
    let result = interactive_cat(&client).await;
    let shown = text(&result);
    assert!(
        shown.starts_with(&format!("stdout:\n{}more? \n[job ", file_text())),
        "{shown}"
    );
    let details = result.structured_content.expect("details");
    let transcript = details["log_file"].as_str().expect("transcript").to_owned();
    let written = wait_until(DEADLINE, || {
        std::fs::read_to_string(&transcript).is_ok_and(|text| text == file_text())
    })
    .await;
    assert!(
        written,
        "the transcript holds {:?}",
        std::fs::read_to_string(&transcript)
    );
    client.cancel().await.expect("closed");
}
