//! Issue 35, "What a new user trips on", through the real binary: the
//! sandbox's notes in `run` and `call` (a fresh shell and a session), the
//! sandbox flags reaching a remote `bashtool serve`, the package caches a
//! fresh home gets, the exit statuses that say why nothing ran, a
//! `--remote` that is not a server, and the help texts. (The MCP ones are
//! in `mcp.rs`, `mcp_http.rs` and `remote_docker.rs`, with a real client.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn bashtool(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `bashtool call FLAGS` with `input`: the result's text and details.
fn call(dir: &Path, flags: &[&str], input: &Value) -> (String, Value) {
    let mut child = bashtool(dir)
        .arg("call")
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("call");
    std::io::Write::write_all(
        &mut child.stdin.take().expect("stdin"),
        input.to_string().as_bytes(),
    )
    .expect("input written");
    let output = child.wait_with_output().expect("call ends");
    assert!(output.status.success(), "{output:?}");
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let text = result["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_owned();
    (text, result["details"].clone())
}

fn git_repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .expect("git");
    assert!(init.success());
    dir
}

/// Item 1: a denial the sandbox causes gets its note in `run`, and in
/// `call` in a fresh shell and in a session: a write outside the roots,
/// git's protected files (`EROFS`, `EBUSY`, relative paths), and a name
/// that cannot be resolved with the network off.
#[test]
fn every_denial_gets_its_note_in_run_and_call() {
    let dir = git_repository();
    let workspace = dir.path().canonicalize().expect("canonical");
    let cases = [
        (
            "touch /etc/bashtool-denied",
            "writing `/etc/bashtool-denied` was refused".to_owned(),
        ),
        (
            "echo x > .git/hooks/pre-commit",
            format!(
                "`{}/.git/hooks/pre-commit` is protected",
                workspace.display()
            ),
        ),
        (
            "mv .git elsewhere",
            format!("`{}/.git` is protected", workspace.display()),
        ),
        (
            "echo > /dev/tcp/example.com/80",
            "sandbox: the network is off".to_owned(),
        ),
    ];
    for (command, note) in &cases {
        let output = bashtool(dir.path())
            .args(["run", "--network", "off", "--", command])
            .output()
            .expect("run");
        assert_ne!(output.status.code(), Some(0), "{command}");
        assert!(
            stderr(&output).contains(note.as_str()),
            "run {command}: {output:?}"
        );
        for flags in [
            &["--network", "off"][..],
            &["--network", "off", "--session", "notes"],
        ] {
            let (text, details) = call(dir.path(), flags, &json!({ "command": command }));
            assert!(
                text.contains(note.as_str()),
                "call {flags:?} {command}: {text}"
            );
            assert!(
                details["notes"]
                    .to_string()
                    .contains(&note.replace('`', "\\u0060"))
                    || details["notes"].to_string().contains(note.as_str()),
                "{details}"
            );
        }
    }
}

/// Item 8: an error in a session reads as a fresh shell's, naming `bash`,
/// not the session's command file.
#[test]
fn a_session_error_names_bash() {
    let dir = tempfile::tempdir().expect("temp dir");
    for flags in [&[][..], &["--session", "names"][..]] {
        let (text, _) = call(
            dir.path(),
            flags,
            &json!({"command": "echo one\nno-such-command-here"}),
        );
        assert!(
            text.contains("bash: line 2: no-such-command-here: command not found")
                || text.contains("bash: no-such-command-here: command not found"),
            "{flags:?}: {text}"
        );
        assert!(!text.contains("command.sh"), "{text}");
    }
}

/// `bashtool serve` on this machine, as a `--remote` line.
fn local_serve(dir: &Path) -> String {
    format!(
        "{} serve --cwd '{}'",
        env!("CARGO_BIN_EXE_bashtool"),
        dir.display()
    )
}

/// Item 2: the sandbox flags given to `run` and `call` apply on the remote
/// side: `--network off` there (the note comes from over there),
/// `--sandbox off` there (the details say no sandbox), and a `--writable`
/// path is a path over there, checked there.
#[test]
fn sandbox_flags_reach_the_remote_side() {
    let dir = tempfile::tempdir().expect("temp dir");
    let line = local_serve(dir.path());
    let output = bashtool(dir.path())
        .args(["run", "--remote", &line, "--network", "off", "--json", "--"])
        .arg("echo > /dev/tcp/example.com/80")
        .output()
        .expect("run");
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(result["details"]["sandbox"]["network"], "off", "{result}");
    assert!(
        result["details"]["notes"]
            .to_string()
            .contains("the network is off"),
        "{result}"
    );
    let (_, details) = call(
        dir.path(),
        &["--remote", &line, "--sandbox", "off"],
        &json!({"command": "true"}),
    );
    assert!(details["sandbox"].is_null(), "{details}");
    // The server's default, when the client says nothing: its own sandbox.
    let (_, details) = call(
        dir.path(),
        &["--remote", &line],
        &json!({"command": "true"}),
    );
    assert_eq!(details["sandbox"]["mode"], "workspace-write", "{details}");
    // A writable directory over there, relative to the working directory.
    std::fs::create_dir(dir.path().join("extra")).expect("mkdir");
    let (_, details) = call(
        dir.path(),
        &["--remote", &line, "--writable", "extra", "--network", "off"],
        &json!({"command": "true"}),
    );
    let extra = dir.path().canonicalize().expect("canonical").join("extra");
    assert!(
        details["sandbox"]["writable"]
            .as_array()
            .is_some_and(|roots| roots.iter().any(|root| root == &json!(extra))),
        "{details}"
    );
    let missing = bashtool(dir.path())
        .args([
            "run",
            "--remote",
            &line,
            "--writable",
            "/no/such/dir",
            "--",
            "true",
        ])
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(125), "{missing:?}");
    assert!(
        stderr(&missing).contains("does not exist") && stderr(&missing).contains("server's side"),
        "{missing:?}"
    );
}

/// Item 8: exit status 126 means refused by the policy, and only that;
/// a command the policy cannot parse and an environment that cannot run
/// it have their own.
#[test]
fn exit_statuses_say_why_nothing_ran() {
    let dir = tempfile::tempdir().expect("temp dir");
    let status = |args: &[&str]| {
        let output = bashtool(dir.path())
            .arg("run")
            .args(args)
            .output()
            .expect("run");
        (output.status.code(), stderr(&output))
    };
    let (code, message) = status(&["--", "git add -A"]);
    assert_eq!(code, Some(126), "{message}");
    let (code, message) = status(&["--", "echo $(("]);
    assert_eq!(code, Some(65), "{message}");
    assert!(message.contains("could not parse the command"), "{message}");
    let (code, message) = status(&["--remote", "exit 3", "--", "true"]);
    assert_eq!(code, Some(125), "{message}");
    assert!(
        message.contains("closed the connection during the handshake"),
        "{message}"
    );
    let (code, message) = status(&["--", "exit 3"]);
    assert_eq!(code, Some(3), "{message}");
}

/// Item 8: a `--remote` line that echoes its input (`cat`) is told apart
/// at once, not after the 30 s handshake timeout.
#[test]
fn a_remote_that_is_not_a_server_fails_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let output = bashtool(dir.path())
        .args(["run", "--remote", "cat", "--", "true"])
        .output()
        .expect("run");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(125), "{output:?}");
    assert!(
        stderr(&output).contains("the remote environment `cat` is not a `bashtool serve`"),
        "{output:?}"
    );
}

/// A home directory outside every writable root (not under /tmp), for the
/// cache tests; removed on drop.
fn home_outside_the_roots() -> tempfile::TempDir {
    bashtool_tests::outside_the_writable_roots(env!("CARGO_TARGET_TMPDIR"), "home-")
}

/// Item 6: in the default sandbox, the caches of the installed tools can
/// be written whether or not they existed before (made for them, as the
/// tools would), while their code and configuration, and the rest of the
/// home directory, stay read-only.
#[test]
fn package_caches_are_usable_in_a_fresh_home() {
    let home = home_outside_the_roots();
    let home_path = home.path().canonicalize().expect("canonical");
    let bin = home_path.join("tools");
    std::fs::create_dir(&bin).expect("mkdir");
    for tool in ["cargo", "pip", "uv", "npm", "go", "gradle", "mvn", "ccache"] {
        let path = bin.join(tool);
        std::fs::write(&path, "#!/bin/sh\n").expect("stand-in");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
    }
    let workspace = tempfile::tempdir().expect("workspace");
    let caches = [
        ".cargo/registry",
        ".cargo/git",
        ".cache/pip",
        ".cache/uv",
        ".npm",
        "go/pkg/mod",
        ".cache/go-build",
        ".gradle/caches",
        ".gradle/wrapper",
        ".m2/repository",
        ".cache/ccache",
    ];
    let refused = [
        ".cargo/config.toml",
        ".cargo/bin/planted",
        ".npmrc",
        ".config/pip/pip.conf",
        ".m2/settings.xml",
        ".gradle/gradle.properties",
        ".gradle/init.d/planted.gradle",
        ".cache/ccache/ccache.conf",
        ".cache/planted",
        "go/bin/planted",
        "planted",
    ];
    let mut script = String::new();
    for cache in caches {
        script.push_str(&format!("touch ~/{cache}/probe && echo ok {cache}\n"));
    }
    for path in refused {
        script.push_str(&format!(
            "mkdir -p \"$(dirname ~/{path})\" 2>/dev/null; echo planted >> ~/{path} 2>/dev/null && echo WROTE {path}\n"
        ));
    }
    let mut command = bashtool(workspace.path());
    command
        .env("HOME", &home_path)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("BASHTOOL_STATE_DIR", workspace.path().join("state"));
    for variable in [
        "XDG_CACHE_HOME",
        "CARGO_HOME",
        "PIP_CACHE_DIR",
        "UV_CACHE_DIR",
        "npm_config_cache",
        "GOPATH",
        "GOMODCACHE",
        "GOCACHE",
        "GRADLE_USER_HOME",
        "CCACHE_DIR",
    ] {
        command.env_remove(variable);
    }
    let output = command.args(["run", "--", &script]).output().expect("run");
    let printed = stdout(&output);
    for cache in caches {
        assert!(
            printed.contains(&format!("ok {cache}\n")),
            "{cache}: {output:?}"
        );
    }
    assert!(!printed.contains("WROTE"), "{output:?}");
    // Made as the tool would (the user's, 0777 less the umask), and only
    // for installed tools: nothing else appeared in the home directory.
    let mut entries: Vec<String> = std::fs::read_dir(&home_path)
        .expect("home")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    entries.sort();
    assert_eq!(
        entries,
        [".cache", ".cargo", ".gradle", ".m2", ".npm", "go", "tools"],
        "{output:?}"
    );
    assert_eq!(
        std::fs::read_to_string(home_path.join(".cache/ccache/ccache.conf")).expect("conf"),
        ""
    );
}

/// Item 8: `bashtool jobs` gives an ended job the time it ran, as the MCP
/// server's `bash_jobs` does, not `0.0s`.
#[test]
fn an_ended_job_shows_how_long_it_ran() {
    let dir = tempfile::tempdir().expect("temp dir");
    let started = bashtool(dir.path())
        .args(["run", "--json", "--mode", "background", "--", "sleep 1"])
        .output()
        .expect("run");
    let result: Value = serde_json::from_slice(&started.stdout).expect("JSON");
    let job = result["details"]["job"]
        .as_str()
        .or_else(|| {
            result["content"][0]["text"]
                .as_str()
                .and_then(|text| text.split("job ").nth(1))
                .and_then(|rest| rest.split(['.', ' ']).next())
        })
        .expect("a job id")
        .to_owned();
    let waited = bashtool(dir.path())
        .args(["jobs", "wait", &job, "--timeout", "30"])
        .output()
        .expect("jobs wait");
    assert!(waited.status.success(), "{waited:?}");
    let listed = bashtool(dir.path())
        .args(["jobs", "--json", "list"])
        .output()
        .expect("jobs list");
    let list: Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    let text = list.to_string();
    let runtime = list["details"]["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|entry| entry["id"] == json!(job)))
        .and_then(|entry| entry["runtime_ms"].as_u64())
        .unwrap_or_else(|| panic!("the job's runtime in {text}"));
    assert!((900..30_000).contains(&runtime), "{runtime} ms: {text}");
}

/// Item 8: the help texts say what the commands take.
#[test]
fn help_texts_say_what_is_true() {
    let dir = tempfile::tempdir().expect("temp dir");
    let help = |args: &[&str]| {
        let output = bashtool(dir.path()).args(args).output().expect("help");
        assert!(output.status.success(), "{args:?}");
        stdout(&output)
    };
    let run = help(&["run", "--help"]);
    assert!(run.contains("or interactive (in a terminal"), "{run}");
    assert!(!run.contains("`bashtool --session NAME` call"), "{run}");
    let jobs = help(&["jobs", "--help"]);
    assert!(
        !jobs.contains("--cwd") && !jobs.contains("--session"),
        "{jobs}"
    );
    let stop = help(&["jobs", "stop", "--help"]);
    assert!(stop.contains("--kill-grace <SECONDS>"), "{stop}");
    let completions = help(&["completions", "--help"]);
    assert!(
        completions.contains(
            "\n  bash:  mkdir -p ~/.local/share/bash-completion/completions\n         bashtool completions bash > "
        ),
        "{completions}"
    );
    let man = help(&["man", "--help"]);
    assert!(
        man.contains("\n  mkdir -p ~/.local/share/man/man1\n  bashtool man > "),
        "{man}"
    );
    // `--grace`, the old name, still works.
    let stopped = bashtool(dir.path())
        .args(["jobs", "stop", "no-such-job", "--grace", "1"])
        .output()
        .expect("jobs stop");
    assert!(stderr(&stopped).contains("no-such-job") || stdout(&stopped).contains("no-such-job"));
}

/// Item 8: the README's install lines for completions and the man page
/// work on a fresh home (they make their directories).
#[test]
fn the_readme_install_lines_work_on_a_fresh_home() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let lines: Vec<&str> = readme
        .lines()
        .filter(|line| {
            line.starts_with("mkdir -p ~/.local/share/bash-completion")
                || line.starts_with("bashtool completions bash >")
                || line.contains("bashtool man > ~/.local/share/man/man1/bashtool.1")
        })
        .collect();
    assert!(lines.len() >= 2, "{lines:?}");
    let home = tempfile::tempdir().expect("home");
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_bashtool"));
    for line in lines {
        // The man line sits in a table cell: its command is between backticks.
        let command = line
            .split('`')
            .find(|part| part.contains("bashtool man >"))
            .unwrap_or(line);
        let status = Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("HOME", home.path())
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin.parent().expect("dir").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .status()
            .expect("sh");
        assert!(status.success(), "{command}");
    }
    assert!(
        home.path()
            .join(".local/share/bash-completion/completions/bashtool")
            .is_file()
    );
    assert!(
        home.path()
            .join(".local/share/man/man1/bashtool.1")
            .is_file()
    );
}
