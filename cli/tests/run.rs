//! `bashtool run` from a terminal's point of view: Ctrl-C.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// True while the process exists and is not a zombie.
fn pid_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[test]
fn ctrl_c_kills_the_command_tree_and_exits_130() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["run", "--", "sleep 300 & echo child=$!; wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    // The live output shows the grandchild's pid while the command runs.
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = lines.next().expect("a line").expect("read");
    let grandchild: i32 = line
        .strip_prefix("child=")
        .expect("child=PID")
        .parse()
        .expect("pid");
    assert!(pid_alive(grandchild));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(130));
    let deadline = Instant::now() + Duration::from_secs(10);
    while pid_alive(grandchild) {
        assert!(
            Instant::now() < deadline,
            "grandchild {grandchild} survived Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
