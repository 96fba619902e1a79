//! The CLI leaves nothing behind: leftovers that ignore SIGTERM are killed
//! before `call` exits, a signal to `call` or `run` stops the command's
//! tree, and a `set -m` job in its own process group is stopped too.
//! Liveness is read from /proc by the test.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bashtool_tests::pids_in;

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

fn wait_dead(pids: &[u32]) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && pids.iter().any(|&pid| pid_alive(pid)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<u32> = pids.iter().copied().filter(|&pid| pid_alive(pid)).collect();
    for &pid in &survivors {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    survivors
}

fn call(input: &serde_json::Value, state: &std::path::Path) -> serde_json::Value {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["call", "--kill-grace", "0.5"])
        .env("BASHTOOL_STATE_DIR", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("call");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes())
        .expect("input");
    let output = child.wait_with_output().expect("call ends");
    serde_json::from_slice(&output.stdout).expect("JSON result")
}

#[test]
fn a_leftover_that_ignores_sigterm_dies_before_call_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let command = "mkfifo ready; sh -c 'trap \"\" TERM; echo > ready; exec sleep 300' & echo pid:$!@$(stat -Lc %i /proc/$!/ns/pid); read _ < ready";
    let result = call(&serde_json::json!({"command": command}), dir.path());
    let text = result["content"][0]["text"].as_str().expect("text");
    let pids = pids_in(text);
    assert_eq!(pids.len(), 1, "{text}");
    // `call` has exited: the SIGKILL after the grace was sent before (no
    // one else would send it now), so the process dies.
    assert_eq!(
        wait_dead(&pids),
        Vec::<u32>::new(),
        "the leftover outlived bashtool call"
    );
    assert!(text.contains("1 leftover process"), "{text}");
}

#[test]
fn a_set_m_job_in_its_own_group_is_stopped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let result = call(
        &serde_json::json!({"command": "set -m; sleep 300 & echo pid:$!@$(stat -Lc %i /proc/$!/ns/pid)"}),
        dir.path(),
    );
    let text = result["content"][0]["text"].as_str().expect("text");
    let pids = pids_in(text);
    assert_eq!(pids.len(), 1, "{text}");
    assert_eq!(wait_dead(&pids), Vec::<u32>::new(), "{text}");
}

#[test]
fn sigterm_to_run_stops_the_command_tree() {
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGHUP,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut run = Command::new(env!("CARGO_BIN_EXE_bashtool"))
            .args(["run", "--"])
            .arg("sh -c 'echo pid:$$@$(stat -Lc %i /proc/$$/ns/pid); exec sleep 300' & echo pid:$!@$(stat -Lc %i /proc/$!/ns/pid); wait")
            .env("BASHTOOL_STATE_DIR", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run");
        let mut stdout = BufReader::new(run.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the first pid");
        let pids = pids_in(&line);
        assert_eq!(pids.len(), 1, "{line}");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.id() as i32), signal)
            .expect("signal bashtool");
        let status = run.wait().expect("run ends");
        assert!(!status.success(), "{signal}: {status:?}");
        assert_eq!(wait_dead(&pids), Vec::<u32>::new(), "{signal}");
    }
}
