//! The process-level promises: what only real processes can show (a tree
//! that dies, a leftover that does not hold the call, a command the kernel
//! stops). Liveness is read from `/proc` by the test.

#![deny(dead_code)]

use std::sync::PoisonError;
use std::time::Duration;

use bashtool_core::{ReadFrom, SpawnOptions};
use tokio_util::sync::CancellationToken;

use super::subject::{SAFETY, Subject, background, run};
use crate::{
    DEATH_LIMIT, echo_pid, escapee, grandchildren_script, killed_survivors, pid_watch, pids_in,
    text,
};

/// A timeout stops the whole tree: grandchildren and setsid escapees.
pub async fn timeout_stops_the_tree(subject: Subject) {
    let script = format!("{}{}\nsleep 300", grandchildren_script(2), escapee());
    let result = run(
        &subject,
        &script,
        SpawnOptions::default().timeout(Duration::from_secs(2)),
    )
    .await;
    assert!(result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 3, "{}", text(&result));
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

/// A cancel stops the whole tree and returns the output so far.
pub async fn cancel_stops_the_tree(subject: Subject) {
    let cancel = CancellationToken::new();
    let (_, sink) = pid_watch(3, cancel.clone());
    let options = SpawnOptions::default()
        .timeout(SAFETY)
        .cancel(cancel)
        .on_output(sink);
    let script = format!("{}{}\nsleep 300", grandchildren_script(2), escapee());
    let result = run(&subject, &script, options).await;
    assert!(result.cancelled);
    assert!(!result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 3, "{}", text(&result));
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

/// Dropping the call's future stops the whole tree.
pub async fn drop_stops_the_tree(subject: Subject) {
    let printed = CancellationToken::new();
    let (text_seen, sink) = pid_watch(2, printed.clone());
    let script = format!("{}{}\nsleep 300", grandchildren_script(1), escapee());
    let call = subject.exec.spawn(
        &script,
        SpawnOptions::default().timeout(SAFETY).on_output(sink),
    );
    tokio::select! {
        () = printed.cancelled() => {}
        _ = call => panic!("the call ended by itself"),
    }
    let pids = pids_in(&text_seen.lock().unwrap_or_else(PoisonError::into_inner));
    assert_eq!(pids.len(), 2);
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

/// `cmd &` never holds the call: it returns when the main command ends,
/// and the leftover is stopped.
pub async fn no_hang_on_a_leftover(subject: Subject) {
    let result = run(
        &subject,
        // The leftover says on a FIFO that it has printed its pid; it
        // keeps the command's output open after the command ends.
        &format!(
            "ready=$(mktemp -u); mkfifo \"$ready\"; sh -c '{}; echo > \"$0\"; exec sleep 300' \"$ready\" & read _ < \"$ready\"; rm \"$ready\"; echo started",
            echo_pid("$$")
        ),
        SpawnOptions::default().timeout(SAFETY),
    )
    .await;
    assert!(!result.timed_out, "the call waited for the leftover");
    assert_eq!(result.exit_code, Some(0));
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 1);
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

/// Stopping a job stops its whole tree, its root included, and a job
/// where processes run has a pid.
pub async fn stopping_a_job_stops_its_tree(subject: Subject) {
    // The job's root (the shell that runs the command's shell) prints its
    // own pid too: a sandbox numbers its processes in a pid namespace of
    // their own, and the test decides from the host.
    let script = format!(
        "{}; {}sleep 300",
        echo_pid("$PPID"),
        grandchildren_script(2)
    );
    let result = run(&subject, &script, background()).await;
    let job = result.background.expect("a background job");
    assert!(job.pid.is_some(), "a local job has a pid");
    let mut pids = Vec::new();
    let deadline = tokio::time::Instant::now() + SAFETY;
    while pids.len() < 3 && tokio::time::Instant::now() < deadline {
        let output = subject
            .jobs
            .read(&job.id, ReadFrom::Cursor(0), 100_000)
            .await
            .expect("read");
        pids = pids_in(&output.text);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        pids.len(),
        3,
        "the job printed its root and its grandchildren"
    );
    let info = subject.jobs.stop(&job.id).await.expect("known job");
    assert!(!info.state.is_running(), "{info:?}");
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

/// A command that stops itself (SIGSTOP) is detected and its tree
/// stopped, instead of waiting out the timeout.
pub async fn a_stopped_command_is_detected(subject: Subject) {
    for command in [
        "echo before; kill -STOP $$",
        "echo before; sh -c 'kill -STOP $$'; echo after",
    ] {
        let result = run(
            &subject,
            command,
            SpawnOptions::default().timeout(Duration::from_secs(120)),
        )
        .await;
        assert!(!result.timed_out, "{command}: waited out the timeout");
        assert_eq!(result.signal.as_deref(), Some("SIGSTOP"), "{command}");
        assert_eq!(text(&result), "before", "{command}");
        assert!(
            result
                .notes
                .iter()
                .any(|note| note.starts_with("the command stopped itself")),
            "{command}: {:?}",
            result.notes
        );
    }
}
