//! Log files: one per call, the command first, stream headers, caps, and
//! degrading to no log instead of failing.

use std::time::Duration;

use bashtool_core::SpawnOptions;
use bashtool_env_local::{LocalConfig, LocalExec};
use bashtool_tests::{local_exec, run, run_with, temp_dir, test_config, text};

#[tokio::test]
async fn each_call_has_a_log_with_the_command_and_stream_headers() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, "echo one; echo two >&2; echo three").await;
    let log_file = result.log_file.expect("a log file");
    assert!(log_file.starts_with(dir.path().join("logs")));
    let log = std::fs::read_to_string(&log_file).expect("read");
    // stdout and stderr are different pipes: their relative order is what
    // arrived first, so only the shape is fixed.
    assert!(
        log.starts_with("$ echo one; echo two >&2; echo three\n"),
        "{log}"
    );
    assert!(log.contains("stdout:\none\n"), "{log}");
    assert!(log.contains("stderr:\ntwo\n"), "{log}");
    let other = run(&exec, "true").await.log_file.expect("a log file");
    assert_ne!(other, log_file);
}

#[tokio::test]
async fn the_log_keeps_every_line_when_the_model_text_is_shortened() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, "seq 1 100000").await;
    assert!(!result.output.is_complete());
    let log = std::fs::read_to_string(result.log_file.expect("a log")).expect("read");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2 + 100_000);
    assert_eq!(lines[2], "1");
    assert_eq!(lines[100_001], "100000");
}

#[tokio::test]
async fn log_count_is_capped_removing_the_oldest() {
    let dir = temp_dir();
    let exec = LocalExec::new(LocalConfig {
        max_log_files: 3,
        ..test_config(dir.path())
    });
    let mut logs = Vec::new();
    for number in 0..5 {
        logs.push(
            run(&exec, &format!("echo {number}"))
                .await
                .log_file
                .expect("log"),
        );
    }
    let existing: Vec<bool> = logs.iter().map(|path| path.exists()).collect();
    assert_eq!(existing, [false, false, true, true, true]);
}

#[tokio::test]
async fn log_size_is_capped() {
    let dir = temp_dir();
    let exec = LocalExec::new(LocalConfig {
        max_log_bytes: 10_000,
        ..test_config(dir.path())
    });
    let first = run(&exec, "seq 1 10000").await;
    let path = first.log_file.clone().expect("log");
    let size = std::fs::metadata(&path).expect("stat").len();
    assert!(size < 10_200, "{size}");
    assert_eq!(first.output.total_lines(), 10_000);
    assert!(
        first.notes.iter().any(|note| note.contains("size cap")),
        "{:?}",
        first.notes
    );
    // The next call's log pushes the full one out.
    let second = run(&exec, "echo small").await;
    assert!(!path.exists());
    assert!(second.log_file.expect("log").exists());
}

#[tokio::test]
async fn an_unwritable_log_directory_means_no_log_not_a_failure() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("file"), "").expect("write");
    let exec = LocalExec::new(LocalConfig {
        log_dir: Some(dir.path().join("file").join("logs")),
        ..test_config(dir.path())
    });
    let result = run_with(
        &exec,
        "echo fine",
        SpawnOptions::default().timeout(Duration::from_secs(10)),
    )
    .await
    .expect("the call still runs");
    assert_eq!(result.exit_code, Some(0));
    assert_eq!(text(&result), "fine");
    assert_eq!(result.log_file, None);
    assert_eq!(result.notes.len(), 1);
    assert!(
        result.notes[0].starts_with("no log file: could not create one in "),
        "{:?}",
        result.notes
    );
}
