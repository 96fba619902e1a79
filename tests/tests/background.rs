//! Background jobs: detached, output to a file, real exit status appended,
//! and a job table to list, read, wait for and stop them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bashtool_core::{BashTool, CommandExec, CommandResult, ExecMode, SpawnOptions, ToolConfig};
use bashtool_env_local::{Error, JobRead, JobStatus, LocalConfig, LocalExec};
use bashtool_tests::{
    ESCAPEE, kill_all, local_exec, pid_alive, pids_in, survivors_after, temp_dir, test_config,
    wait_until,
};

const WAIT: Duration = Duration::from_secs(10);

async fn start(exec: &LocalExec, command: &str) -> CommandResult {
    exec.spawn(command, SpawnOptions::default().mode(ExecMode::Background))
        .await
        .expect("the job starts")
}

fn output_of(result: &CommandResult) -> String {
    let job = result.background.as_ref().expect("a background job");
    std::fs::read_to_string(&job.output_file).expect("read the output file")
}

#[tokio::test]
async fn returns_at_once_with_pid_and_output_file() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let started = Instant::now();
    let result = start(&exec, "echo hello; sleep 300").await;
    assert!(started.elapsed() < Duration::from_secs(1));
    let job = result.background.clone().expect("a job");
    assert!(pid_alive(job.pid));
    // A group leader, so `kill -TERM -- -<pid>` stops it all.
    let info = bashtool_env_local::process_info(job.pid).expect("running");
    assert_eq!(info.group, job.pid);
    assert!(wait_until(WAIT, || output_of(&result) == "hello\n").await);
    let stopped = exec.jobs().stop(job.pid).await.expect("known job");
    assert_eq!(
        stopped.status,
        JobStatus::Signaled {
            signal: "SIGTERM".to_owned()
        }
    );
    assert_eq!(
        output_of(&result),
        "hello\n[background job killed by signal SIGTERM]\n"
    );
}

#[tokio::test]
async fn appends_the_real_exit_status() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    for (command, code, expected) in [
        ("false", 1, "[background job exited with code 1]\n"),
        (
            "echo a; exit 7",
            7,
            "a\n[background job exited with code 7]\n",
        ),
        // Ends in `&`: the seed's `; echo $?` suffix broke on this.
        (
            "printf x; true &",
            0,
            "x\n[background job exited with code 0]\n",
        ),
        // Ends in a comment: `; echo $?` would have been commented out.
        (
            "echo c; false # a comment",
            1,
            "c\n[background job exited with code 1]\n",
        ),
    ] {
        let result = start(&exec, command).await;
        let pid = result.background.as_ref().expect("job").pid;
        let info = exec.jobs().wait(pid, WAIT).await.expect("known job");
        assert_eq!(info.status, JobStatus::Exited { code }, "{command}");
        assert_eq!(output_of(&result), expected, "{command}");
    }
}

#[tokio::test]
async fn the_table_lists_reads_and_waits() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = start(
        &exec,
        "for i in 1 2 3 4 5; do echo line $i; done; printf '\\033[31mred\\033[0m\\n'; sleep 0.2",
    )
    .await;
    let pid = result.background.as_ref().expect("job").pid;
    let listed = exec.jobs().list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].pid, pid);
    assert_eq!(listed[0].status, JobStatus::Running);
    let info = exec.jobs().wait(pid, WAIT).await.expect("known");
    assert_eq!(info.status, JobStatus::Exited { code: 0 });
    let tail = exec
        .jobs()
        .output(pid, JobRead::Tail { lines: 2 })
        .await
        .expect("read");
    assert_eq!(tail.text, "red\n[background job exited with code 0]\n");
    let first = exec
        .jobs()
        .output(pid, JobRead::Since { offset: 0 })
        .await
        .expect("read");
    assert!(first.text.starts_with("line 1\nline 2\n"), "{}", first.text);
    let rest = exec
        .jobs()
        .output(
            pid,
            JobRead::Since {
                offset: first.next_offset,
            },
        )
        .await
        .expect("read");
    assert_eq!(rest.text, "");
    assert_eq!(rest.status, JobStatus::Exited { code: 0 });
    let json = serde_json::to_value(exec.jobs().get(pid).expect("known")).expect("json");
    assert_eq!(
        json["status"],
        serde_json::json!({"state": "exited", "code": 0})
    );
}

#[tokio::test]
async fn wait_returns_at_the_timeout_with_the_job_running() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let pid = start(&exec, "sleep 300").await.background.expect("job").pid;
    let info = exec
        .jobs()
        .wait(pid, Duration::from_millis(100))
        .await
        .expect("known");
    assert_eq!(info.status, JobStatus::Running);
    exec.shutdown().await;
    assert!(!pid_alive(pid));
}

#[tokio::test]
async fn unknown_jobs_are_an_error() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let error = exec.jobs().stop(1).await.expect_err("unknown");
    assert!(matches!(error, Error::UnknownJob { pid: 1 }));
    assert_eq!(exec.jobs().get(1), None);
}

#[tokio::test]
async fn stop_reaches_grandchildren_and_escapees() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = start(
        &exec,
        &format!("( sh -c 'echo pid:$$; exec sleep 300' & wait ) &\n{ESCAPEE}\nwait"),
    )
    .await;
    let pid = result.background.as_ref().expect("job").pid;
    assert!(wait_until(WAIT, || pids_in(&output_of(&result)).len() == 2).await);
    let pids = pids_in(&output_of(&result));
    exec.jobs().stop(pid).await.expect("known");
    let survivors = survivors_after(&pids, WAIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
}

#[tokio::test]
async fn dropping_the_environment_stops_its_jobs() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let pid = start(&exec, "sleep 300").await.background.expect("job").pid;
    drop(exec);
    let survivors = survivors_after(&[pid], WAIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
}

#[tokio::test]
async fn jobs_can_be_configured_to_outlive_the_environment() {
    let dir = temp_dir();
    let exec = LocalExec::new(LocalConfig {
        keep_jobs_on_drop: true,
        ..test_config(dir.path())
    });
    let pid = start(&exec, "sleep 300").await.background.expect("job").pid;
    exec.shutdown().await;
    drop(exec);
    assert!(pid_alive(pid));
    kill_all(&[pid]);
}

#[tokio::test]
async fn the_model_gets_pid_output_file_and_how_to_stop() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let tool = BashTool::new(ToolConfig::default(), Arc::new(exec.clone()));
    let result = tool
        .call(serde_json::json!({"command": "sleep 300", "mode": "background"}))
        .await;
    assert!(!result.is_error);
    let pid = result.details.pid.expect("pid");
    let text = result.text();
    assert!(text.contains(&format!("<pid>{pid}</pid>")), "{text}");
    assert!(text.contains(&format!("kill -TERM -- -{pid}")), "{text}");
    // The reminder's command works.
    let status = std::process::Command::new("kill")
        .args(["-TERM", "--", &format!("-{pid}")])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let info = exec.jobs().wait(pid, WAIT).await.expect("known");
    assert_eq!(
        info.status,
        JobStatus::Signaled {
            signal: "SIGTERM".to_owned()
        }
    );
}
