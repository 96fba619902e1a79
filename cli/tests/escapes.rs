//! The sandbox's escapes across processes and transports, with the real
//! binary: a sandboxed `bashtool call` against another process's session,
//! the server's secrets through `/proc` over `call` and MCP, a forged
//! request to a session's shell, and the same attacks as an unprivileged
//! user. Every verdict comes from the test's own reads (files, `/proc`).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use bashtool_tests::nobody::{Nobody, nobody};
use serde_json::{Value, json};

const BASHTOOL: &str = env!("CARGO_BIN_EXE_bashtool");
const SECRET: &str = "sk-escape-test-4f2b9c7d1e";

/// `bashtool call` with `input`, the state in `state`, `args` before it.
fn call(dir: &Path, state: &Path, args: &[&str], input: &Value) -> Value {
    call_as(dir, state, args, input, None)
}

fn call_as(dir: &Path, state: &Path, args: &[&str], input: &Value, user: Option<&Nobody>) -> Value {
    let mut command = match user {
        Some(nobody) => nobody.command(&[]),
        None => Command::new(BASHTOOL),
    };
    command
        .arg("call")
        .args(args)
        .current_dir(dir)
        .env("BASHTOOL_STATE_DIR", state)
        .env("ANTHROPIC_API_KEY", SECRET)
        .stderr(Stdio::piped());
    bashtool_tests::call_json(command, &input.to_string()).0
}

fn result_text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A `bashtool mcp` over stdio, driven by raw JSON-RPC lines.
struct Mcp {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Mcp {
    fn start(dir: &Path, state: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(BASHTOOL)
            .arg("mcp")
            .args(args)
            .current_dir(dir)
            .env("BASHTOOL_STATE_DIR", state)
            .env("ANTHROPIC_API_KEY", SECRET)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mcp");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut mcp = Self {
            child,
            input,
            output,
            next_id: 1,
        };
        mcp.request(
            "initialize",
            &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "escapes", "version": "1"}}),
        );
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").expect("write");
        self.input.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: &Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).expect("read") > 0,
                "the server closed"
            );
            let message: Value = serde_json::from_str(&line).expect("JSON");
            if message["id"] == id {
                return message["result"].clone();
            }
        }
    }

    fn bash(&mut self, command: &str) -> String {
        let result = self.request(
            "tools/call",
            &json!({"name": "bash", "arguments": {"command": command}}),
        );
        result_text(&result)
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The session directories of the process `pid` in the host's `/dev/shm`.
fn session_dirs_of(pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir("/dev/shm")
        .expect("/dev/shm")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(&format!("bashtool-session-{pid}-")))
        })
        .collect()
}

#[test]
fn a_sandboxed_command_cannot_reach_another_processes_session() {
    for victim_sandbox in ["off", "workspace-write"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = dir.path().join("state");
        let marker = dir.path().join("driven");
        let mut victim = Mcp::start(dir.path(), &state, &["--sandbox", victim_sandbox]);
        assert!(victim.bash("echo up").contains("up"));
        let sessions = session_dirs_of(victim.child.id());
        assert_eq!(sessions.len(), 1, "{sessions:?}");
        let session = &sessions[0];
        // The attack of the review: find the session, write a script and a
        // request line.
        let attack = format!(
            "ls -d /dev/shm/bashtool-session-* 2>&1; \
             for d in /dev/shm/bashtool-session-*; do echo 'touch {m}' > $d/command.sh; \
             printf 'c0 00000000000000000001 00000000000000000002 x\\n' > $d/driver; done; \
             echo 'touch {m}' > {session}/command.sh; echo attacked",
            m = marker.display(),
            session = session.display()
        );
        let result = call(
            dir.path(),
            &state,
            &["--sandbox", "read-only", "--network", "off"],
            &json!({ "command": attack }),
        );
        let text = result_text(&result);
        assert!(text.contains("attacked"), "{text}");
        assert!(
            text.contains("cannot access '/dev/shm/bashtool-session-*'"),
            "{victim_sandbox}: {text}"
        );
        assert!(
            !std::fs::read_to_string(session.join("command.sh"))
                .unwrap_or_default()
                .contains("touch"),
            "{victim_sandbox}: the session's command file was written"
        );
        assert!(victim.bash("echo still fine").contains("still fine"));
        assert!(
            !marker.exists(),
            "{victim_sandbox}: the victim ran the attacker's script"
        );
    }
}

#[test]
fn a_forged_request_without_the_key_is_not_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let marker = dir.path().join("forged");
    let mut victim = Mcp::start(dir.path(), &state, &["--sandbox", "off"]);
    assert!(victim.bash("echo up").contains("up"));
    let session = session_dirs_of(victim.child.id()).pop().expect("a session");
    // An unsandboxed process of the same user can write the FIFOs; a
    // request without the session's key does nothing.
    std::fs::write(
        session.join("command.sh"),
        format!("touch {}\n", marker.display()),
    )
    .expect("command file");
    let mut forged = String::from("c0 00000000000000000001 00000000000000000002 ");
    forged.push_str(&"0".repeat(40));
    forged.push(' ');
    forged.push_str(&"f".repeat(32));
    forged.push('\n');
    std::fs::OpenOptions::new()
        .write(true)
        .open(session.join("driver"))
        .and_then(|mut driver| driver.write_all(forged.as_bytes()))
        .expect("forged request written");
    // The shell reads its requests in order: once the next call is
    // answered, the forged one was read and skipped.
    assert!(victim.bash("echo next").contains("next"));
    assert!(!marker.exists(), "a request without the key ran");
}

#[test]
fn the_servers_environment_is_not_readable_over_call_or_mcp() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let read_parent = "tr '\\0' '\\n' < /proc/$PPID/environ 2>&1; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done; echo done";
    let result = call(dir.path(), &state, &[], &json!({ "command": read_parent }));
    let text = result_text(&result);
    assert!(text.contains("done"), "{text}");
    assert!(!text.contains(SECRET), "call: {text}");
    for args in [&[][..], &["--stateless"][..]] {
        let mut server = Mcp::start(dir.path(), &state, args);
        let text = server.bash(read_parent);
        assert!(text.contains("done"), "{text}");
        assert!(!text.contains(SECRET), "mcp {args:?}: {text}");
    }
}

#[test]
fn the_state_directory_is_hidden_but_the_logs_can_be_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::write(state.join("jobs.lock"), "").expect("lock");
    let result = call(
        dir.path(),
        &state,
        &[],
        &json!({"command": format!("seq 1 5000; ls -A {}", state.display())}),
    );
    let text = result_text(&result);
    let log = result["details"]["log_file"]
        .as_str()
        .expect("a log")
        .to_owned();
    assert!(!text.contains("jobs.lock"), "{text}");
    // The log the model is told about is readable from the sandbox.
    let read = call(
        dir.path(),
        &state,
        &[],
        &json!({"command": format!("grep -x 4999 {log}; flock -n {} true 2>&1 | head -1", state.join("jobs.lock").display())}),
    );
    let text = result_text(&read);
    assert!(text.starts_with("stdout:\n4999\n"), "{text}");
    // The lock file is not there to be locked.
    assert!(text.contains("flock: cannot open lock file"), "{text}");
}

#[tokio::test]
async fn as_an_unprivileged_user_the_same_attacks_fail() {
    let Some(user) = nobody(Path::new(BASHTOOL)) else {
        // Not root: this test already runs unprivileged, as the others do.
        return;
    };
    let work = user.home.join("work");
    let state = user.home.join("state");
    let started = Instant::now();
    let outside = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "sleep",
            "60",
        ])
        .env("BASHTOOL_TEST_SECRET", SECRET)
        .spawn()
        .expect("an outside process of the same user");
    let script = format!(
        "tr '\\0' '\\n' < /proc/{pid}/environ 2>&1 | head -3; ls /proc | grep -c '^[0-9]'; ls /dev/pts; \
         setsid -f env -i sleep 1004; sleep 30",
        pid = outside.id()
    );
    let result = call_as(
        &work,
        &state,
        &[],
        &json!({"command": script, "timeout": 2}),
        Some(&user),
    );
    let mut outside = outside;
    let _ = outside.kill();
    let _ = outside.wait();
    let text = result_text(&result);
    assert!(
        result["details"]["timed_out"].as_bool().unwrap_or(false),
        "{text}"
    );
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("ptmx"), "{text}");
    // No `sleep 1004` of ours outlives the timeout.
    let survivor = || {
        std::fs::read_dir("/proc")
            .expect("proc")
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .any(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|cmdline| cmdline == b"sleep\x001004\x00")
                    && std::fs::metadata(format!("/proc/{pid}"))
                        .is_ok_and(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 65534)
                    && bashtool_tests::pid_alive(pid)
            })
    };
    assert!(
        bashtool_tests::wait_until(Duration::from_secs(5), || !survivor()).await,
        "a setsid escapee outlived the timeout ({:?})",
        started.elapsed()
    );
    drop(user.dir);
}
