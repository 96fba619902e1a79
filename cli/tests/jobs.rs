//! `bashtool jobs` from a process of its own: it works from the job records
//! and the output files.

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

fn jobs(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .arg("jobs")
        .args(args)
        .env("BASHTOOL_STATE_DIR", state)
        .output()
        .expect("run bashtool jobs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8")
}

/// True while the process exists and is not a zombie.
fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[test]
fn lists_reads_and_stops_a_recorded_job() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    std::fs::create_dir(&state).expect("mkdir");
    let output_file = dir.path().join("job.out");
    std::fs::write(&output_file, "line 1\nline 2\nline 3\n").expect("written");
    // A job leading its own process group, with a child in it, as
    // env-local starts them.
    let mut job = Command::new("bash");
    job.args(["-c", "sleep 300 & wait"]).process_group(0);
    let mut child = job.spawn().expect("job started");
    let pid = child.id();
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    let records = json!([{
        "pid": pid,
        "command": "sleep 300 & wait",
        "output_file": output_file,
        "started_unix_ms": started,
        "owner": std::process::id(),
    }]);
    std::fs::write(state.join("jobs.json"), records.to_string()).expect("records");

    let listed: Value =
        serde_json::from_str(&stdout(&jobs(&state, &["list", "--json"]))).expect("JSON");
    assert_eq!(listed[0]["pid"], pid);
    assert_eq!(listed[0]["running"], true);

    let tail = jobs(&state, &["output", &pid.to_string(), "--lines", "2"]);
    assert_eq!(stdout(&tail), "line 2\nline 3\n");
    let since = jobs(&state, &["output", &pid.to_string(), "--since", "7"]);
    assert_eq!(stdout(&since), "line 2\nline 3\n");
    assert_eq!(
        String::from_utf8_lossy(&since.stderr),
        "[next offset: 21]\n"
    );

    let stopped = jobs(&state, &["stop", &pid.to_string(), "--grace", "1"]);
    assert!(stopped.status.success());
    // Reap our child, then make sure its group is gone too.
    child.wait().expect("reaped");
    let deadline = Instant::now() + Duration::from_secs(10);
    while nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), None).is_ok() {
        assert!(Instant::now() < deadline, "the job's group survived");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!pid_alive(pid));

    let listed: Value =
        serde_json::from_str(&stdout(&jobs(&state, &["list", "--json"]))).expect("JSON");
    assert_eq!(listed[0]["running"], false);
    assert!(stdout(&jobs(&state, &["prune"])).contains("forgot 1 ended jobs"));
    assert_eq!(stdout(&jobs(&state, &[])), "no background jobs\n");
}

#[test]
fn an_unknown_job_is_an_error_with_a_hint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = jobs(dir.path(), &["output", "999999"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).expect("UTF-8");
    assert!(stderr.contains("no job with pid 999999"), "{stderr}");
    assert!(stderr.contains("bashtool jobs list"), "{stderr}");
}

#[test]
fn a_job_started_by_run_is_listed_read_and_stopped_by_jobs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let started = Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["run", "--json", "--mode", "background", "--"])
        .arg("echo up; sleep 300")
        .env("BASHTOOL_STATE_DIR", &state)
        .output()
        .expect("run");
    assert!(started.status.success(), "{started:?}");
    let result: Value = serde_json::from_slice(&started.stdout).expect("JSON result");
    let pid = result["details"]["pid"].as_u64().expect("pid") as u32;
    // `bashtool run` has exited; the job lives on.
    assert!(pid_alive(pid));

    let listed: Value =
        serde_json::from_str(&stdout(&jobs(&state, &["list", "--json"]))).expect("JSON");
    assert_eq!(listed[0]["pid"], pid);
    assert_eq!(listed[0]["running"], true);

    let deadline = Instant::now() + Duration::from_secs(20);
    while !stdout(&jobs(&state, &["output", &pid.to_string()])).contains("up") {
        assert!(Instant::now() < deadline, "no output");
        std::thread::sleep(Duration::from_millis(20));
    }

    let stopped = jobs(&state, &["stop", &pid.to_string(), "--grace", "1"]);
    assert!(stopped.status.success(), "{stopped:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pid_alive(pid) {
        assert!(Instant::now() < deadline, "job {pid} survived stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}
