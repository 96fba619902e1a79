//! `bashtool run` from a terminal's point of view: Ctrl-C.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use bashtool_tests::{DEATH_LIMIT, killed_survivors, pid_alive, qualified_pid};

#[tokio::test]
async fn ctrl_c_kills_the_command_tree_and_exits_130() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["run", "--"])
        .arg(format!(
            "sleep 300 & echo child={}; wait",
            qualified_pid("$!")
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    // The live output shows the grandchild's pid while the command runs.
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = lines.next().expect("a line").expect("read");
    let grandchild = line
        .strip_prefix("child=")
        .and_then(bashtool_tests::parse_pid)
        .expect("child=PID");
    assert!(pid_alive(grandchild));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(130));
    assert_eq!(
        killed_survivors(&[grandchild], DEATH_LIMIT).await,
        Vec::<u32>::new(),
        "the grandchild survived Ctrl-C"
    );
}

fn bashtool() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command.env_remove("BASHTOOL_CONFIG");
    command
}

/// Issue 18, item 12: a misspelt flag is an error and nothing runs.
#[test]
fn a_misspelt_flag_is_an_error_not_the_command() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = bashtool()
        .current_dir(dir.path())
        .args(["run", "--timout", "1", "touch ran"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("'--timout'"));
    assert!(!dir.path().join("ran").exists());
}

/// Issue 18, item 12: several words are one command, each word quoted;
/// one word is the script as is.
#[test]
fn words_keep_their_quoting_and_one_argument_is_a_script() {
    let output = bashtool()
        .args(["run", "--", "printf", r"[%s]\n", "a b", "it's"])
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "[a b]\n[it's]\n");
    let output = bashtool()
        .args(["run", "echo a | tr a b"])
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "b\n");
}

/// Issue 18, item 12: a command whose name starts with `-` runs as a
/// command, not as an option of bash.
#[test]
fn a_command_starting_with_a_dash_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("-hello");
    std::fs::write(&program, "#!/bin/sh\necho \"hello $1\"\n").expect("write");
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for args in [&["-hello", "world"][..], &["-hello world"][..]] {
        let output = bashtool()
            .env("PATH", &path)
            .args(["run", "--"])
            .args(args)
            .output()
            .expect("run");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "hello world\n",
            "{args:?}: {output:?}"
        );
        assert!(output.status.success());
    }
}

/// Issue 18, item 12: `bashtool run ... | head` stops the command when our
/// stdout closes, and says so with status 141.
#[test]
fn a_closed_stdout_stops_the_command_with_status_141() {
    let mut child = bashtool()
        .args(["run", "--timeout", "600", "--"])
        .arg(format!(
            "echo pid={}; while :; do echo line; sleep 0.01; done",
            qualified_pid("$$")
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let pid = lines
        .next()
        .expect("a line")
        .expect("read")
        .strip_prefix("pid=")
        .and_then(bashtool_tests::parse_pid)
        .expect("pid=PID");
    assert!(pid_alive(pid));
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    drop(lines);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait().expect("wait"));
    });
    let status = receiver
        .recv_timeout(Duration::from_secs(20))
        .expect("bashtool run kept going after its stdout closed");
    assert_eq!(status.code(), Some(141));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut stderr_pipe, &mut stderr).expect("stderr");
    assert!(stderr.contains("stdout was closed"), "{stderr}");
    assert!(!pid_alive(pid), "the command survived");
}
