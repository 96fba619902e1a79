//! `bashtool jobs` from a process of its own: it works from the job records
//! and the output files, through the same jobs port and rendering as the
//! `bash_jobs` tool.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use bashtool_tests::{DEATH_LIMIT, KillGroup, call_json, killed_survivors, pid_alive, wait_until};
use serde_json::Value;

fn bashtool(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(args)
        .env("BASHTOOL_STATE_DIR", state)
        .output()
        .expect("run bashtool")
}

fn jobs_json(state: &Path, args: &[&str]) -> Value {
    let mut all = vec!["jobs", "--json"];
    all.extend_from_slice(args);
    let output = bashtool(state, &all);
    serde_json::from_slice(&output.stdout).expect("a JSON result")
}

/// Starts `command` in the background with `bashtool call`, which exits at
/// once; returns the job id and pid.
fn start(state: &Path, command: &str) -> (String, u32) {
    let mut call = Command::new(env!("CARGO_BIN_EXE_bashtool"));
    call.arg("call").env("BASHTOOL_STATE_DIR", state);
    let input = serde_json::json!({"command": command, "mode": "background"});
    let (result, _) = call_json(call, &input.to_string());
    let id = result["details"]["job"]
        .as_str()
        .expect("job id")
        .to_owned();
    let pid = result["details"]["pid"].as_u64().expect("pid") as u32;
    (id, pid)
}

#[tokio::test]
async fn a_job_started_by_call_outlives_it_and_is_listed_read_waited_and_stopped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let (id, pid) = start(&state, "for i in 1 2 3; do echo line $i; done; sleep 300");
    // `bashtool call` has exited; the job lives on.
    assert!(pid_alive(pid));

    let listed = jobs_json(&state, &["list"]);
    assert_eq!(listed["details"]["jobs"][0]["id"], id.as_str());
    assert_eq!(listed["details"]["jobs"][0]["state"], "running");

    let mut read = Value::Null;
    let printed = wait_until(Duration::from_secs(20), || {
        read = jobs_json(&state, &["read", &id, "--since", "0"]);
        read["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("line 3"))
    })
    .await;
    let text = read["content"][0]["text"].as_str().unwrap_or_default();
    assert!(printed, "no output: {text}");
    assert!(text.contains("line 1\nline 2\nline 3\n"), "{text}");
    assert_eq!(read["details"]["next_cursor"], 21);
    let tail = bashtool(&state, &["jobs", "read", &id, "--lines", "2"]);
    let text = String::from_utf8_lossy(&tail.stdout);
    assert!(text.contains("\nline 2\nline 3\n"), "{text}");
    assert!(text.contains("7 B of earlier output not shown"), "{text}");

    let waited = jobs_json(&state, &["wait", &id, "--timeout", "1"]);
    assert_eq!(waited["details"]["state"], "running");

    let stopped = bashtool(&state, &["jobs", "stop", &id, "--grace", "1"]);
    assert!(stopped.status.success(), "{stopped:?}");
    assert_eq!(
        killed_survivors(&[pid], DEATH_LIMIT).await,
        Vec::<u32>::new(),
        "the job survived stop"
    );
    let listed = jobs_json(&state, &["list"]);
    assert_eq!(listed["details"]["jobs"][0]["state"], "signaled");
    assert_eq!(listed["details"]["jobs"][0]["signal"], "SIGTERM");
    let pruned = bashtool(&state, &["jobs", "prune"]);
    assert_eq!(
        String::from_utf8_lossy(&pruned.stdout),
        "forgot 1 ended jobs\n"
    );
    let empty = bashtool(&state, &["jobs"]);
    assert_eq!(String::from_utf8_lossy(&empty.stdout), "no jobs\n");
}

#[test]
fn a_job_that_ends_after_its_starter_exited_records_its_exit_status() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let gate = dir.path().join("gate");
    nix::unistd::mkfifo(&gate, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let (id, _pid) = start(&state, &format!("read _ < '{}'; exit 7", gate.display()));
    std::fs::write(&gate, "go\n").expect("open the gate");
    let waited = jobs_json(&state, &["wait", &id, "--timeout", "20"]);
    assert_eq!(waited["details"]["state"], "exited");
    assert_eq!(waited["details"]["exit_code"], 7);
}

#[test]
fn an_unknown_job_is_an_error_with_a_hint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = bashtool(dir.path(), &["jobs", "read", "j0000000"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).expect("UTF-8");
    assert_eq!(
        stderr,
        "bashtool: no job with id `j0000000`; use action \"list\" to see the jobs\n"
    );
}

/// Starts `sleep 300` as a job and waits until `sleep` runs (a stop before
/// the command started is recorded differently); returns its id and pid.
async fn start_sleep(state: &Path) -> (String, u32) {
    let (id, pid) = start(state, "sleep 300");
    let started = wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).is_ok_and(|children| {
            children.split_whitespace().any(|child| {
                std::fs::read_to_string(format!("/proc/{child}/comm"))
                    .is_ok_and(|comm| comm == "sleep\n")
            })
        })
    })
    .await;
    assert!(started, "sleep never started");
    (id, pid)
}

/// `bashtool jobs stop ID` as root, which succeeds only once the job is
/// gone: no waiting after it returns.
fn stop_and_check_gone(state: &Path, id: &str, pid: u32) {
    let stopped = bashtool(state, &["jobs", "stop", id, "--grace", "1"]);
    assert!(stopped.status.success(), "{stopped:?}");
    assert!(
        String::from_utf8_lossy(&stopped.stdout)
            .starts_with("stopped (with its whole process tree)\n"),
        "{stopped:?}"
    );
    assert!(
        !pid_alive(pid),
        "job {pid} still runs after a successful stop"
    );
}

#[tokio::test]
async fn a_stop_that_may_not_signal_the_job_fails_and_the_job_runs_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let (id, pid) = start_sleep(&state).await;
    let _cleanup = KillGroup(pid);
    // The same records, readable by an unprivileged user, who may not
    // signal root's job.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .expect("chmod");
    let other = dir.path().join("nobody");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::copy(state.join("jobs.json"), other.join("jobs.json")).expect("copy");
    let nobody = nix::unistd::Uid::from_raw(65534);
    let nogroup = nix::unistd::Gid::from_raw(65534);
    for path in [other.clone(), other.join("jobs.json")] {
        nix::unistd::chown(&path, Some(nobody), Some(nogroup)).expect("chown");
    }
    let denied = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_bashtool"))
        .args(["jobs", "--state-dir"])
        .arg(&other)
        .args(["stop", &id, "--grace", "1"])
        .output()
        .expect("setpriv");
    assert_eq!(denied.status.code(), Some(2), "{denied:?}");
    assert_eq!(
        String::from_utf8_lossy(&denied.stderr),
        format!(
            "bashtool: job `{id}` could not be stopped: signals to it are not permitted from here (permission denied: it runs as another user, or outside the sandbox this runs in); it is still running (pid {pid}). Stop it from where it was started (`kill -TERM -- -{pid}` there)\n"
        )
    );
    assert!(pid_alive(pid), "the job runs on");
    stop_and_check_gone(&state, &id, pid);
}

#[tokio::test]
async fn a_stop_from_another_pid_namespace_fails_and_the_job_runs_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let (id, pid) = start_sleep(&state).await;
    let _cleanup = KillGroup(pid);
    // As from inside a sandbox with a pid namespace of its own: the job's
    // pid names nothing there (or another process).
    let inside = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(env!("CARGO_BIN_EXE_bashtool"))
        .args(["jobs", "--state-dir"])
        .arg(&state)
        .args(["stop", &id, "--grace", "1"])
        .output()
        .expect("unshare");
    assert_eq!(inside.status.code(), Some(2), "{inside:?}");
    assert_eq!(
        String::from_utf8_lossy(&inside.stderr),
        format!(
            "bashtool: job `{id}` runs in another process namespace than this one (outside the sandbox this runs in, or inside one): its pid {pid} means nothing here, so it can be neither stopped nor watched from here; stop it from where it was started\n"
        )
    );
    assert!(pid_alive(pid), "the job runs on");
    stop_and_check_gone(&state, &id, pid);
}
