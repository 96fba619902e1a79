//! Where bashtool keeps its files: private to the user, verified before
//! use, capped across processes; nothing another user planted is trusted.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::Duration;

use bashtool_core::{CommandExec, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec, LogDir, Session, SessionConfig};
use bashtool_tests::{temp_dir, text};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("stat").mode() & 0o777
}

async fn run(exec: &LocalExec, command: &str) -> bashtool_core::CommandResult {
    exec.spawn(
        command,
        SpawnOptions::default().timeout(Duration::from_secs(20)),
    )
    .await
    .expect("runs")
}

#[tokio::test]
async fn logs_are_private_files_in_a_private_directory() {
    let dir = temp_dir();
    let logs = dir.path().join("state/logs");
    let exec = LocalExec::new(LocalConfig {
        working_directory: dir.path().to_path_buf(),
        log_dir: Some(logs.clone()),
        ..LocalConfig::default()
    });
    let result = run(&exec, "echo secret output").await;
    let log = result.log_file.expect("a log file");
    assert_eq!(mode(&logs), 0o700);
    assert_eq!(mode(&log), 0o600);
}

#[tokio::test]
async fn a_planted_symlink_log_directory_is_refused_and_the_call_still_runs() {
    let dir = temp_dir();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let logs = dir.path().join("logs");
    std::os::unix::fs::symlink(&elsewhere, &logs).expect("symlink");
    let exec = LocalExec::new(LocalConfig {
        working_directory: dir.path().to_path_buf(),
        log_dir: Some(logs),
        ..LocalConfig::default()
    });
    let result = run(&exec, "echo hi").await;
    assert_eq!(text(&result), "hi");
    assert_eq!(result.log_file, None);
    assert_eq!(
        std::fs::read_dir(&elsewhere).expect("list").count(),
        0,
        "nothing was written through the symlink"
    );
}

/// Makes `path` look `hours` old.
fn age(path: &Path, hours: u32) {
    let status = std::process::Command::new("touch")
        .arg("-d")
        .arg(format!("{hours} hours ago"))
        .arg(path)
        .status()
        .expect("touch");
    assert!(status.success());
}

#[test]
fn the_caps_hold_across_processes() {
    let dir = temp_dir();
    let logs = dir.path().join("logs");
    // Another process's logs: old, and more than the cap.
    std::fs::create_dir(&logs).expect("mkdir");
    std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    for index in 0..10 {
        let path = logs.join(format!("{index:05}-other.log"));
        std::fs::write(&path, "x").expect("write");
        age(&path, 10 - index);
    }
    let ancient = logs.join("job-00001-old.out");
    std::fs::write(&ancient, "old job").expect("write");
    age(&ancient, 24 * 8);
    let ours = LogDir::new(logs.clone(), 3, u64::MAX);
    let (mut writer, handle) = ours.create_log("echo new").expect("log");
    std::io::Write::write_all(&mut writer, b"new").expect("write");
    drop(writer);
    let mut left: Vec<String> = std::fs::read_dir(&logs)
        .expect("list")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| {
            Path::new(name)
                .extension()
                .is_some_and(|extension| extension == "log" || extension == "out")
        })
        .collect();
    left.sort();
    // The newest of the other process's logs are kept up to the cap; ours
    // is new; the week-old job output is gone.
    let ours = handle
        .path
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert_eq!(ours, "00001-echo-new.log");
    assert_eq!(
        left,
        [
            "00001-echo-new.log",
            "00007-other.log",
            "00008-other.log",
            "00009-other.log"
        ]
    );
}

#[tokio::test]
async fn a_planted_session_snapshot_is_never_sourced() {
    let dir = temp_dir();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir(&sessions).expect("mkdir");
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let snapshot = sessions.join("demo.sh");
    let marker = dir.path().join("planted-code-ran");
    std::fs::write(
        &snapshot,
        format!(
            "touch '{}'\n# bashtool snapshot complete 99\n",
            marker.display()
        ),
    )
    .expect("write");
    // Writable by others: as if planted or tampered with.
    std::fs::set_permissions(&snapshot, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let session = Session::with_snapshot_path(
        SessionConfig {
            local: LocalConfig {
                working_directory: dir.path().to_path_buf(),
                log_dir: Some(dir.path().join("logs")),
                ..LocalConfig::default()
            },
            ..SessionConfig::default()
        },
        &snapshot,
    )
    .expect("session");
    let result = session
        .spawn(
            "echo ok",
            SpawnOptions::default().timeout(Duration::from_secs(20)),
        )
        .await
        .expect("runs");
    assert_eq!(text(&result), "ok");
    assert!(!marker.exists(), "the planted snapshot ran");
    session.shutdown().await.expect("saved");
    // The state saved now is private.
    assert_eq!(mode(&snapshot), 0o600);
}
