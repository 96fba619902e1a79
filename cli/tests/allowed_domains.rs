//! `--allow-domain` and `[sandbox] allowed_domains` through the real
//! binary: bad entries are refused before anything runs, `call` and
//! `sandbox` report the allow-list, and with `--remote` the list travels to
//! `bashtool serve`, whose proxy enforces it. A server of the test's on the
//! host's loopback decides what got through.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use bashtool_testkit::RecordingServer;
use bashtool_tests::call_json;
use serde_json::json;

/// The binary, with a config, state and temp of the test's own.
fn bashtool(root: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command
        .current_dir(root.join("work"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG")
        .env("XDG_CONFIG_HOME", root.join("config"))
        .env("BASHTOOL_STATE_DIR", root.join("state"));
    command
}

fn root() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    for sub in ["work", "config", "state"] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    (dir, root)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn bad_domains_are_refused_before_anything_runs() {
    let (_dir, root) = root();
    let marker = root.join("work/ran");
    for (bad, why) in [
        ("", "it is empty"),
        ("https://example.com", "it has a scheme"),
        ("example.com/simple", "it has a path"),
        ("example.com:443", "it has a port"),
        ("exa mple.com", "it contains a space"),
        ("*", "`*` alone would allow every host"),
        ("*.", "`*.` names no domain"),
    ] {
        let output = bashtool(&root)
            .args(["run", "--allow-domain", bad, "--", "touch", "ran"])
            .output()
            .expect("run");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{bad:?}: {}",
            stderr(&output)
        );
        let message = stderr(&output);
        assert!(message.contains("--allow-domain <DOMAIN>"), "{message}");
        assert!(
            message.contains(&format!("is not an allowed domain: {why}")),
            "{message}"
        );
        assert!(message.contains("or `registries`"), "{message}");
        assert!(!marker.exists(), "{bad:?}: the command ran");
    }
    // The same on every subcommand that runs commands; nothing starts.
    for subcommand in ["call", "mcp", "serve"] {
        let mut child = bashtool(&root)
            .args([subcommand, "--allow-domain", "example.com:443"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // The process may refuse the flag and exit before the input is
        // written (a broken pipe then): what counts is that nothing ran.
        let _ = child
            .stdin
            .take()
            .expect("stdin")
            .write_all(br#"{"command": "touch ran"}"#);
        let output = child.wait_with_output().expect("exits");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{subcommand}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("it has a port"),
            "{}",
            stderr(&output)
        );
        assert!(
            stdout(&output).is_empty(),
            "{subcommand}: {}",
            stdout(&output)
        );
        assert!(!marker.exists(), "{subcommand}: the command ran");
    }
    // Contradictions and the config file.
    let output = bashtool(&root)
        .args([
            "run",
            "--network",
            "off",
            "--allow-domain",
            "pypi.org",
            "touch ran",
        ])
        .output()
        .expect("run");
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("--network off and --allow-domain exclude each other"),
        "{}",
        stderr(&output)
    );
    let config = root.join("config/bashtool/config.toml");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &config,
        "[sandbox]\nallowed_domains = [\"pypi.org/simple\"]\n",
    )
    .expect("write");
    let output = bashtool(&root)
        .args(["run", "touch ran"])
        .output()
        .expect("run");
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("sandbox setting `allowed_domains`: `pypi.org/simple` is not an allowed domain: it has a path"),
        "{}",
        stderr(&output)
    );
    assert!(!marker.exists(), "the command ran");
}

#[test]
fn call_and_sandbox_report_the_allow_list() {
    let (_dir, root) = root();
    let server = RecordingServer::start("127.0.0.1:0", |_| Some("pong\n".to_owned()));
    let mut call = bashtool(&root);
    call.args(["call", "--allow-domain", "localhost"])
        .stderr(Stdio::piped());
    let (result, output) = call_json(
        call,
        &json!({"command": format!("curl -fsS http://localhost:{}/", server.port)}).to_string(),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(result["is_error"], json!(false), "{result}");
    assert_eq!(result["details"]["sandbox"]["network"], json!("allowlist"));
    assert_eq!(
        result["details"]["sandbox"]["allowed_domains"],
        json!(["localhost"])
    );
    assert_eq!(server.count(), 1);

    // Its address directly, another name, the name around the proxy, a raw
    // connect: each fails, and the note names the host and the flag (or
    // that the command went around the proxy).
    for (command, says) in [
        (
            format!("curl -sS http://127.0.0.1:{}/", server.port),
            "reach `127.0.0.1` through the proxy runs bashtool with `--allow-domain 127.0.0.1`",
        ),
        (
            format!("curl -sS http://other.test:{}/", server.port),
            "bashtool's proxy refused `other.test` (port",
        ),
        (
            format!("curl -sS --noproxy '*' http://localhost:{}/", server.port),
            "`localhost` is allowed, but only through the proxy",
        ),
        (
            format!("echo x > /dev/tcp/127.0.0.1/{}", server.port),
            "`--allow-domain 127.0.0.1`",
        ),
    ] {
        let mut call = bashtool(&root);
        call.args(["call", "--allow-domain", "localhost"])
            .stderr(Stdio::piped());
        let (result, _) = call_json(call, &json!({ "command": command }).to_string());
        let notes = result["details"]["notes"].to_string();
        assert!(notes.contains(says), "{command}: {result}");
        if !command.contains("other.test") {
            assert_eq!(result["is_error"], json!(true), "{command}: {result}");
        }
    }
    assert_eq!(server.count(), 1);

    // What `bashtool sandbox` says of a list with the preset.
    let output = bashtool(&root)
        .args([
            "sandbox",
            "--allow-domain",
            "registries",
            "--allow-domain",
            "github.com",
        ])
        .output()
        .expect("sandbox");
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stdout(&output);
    assert!(
        report.contains("domain proxy (--allow-domain): yes"),
        "{report}"
    );
    assert!(report.contains("network: allowlist"), "{report}");
    assert!(
        report.contains("proxy: 127.0.0.1:3128 inside the sandbox"),
        "{report}"
    );
    for domain in [
        "crates.io",
        "pypi.org",
        "registry.npmjs.org",
        "deb.debian.org",
        "github.com",
    ] {
        assert!(
            report.contains(&format!("      {domain}\n")),
            "{domain}: {report}"
        );
    }
    // The config file's list applies to `run`, and `--network on` given
    // as a flag wins over it.
    let config = root.join("config/bashtool/config.toml");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    std::fs::write(&config, "[sandbox]\nallowed_domains = [\"registries\"]\n").expect("write");
    let network = |flags: &[&str]| {
        let output = bashtool(&root)
            .args(["run", "--json"])
            .args(flags)
            .arg("true")
            .output()
            .expect("run");
        let result: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("a JSON result");
        result["details"]["sandbox"]["network"].clone()
    };
    assert_eq!(network(&[]), json!("allowlist"));
    assert_eq!(network(&["--network", "on"]), json!("on"));
}

#[test]
fn with_remote_the_list_reaches_serve_and_its_proxy_enforces_it() {
    let (_dir, root) = root();
    let server = RecordingServer::start("127.0.0.1:0", |_| Some("pong\n".to_owned()));
    let binary = env!("CARGO_BIN_EXE_bashtool");
    let serve = |flags: &str| {
        format!(
            "BASHTOOL_STATE_DIR={root}/state exec {binary} serve --kill-grace 1 {flags}",
            root = root.display()
        )
    };
    let output = bashtool(&root)
        .args([
            "run",
            "--remote",
            &serve(""),
            "--allow-domain",
            "localhost",
            "--",
        ])
        .args(["bash", "-c"])
        .arg(format!(
            "curl -fsS http://localhost:{}/; curl -fsS https://refused.example/",
            server.port
        ))
        .output()
        .expect("run");
    assert_eq!(stdout(&output), "pong\n", "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("bashtool's proxy refused `refused.example` (port 443)")
            && message.contains("`--allow-domain refused.example`"),
        "{message}"
    );
    assert_eq!(server.count(), 1);
    // A server whose network is off cannot be widened by its client.
    let output = bashtool(&root)
        .args([
            "run",
            "--remote",
            &serve("--network off"),
            "--allow-domain",
            "localhost",
            "touch ran",
        ])
        .output()
        .expect("run");
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("the client cannot widen it"),
        "{}",
        stderr(&output)
    );
    assert!(!root.join("work/ran").exists());
}
