//! The contract suite: every promise of the [`CommandExec`] and [`Jobs`]
//! ports, as one function each, run against every environment of the
//! workspace (see `tests/tests/contract.rs`; the remote adapter runs it too).
//!
//! Liveness is decided here from `/proc`, never by the code under test, and
//! every wait is for an event with a deadline.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{
    CommandExec, CommandResult, JobState, Jobs, OutputChunk, ReadFrom, SpawnOptions, Stream,
};
use tokio_util::sync::CancellationToken;

use crate::{echo_pid, escapee, grandchildren_script, kill_all, pids_in, survivors_after};

/// What the suite runs against: an environment, its jobs, and a directory
/// it may use (the environment's working directory).
pub struct Subject {
    pub exec: Arc<dyn CommandExec>,
    pub jobs: Arc<dyn Jobs>,
    pub dir: PathBuf,
    /// Keeps the directory (and anything else) alive for the test.
    pub guard: Box<dyn std::any::Any + Send>,
}

/// Declares one test per promise of the suite, in a module named
/// `$environment`, each built from a fresh `$subject` (an expression giving
/// a [`Subject`]). Every environment's test file calls this, so a new
/// promise reaches all of them.
#[macro_export]
macro_rules! contract_suite {
    ($environment:ident, $subject:expr) => {
        mod $environment {
            use super::*;

            $crate::contract_suite!(@tests $subject;
                exit_codes, signals, interleaving, huge_output_is_bounded,
                timeout_stops_the_tree, cancel_stops_the_tree, drop_stops_the_tree,
                no_hang_on_a_leftover, cwd_and_env_per_call, background_job_lifecycle,
                background_job_stop, a_stopped_command_is_detected, cancel_wins_over_a_flood);
        }
    };
    (@tests $subject:expr; $($promise:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $promise() {
                $crate::contract::$promise($subject).await;
            }
        )*
    };
}

/// How long a stopped tree may take to disappear from `/proc`.
pub const DEATH_LIMIT: Duration = Duration::from_secs(10);
/// A safety timeout for commands that end by themselves.
pub const SAFETY: Duration = Duration::from_secs(30);

async fn run(subject: &Subject, command: &str, options: SpawnOptions) -> CommandResult {
    subject
        .exec
        .spawn(command, options)
        .await
        .expect("the command starts")
}

fn lines(result: &CommandResult) -> Vec<(Stream, String)> {
    result
        .output
        .retained()
        .0
        .iter()
        .map(|line| (line.stream, line.text.clone()))
        .collect()
}

fn text(result: &CommandResult) -> String {
    lines(result)
        .into_iter()
        .map(|(_, line)| line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A sink that collects the text and fires `trigger` once `count` pids
/// were printed.
fn pid_watch(count: usize, trigger: CancellationToken) -> Arc<dyn Fn(&OutputChunk) + Send + Sync> {
    let printed = Mutex::new(String::new());
    Arc::new(move |chunk: &OutputChunk| {
        let mut printed = printed.lock().unwrap_or_else(PoisonError::into_inner);
        printed.push_str(&chunk.text);
        if pids_in(&printed).len() >= count {
            trigger.cancel();
        }
    })
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
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
}

/// A cancel stops the whole tree and returns the output so far.
pub async fn cancel_stops_the_tree(subject: Subject) {
    let cancel = CancellationToken::new();
    let options = SpawnOptions::default()
        .timeout(SAFETY)
        .cancel(cancel.clone())
        .on_output(pid_watch(3, cancel));
    let script = format!("{}{}\nsleep 300", grandchildren_script(2), escapee());
    let result = run(&subject, &script, options).await;
    assert!(result.cancelled);
    assert!(!result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 3, "{}", text(&result));
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
}

/// Dropping the call's future stops the whole tree.
pub async fn drop_stops_the_tree(subject: Subject) {
    let printed = CancellationToken::new();
    let text_seen = Arc::new(Mutex::new(String::new()));
    let seen = Arc::clone(&text_seen);
    let trigger = printed.clone();
    let sink = Arc::new(move |chunk: &OutputChunk| {
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.push_str(&chunk.text);
        if pids_in(&seen).len() >= 2 {
            trigger.cancel();
        }
    });
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
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
}

/// `cmd &` never holds the call: it returns when the main command ends,
/// and the leftover is stopped.
pub async fn no_hang_on_a_leftover(subject: Subject) {
    let result = run(
        &subject,
        &format!(
            "sh -c '{}; exec sleep 300' & sleep 0.2; echo started",
            echo_pid("$$")
        ),
        SpawnOptions::default().timeout(SAFETY),
    )
    .await;
    assert!(!result.timed_out, "the call waited for the leftover");
    assert_eq!(result.exit_code, Some(0));
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 1);
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
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

fn background() -> SpawnOptions {
    SpawnOptions::default().mode(bashtool_core::ExecMode::Background)
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

/// Stopping a job stops its whole tree.
pub async fn background_job_stop(subject: Subject) {
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
    let survivors = survivors_after(&pids, DEATH_LIMIT).await;
    kill_all(&survivors);
    assert_eq!(survivors, Vec::<u32>::new());
    let unknown = subject.jobs.stop("no-such-job").await;
    assert!(matches!(
        unknown,
        Err(bashtool_core::JobError::UnknownJob { .. })
    ));
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
