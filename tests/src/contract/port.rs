//! The port-level promises: what any environment must do, real or fake.
//! They run against every environment and against env-mock.

#![deny(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{ExecError, JobError, JobState, OutputChunk, ReadFrom, SpawnOptions, Stream};
use tokio_util::sync::CancellationToken;

use super::subject::{SAFETY, Subject, background, run, start_job};
use crate::{cancel_when_output_contains, text};

/// The retained lines with their streams.
fn lines(result: &bashtool_core::CommandResult) -> Vec<(Stream, String)> {
    result
        .output
        .retained()
        .0
        .iter()
        .map(|line| (line.stream, line.text.clone()))
        .collect()
}

/// Exit codes come back as they are; 0 is success.
pub async fn exit_codes(subject: Subject) {
    for (command, code) in [
        ("true", 0),
        ("false", 1),
        ("exit 42", 42),
        ("sh -c 'exit 3'", 3),
    ] {
        let result = run(&subject, command, SpawnOptions::default().timeout(SAFETY)).await;
        assert_eq!(result.exit_code, Some(code), "{command}");
        assert_eq!(result.signal, None, "{command}");
        assert_eq!(result.success(), code == 0, "{command}");
    }
}

/// A command killed by a signal reports the signal, not an exit code.
pub async fn signals(subject: Subject) {
    let result = run(
        &subject,
        "echo before; kill -KILL $$",
        SpawnOptions::default().timeout(SAFETY),
    )
    .await;
    assert_eq!(result.signal.as_deref(), Some("SIGKILL"));
    assert_eq!(result.exit_code, None);
    assert_eq!(text(&result), "before");
}

/// stdout and stderr lines come back in the order they were written. The
/// command waits for the test to have seen each line before writing the
/// next (a FIFO handshake), so the order is the command's, not luck's.
pub async fn interleaving(subject: Subject) {
    // One FIFO per step: a writer that has not closed its end yet can then
    // never satisfy the next step's open.
    let gates: Vec<PathBuf> = (1..=3)
        .map(|step| subject.dir.join(format!("gate{step}")))
        .collect();
    for gate in &gates {
        nix::unistd::mkfifo(gate, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    }
    let seen = Mutex::new(0_usize);
    let sink_gates = gates.clone();
    let sink = Arc::new(move |chunk: &OutputChunk| {
        let lines = chunk.text.matches('\n').count();
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        for _ in 0..lines {
            if let Some(gate) = sink_gates.get(*seen).cloned() {
                // Opening a FIFO for writing blocks until the command reads
                // it: not on the reader's task.
                std::thread::spawn(move || std::fs::write(gate, "go\n"));
            }
            *seen += 1;
        }
    });
    // `until read`: the previous writer may still hold the FIFO open when
    // the next `read` opens it; that read then sees EOF, not a "go".
    let command = format!(
        "echo out1; read _ < '{}'; echo err1 >&2; read _ < '{}'; echo out2; read _ < '{}'; echo err2 >&2",
        gates[0].display(),
        gates[1].display(),
        gates[2].display()
    );
    let result = run(
        &subject,
        &command,
        SpawnOptions::default().timeout(SAFETY).on_output(sink),
    )
    .await;
    assert_eq!(
        lines(&result),
        [
            (Stream::Stdout, "out1".to_owned()),
            (Stream::Stderr, "err1".to_owned()),
            (Stream::Stdout, "out2".to_owned()),
            (Stream::Stderr, "err2".to_owned()),
        ]
    );
}

/// A huge output is counted whole but retained within bounds, keeping its
/// first and last lines.
pub async fn huge_output_is_bounded(subject: Subject) {
    let result = run(
        &subject,
        "seq 1 2000000",
        SpawnOptions::default().timeout(Duration::from_secs(120)),
    )
    .await;
    assert_eq!(result.exit_code, Some(0));
    assert_eq!(result.output.total_lines(), 2_000_000);
    let (retained, omitted) = result.output.retained();
    assert!(retained.len() < 10_000, "{} lines retained", retained.len());
    assert!(omitted > 1_900_000, "{omitted} omitted");
    assert_eq!(retained.first().map(|line| line.text.as_str()), Some("1"));
    assert_eq!(
        retained.last().map(|line| line.text.as_str()),
        Some("2000000")
    );
}

/// The working directory and the variables of one call apply to it.
pub async fn cwd_and_env_per_call(subject: Subject) {
    let sub = subject.dir.join("sub");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let result = run(
        &subject,
        "pwd; echo \"$GREETING\"",
        SpawnOptions::default()
            .timeout(SAFETY)
            .current_dir(&sub)
            .env("GREETING", "hello there"),
    )
    .await;
    assert_eq!(
        text(&result),
        format!(
            "{}\nhello there",
            sub.canonicalize().expect("canonical").display()
        )
    );
    let result = run(
        &subject,
        "echo \"[$GREETING]\"",
        SpawnOptions::default().timeout(SAFETY),
    )
    .await;
    assert_eq!(
        text(&result),
        "[]",
        "a call's variables do not leak into the next"
    );
}

/// A command that cannot start is an `Err`, not a result: a missing
/// working directory is named, and nothing runs.
pub async fn a_missing_directory_is_an_error(subject: Subject) {
    let missing = subject.dir.join("missing");
    let marker = subject.dir.join("ran");
    let result = subject
        .exec
        .spawn(
            &format!("touch '{}'", marker.display()),
            SpawnOptions::default()
                .timeout(SAFETY)
                .current_dir(&missing),
        )
        .await;
    match result {
        Err(ExecError::MissingDirectory { path }) => assert_eq!(path, missing),
        other => panic!("not a missing directory: {other:?}"),
    }
    assert!(!marker.exists(), "the command ran");
}

/// A timeout ends the call as timed out (not cancelled, no exit code, no
/// success) with the output printed before it.
pub async fn a_timeout_returns_the_output_so_far(subject: Subject) {
    let result = run(
        &subject,
        "echo started; sleep 300",
        SpawnOptions::default().timeout(Duration::from_secs(1)),
    )
    .await;
    assert!(result.timed_out);
    assert!(!result.cancelled);
    assert_eq!(result.exit_code, None);
    assert!(!result.success());
    assert_eq!(text(&result), "started");
}

/// A cancel ends the call as cancelled (not timed out, no exit code, no
/// success) with the output printed before it.
pub async fn a_cancel_returns_the_output_so_far(subject: Subject) {
    let stop = cancel_when_output_contains("started");
    let result = run(
        &subject,
        "echo started; sleep 300",
        SpawnOptions::default()
            .timeout(SAFETY)
            .cancel(stop.cancel)
            .on_output(stop.on_output.expect("a sink")),
    )
    .await;
    assert!(result.cancelled);
    assert!(!result.timed_out);
    assert_eq!(result.exit_code, None);
    assert!(!result.success());
    assert_eq!(text(&result), "started");
}

/// A background job: starts at once, is listed, ends with its real exit
/// status, and its output can be paged by cursor without skipping a byte.
pub async fn background_job_lifecycle(subject: Subject) {
    let result = run(
        &subject,
        "for i in $(seq 1 3000); do echo \"line $i\"; done; exit 7",
        background(),
    )
    .await;
    let job = result.background.expect("a background job");
    assert!(
        subject
            .jobs
            .list()
            .await
            .iter()
            .any(|info| info.id == job.id)
    );
    let info = subject
        .jobs
        .wait(&job.id, SAFETY, CancellationToken::new())
        .await
        .expect("known job");
    assert_eq!((info.state, info.exit_code), (JobState::Exited, Some(7)));
    let expected: String = (1..=3000)
        .map(|number| format!("line {number}\n"))
        .collect();
    let mut cursor = 0;
    let mut paged = String::new();
    let mut windows = 0;
    loop {
        let window = subject
            .jobs
            .read(&job.id, ReadFrom::Cursor(cursor), 4000)
            .await
            .expect("read");
        assert_eq!(window.cursor, cursor);
        assert_eq!(window.skipped, 0);
        paged.push_str(&window.text);
        cursor = window.next_cursor;
        windows += 1;
        if !window.more {
            break;
        }
    }
    assert!(windows > 5, "paged in {windows} windows");
    assert!(
        paged.starts_with(&expected),
        "every line exactly once, in order"
    );
    assert!(
        paged.ends_with("\n[background job exited with code 7]\n"),
        "{}",
        &paged[paged.len().saturating_sub(80)..]
    );
    let tail = subject
        .jobs
        .read(&job.id, ReadFrom::Tail { lines: 3 }, 4000)
        .await
        .expect("tail");
    assert_eq!(
        tail.text,
        "line 3000\n\n[background job exited with code 7]\n"
    );
    assert_eq!(tail.skipped, tail.cursor);
    assert!(tail.skipped > 0);
}

/// `wait` returns at its timeout, and at once on a cancel, with the job
/// still running: waiting never stops a job.
pub async fn a_wait_that_times_out_leaves_the_job_running(subject: Subject) {
    let id = start_job(&subject, "sleep 300").await;
    let timed_out = subject
        .jobs
        .wait(&id, Duration::from_millis(300), CancellationToken::new())
        .await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    // Far below the wait's own timeout: only the cancel can end it in time.
    let cancelled = tokio::time::timeout(
        Duration::from_secs(20),
        subject.jobs.wait(&id, Duration::from_secs(600), cancel),
    )
    .await;
    let listed = subject.jobs.list().await;
    subject.jobs.stop(&id).await.expect("known job");
    assert_eq!(timed_out.expect("known job").state, JobState::Running);
    let cancelled = cancelled.expect("a cancelled wait returns at once");
    assert_eq!(cancelled.expect("known job").state, JobState::Running);
    let job = listed.iter().find(|job| job.id == id).expect("listed");
    assert_eq!(job.state, JobState::Running);
}

/// `stop` returns the job ended by a signal, the list shows it so, and
/// stopping it again returns the same info.
pub async fn stopping_a_job_ends_it(subject: Subject) {
    let id = start_job(&subject, "sleep 300").await;
    let stopped = subject.jobs.stop(&id).await.expect("known job");
    assert_eq!(stopped.state, JobState::Signaled, "{stopped:?}");
    let listed = subject.jobs.list().await;
    let job = listed.iter().find(|job| job.id == id).expect("listed");
    assert_eq!(job.state, JobState::Signaled, "{job:?}");
    let again = subject.jobs.stop(&id).await.expect("known job");
    assert_eq!(again, stopped);
}

/// Reading, waiting for and stopping an id that no job has is
/// `UnknownJob`, naming the id.
pub async fn an_unknown_job_is_an_error(subject: Subject) {
    let unknown = |result: Result<(), JobError>, call: &str| match result {
        Err(JobError::UnknownJob { id }) => assert_eq!(id, "no-such-job", "{call}"),
        other => panic!("{call}: {other:?}"),
    };
    let jobs = &subject.jobs;
    unknown(
        jobs.read("no-such-job", ReadFrom::Cursor(0), 1000)
            .await
            .map(drop),
        "read",
    );
    unknown(
        jobs.wait("no-such-job", SAFETY, CancellationToken::new())
            .await
            .map(drop),
        "wait",
    );
    unknown(jobs.stop("no-such-job").await.map(drop), "stop");
}

/// A cancel stops a command that floods its output at once: the flood does
/// not starve the wait for the cancel (it must win long before the 20 s
/// safety timeout).
pub async fn cancel_wins_over_a_flood(subject: Subject) {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let sink = Arc::new(move |_: &OutputChunk| trigger.cancel());
    let result = run(
        &subject,
        "yes flood",
        SpawnOptions::default()
            .timeout(Duration::from_secs(20))
            .cancel(cancel)
            .on_output(sink),
    )
    .await;
    assert!(result.cancelled, "the flood starved the cancel");
    assert!(!result.timed_out);
}
