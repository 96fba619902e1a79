//! Warm shells (`LocalConfig::warm_shells`): a stateless call takes a bash
//! started before it arrived, and the command cannot tell but for what
//! `docs/warm-shells.md` lists. Whether a call got a warm shell is decided
//! here from `/proc` (the shell's pid was already waiting before the call),
//! not by the code under test.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bashtool_core::{CommandExec, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec};
use bashtool_tests::{
    DEATH_LIMIT, echo_pid, killed_survivors, pid_alive, pids_in, run, survivors_after, temp_dir,
    test_config, text, wait_until,
};

fn exec_with(dir: &Path, warm_shells: usize) -> LocalExec {
    LocalExec::new(LocalConfig {
        warm_shells,
        env: BTreeMap::from([("LANG".to_owned(), "C.UTF-8".to_owned())]),
        ..test_config(dir)
    })
}

/// Children of this process that are bash waiting for a command on fd 3
/// in `dir` (read from `/proc` by the test; each test has its own `dir`).
fn waiting_shells(dir: &Path) -> Vec<u32> {
    let own = std::process::id();
    bashtool_process::all_processes()
        .into_iter()
        .filter(|info| info.parent == own && pid_alive(info.pid))
        .filter(|info| {
            std::fs::read_link(format!("/proc/{}/cwd", info.pid))
                .is_ok_and(|cwd| cwd == dir.canonicalize().unwrap_or_default())
        })
        .filter(|info| {
            std::fs::read(format!("/proc/{}/cmdline", info.pid)).is_ok_and(|cmdline| {
                cmdline
                    .windows(b"-u 3 BASH_EXECUTION_STRING".len())
                    .any(|window| window == b"-u 3 BASH_EXECUTION_STRING")
            })
        })
        // Still holding its command pipe: a shell that took its command
        // closed fd 3 (its command line stays the reading script).
        .filter(|info| std::fs::symlink_metadata(format!("/proc/{}/fd/3", info.pid)).is_ok())
        .map(|info| info.pid)
        .collect()
}

/// The pid `host_pid` has in its own pid namespace (the last `NSpid`).
fn pid_inside(host_pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{host_pid}/status"))
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("NSpid:"))?
        .split_whitespace()
        .last()?
        .parse()
        .ok()
}

/// This process's children, their state, directory and command line.
fn children_for_diagnosis() -> Vec<String> {
    let own = std::process::id();
    bashtool_process::all_processes()
        .into_iter()
        .filter(|info| info.parent == own)
        .map(|info| {
            let cwd = std::fs::read_link(format!("/proc/{}/cwd", info.pid)).unwrap_or_default();
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", info.pid)).unwrap_or_default();
            format!(
                "{} zombie={} cwd={} {}",
                info.pid,
                info.zombie,
                cwd.display(),
                String::from_utf8_lossy(&cmdline[..cmdline.len().min(60)])
            )
        })
        .collect()
}

/// Waits until a shell is waiting and returns those that are.
async fn a_waiting_shell(dir: &Path) -> Vec<u32> {
    let mut waiting = Vec::new();
    assert!(
        wait_until(Duration::from_secs(10), || {
            waiting = waiting_shells(dir);
            !waiting.is_empty()
        })
        .await,
        "no warm shell was started in {}; children: {:?}",
        dir.display(),
        children_for_diagnosis()
    );
    waiting
}

/// Runs `command` on the shell waiting in `dir`, and checks that it did:
/// the shell that waited has exited (a shell runs one command) and the
/// output is the command's.
async fn run_warm(exec: &LocalExec, dir: &Path, command: &str) -> (String, Option<i32>) {
    let waiting = a_waiting_shell(dir).await;
    assert_eq!(waiting.len(), 1, "one shell waits: {waiting:?}");
    let result = run(exec, command).await;
    assert!(
        !pid_alive(waiting[0]),
        "{command}: the waiting shell was not used"
    );
    (text(&result), result.exit_code)
}

#[tokio::test]
async fn a_warm_shell_runs_the_command_as_bash_c_would() {
    let dir = temp_dir();
    let fresh = exec_with(dir.path(), 0);
    let warm = exec_with(dir.path(), 1);
    let probes = [
        "echo \"$0 $# $- [$_]\"",
        "echo $LINENO\necho \"$LINENO\"",
        "return 3",
        "exit 4",
        "trap 'echo bye' EXIT; false",
        "set -e; false; echo not reached",
        "read line; echo \"read $? [$line]\"",
        // PIPESTATUS: set by the reading script's last command (documented).
        "compgen -v | grep -v -x -e BASHPID -e RANDOM -e SRANDOM -e PIPESTATUS",
        // The shell's own descriptors (a single command is not exec'd in
        // the shell's place by eval: list them from the shell itself).
        "for fd in /proc/$$/fd/*; do link=$(readlink \"$fd\"); echo \"${fd##*/} ${link%%:*}\"; done",
        "x=é; echo \"${#x} ${LC_ALL-unset} ${TMOUT-unset}\"",
        "echo \"${#BASH_EXECUTION_STRING}\"",
        "f() { caller; echo \"${FUNCNAME[*]} ${BASH_SOURCE[*]-none}\"; }; f",
        "shopt -s expand_aliases; alias say=echo\nsay aliased",
        "echo \"it's\" \\\n  continued",
    ];
    for probe in probes {
        let expected = run(&fresh, probe).await;
        let (output, exit_code) = run_warm(&warm, dir.path(), probe).await;
        assert_eq!(output, text(&expected), "{probe}");
        assert_eq!(exit_code, expected.exit_code, "{probe}");
    }
    warm.shutdown().await;
}

#[tokio::test]
async fn a_syntax_error_is_reported_by_eval_with_the_same_line_and_status() {
    let dir = temp_dir();
    let fresh = exec_with(dir.path(), 0);
    let warm = exec_with(dir.path(), 1);
    for probe in ["echo a\nif", "echo (", "echo \"open"] {
        let expected = text(&run(&fresh, probe).await);
        let (output, exit_code) = run_warm(&warm, dir.path(), probe).await;
        assert_eq!(
            output,
            expected.replace("bash: -c: line", "bash: eval: line"),
            "{probe}"
        );
        assert!(output.contains("bash: eval: line"), "{output}");
        assert_eq!(exit_code, Some(2), "{probe}");
    }
    warm.shutdown().await;
}

#[tokio::test]
async fn a_long_command_reaches_a_warm_shell_whole() {
    let dir = temp_dir();
    let warm = exec_with(dir.path(), 1);
    // Over the 100 KiB a fresh shell takes as an argument, with multibyte
    // characters (the length is in bytes, whatever the locale).
    let filler = format!(": '{}'\n", "é".repeat(80 * 1024));
    let (output, exit_code) = run_warm(
        &warm,
        dir.path(),
        &format!("{filler}echo done ${{#BASH_EXECUTION_STRING}}"),
    )
    .await;
    let expected_length = filler.chars().count() + "echo done ${#BASH_EXECUTION_STRING}".len();
    assert_eq!(output, format!("done {expected_length}"));
    assert_eq!(exit_code, Some(0));
    warm.shutdown().await;
}

#[tokio::test]
async fn calls_in_another_directory_or_with_variables_start_their_own_shell() {
    let dir = temp_dir();
    std::fs::create_dir(dir.path().join("sub")).expect("sub");
    let warm = exec_with(dir.path(), 1);
    let waiting = a_waiting_shell(dir.path()).await;
    let elsewhere = warm
        .spawn(
            &format!("{}; echo $PWD", echo_pid("$$")),
            SpawnOptions::default().current_dir(dir.path().join("sub")),
        )
        .await
        .expect("runs");
    let pid = pids_in(&text(&elsewhere))[0];
    assert!(!waiting.contains(&pid));
    assert!(text(&elsewhere).ends_with("/sub"), "{}", text(&elsewhere));
    let with_variables = warm
        .spawn(
            &format!("{}; echo $ONLY_HERE", echo_pid("$$")),
            SpawnOptions::default().env("ONLY_HERE", "yes"),
        )
        .await
        .expect("runs");
    let pid = pids_in(&text(&with_variables))[0];
    assert!(!waiting.contains(&pid));
    assert!(text(&with_variables).ends_with("\nyes"));
    warm.shutdown().await;
}

#[tokio::test]
async fn a_waiting_shell_that_died_is_replaced_by_a_fresh_one() {
    let dir = temp_dir();
    let warm = exec_with(dir.path(), 1);
    let waiting = a_waiting_shell(dir.path()).await;
    bashtool_tests::kill_all(&waiting);
    assert_eq!(
        survivors_after(&waiting, Duration::from_secs(5)).await,
        Vec::<u32>::new()
    );
    let result = run(&warm, &format!("{}; echo still works", echo_pid("$$"))).await;
    let output = text(&result);
    assert!(!waiting.contains(&pids_in(&output)[0]));
    assert!(output.ends_with("\nstill works"), "{output}");
    let exit_code = result.exit_code;
    assert_eq!(exit_code, Some(0));
    warm.shutdown().await;
}

#[tokio::test]
async fn a_warm_shell_that_times_out_is_stopped_with_its_children() {
    let dir = temp_dir();
    let warm = exec_with(dir.path(), 1);
    let waiting = a_waiting_shell(dir.path()).await;
    // The shells' pids as they see them (a sandbox's pid namespace has
    // its own numbers), to tell which shell ran the call.
    let waiting_inside: Vec<u32> = waiting.iter().filter_map(|&pid| pid_inside(pid)).collect();
    let result = warm
        .spawn(
            &format!("{}; sleep 300 & {}; wait", echo_pid("$$"), echo_pid("$!")),
            SpawnOptions::default().timeout(Duration::from_millis(500)),
        )
        .await
        .expect("runs");
    assert!(result.timed_out);
    let output = text(&result);
    let shell_inside: u32 = output
        .lines()
        .find_map(|line| line.strip_prefix("pid:")?.split('@').next()?.parse().ok())
        .expect("the shell's pid");
    assert!(waiting_inside.contains(&shell_inside), "{output}");
    let mut pids = pids_in(&output);
    pids.extend(&waiting);
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
    warm.shutdown().await;
}

/// No shell is started while calls run (its start-up would take the CPU
/// the calls and their answers need); once the last call ends, one is.
#[tokio::test]
async fn a_shell_is_started_when_the_last_call_ends_not_while_calls_run() {
    let dir = temp_dir();
    let warm = exec_with(dir.path(), 1);
    let first = a_waiting_shell(dir.path()).await;
    let release = dir.path().join("release");
    let until_released = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; echo released",
        release.display()
    );
    let call = |warm: &LocalExec| {
        let warm = warm.clone();
        let command = until_released.clone();
        tokio::spawn(async move { run(&warm, &command).await })
    };
    // The first call takes the waiting shell ...
    let alone = call(&warm);
    assert!(
        wait_until(Duration::from_secs(10), || !waiting_shells(dir.path())
            .contains(&first[0]))
        .await,
        "the call did not take the waiting shell"
    );
    // ... and none is started while it runs (a fill starts within
    // milliseconds; a second is ample).
    assert!(
        !wait_until(Duration::from_secs(1), || !waiting_shells(dir.path())
            .is_empty())
        .await,
        "a shell was started while a call ran: {:?}",
        waiting_shells(dir.path())
    );
    // The second call starts its own, and none is started behind it.
    let beside = call(&warm);
    assert!(
        !wait_until(Duration::from_secs(1), || !waiting_shells(dir.path())
            .is_empty())
        .await,
        "a shell was started while two calls ran: {:?}",
        waiting_shells(dir.path())
    );
    std::fs::write(&release, "").expect("release");
    for running in [alone, beside] {
        let result = running.await.expect("call task");
        assert_eq!(text(&result), "released");
    }
    // The last call to end filled the pool again.
    a_waiting_shell(dir.path()).await;
    warm.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_the_waiting_shells() {
    let dir = temp_dir();
    let warm = exec_with(dir.path(), 2);
    let mut waiting = Vec::new();
    assert!(
        wait_until(Duration::from_secs(10), || {
            waiting = waiting_shells(dir.path());
            waiting.len() >= 2
        })
        .await
    );
    warm.shutdown().await;
    assert_eq!(
        killed_survivors(&waiting, Duration::from_secs(5)).await,
        Vec::<u32>::new(),
        "still waiting"
    );
}

/// A call that ends after the shutdown starts no shell behind it.
#[tokio::test]
async fn a_call_ending_after_shutdown_starts_no_shell() {
    let dir = temp_dir();
    let warm = exec_with(dir.path(), 1);
    a_waiting_shell(dir.path()).await;
    let release = dir.path().join("release");
    let running = {
        let warm = warm.clone();
        let command = format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; echo released",
            release.display()
        );
        tokio::spawn(async move { run(&warm, &command).await })
    };
    // The call took the waiting shell; none is started while it runs.
    assert!(
        wait_until(Duration::from_secs(10), || waiting_shells(dir.path())
            .is_empty())
        .await,
        "the call did not take the waiting shell"
    );
    warm.shutdown().await;
    assert!(
        wait_until(Duration::from_secs(5), || waiting_shells(dir.path())
            .is_empty())
        .await,
        "shutdown left a shell waiting"
    );
    std::fs::write(&release, "").expect("release");
    assert_eq!(text(&running.await.expect("call task")), "released");
    // A refill starts within milliseconds; a second is ample.
    assert!(
        !wait_until(Duration::from_secs(1), || !waiting_shells(dir.path())
            .is_empty())
        .await,
        "a shell was started after the shutdown: {:?}",
        waiting_shells(dir.path())
    );
}

/// Calls made one right after the other each get a warm shell: a call that
/// finds none waiting takes the one the previous call's end is starting.
/// Whether a shell was warm is read by the command from `/proc/$$/cmdline`
/// (a warm shell's is the reading script).
#[tokio::test]
async fn back_to_back_calls_each_take_a_warm_shell() {
    let dir = temp_dir();
    let warm = exec_with(dir.path(), 1);
    a_waiting_shell(dir.path()).await;
    for _ in 0..5 {
        let result = run(
            &warm,
            "if grep -q -a -- '-u 3 BASH_EXECUTION_STRING' /proc/$$/cmdline; then echo warm; else echo fresh; fi",
        )
        .await;
        assert_eq!(text(&result), "warm");
    }
    warm.shutdown().await;
}

/// A warm shell in the sandbox is confined exactly as a fresh one: the
/// same namespaces (the sandbox's realm), capabilities, `no_new_privs`,
/// seccomp, and a write outside the writable roots refused (checked by
/// the test on the file system).
#[tokio::test]
async fn a_warm_shell_in_the_sandbox_is_confined_as_a_fresh_one() {
    let dir = temp_dir();
    // Outside every writable root: not under /tmp, nor the workspace.
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    let outside = tempfile::Builder::new()
        .prefix("bashtool-warm-outside")
        .tempdir_in(home)
        .expect("a directory outside the workspace");
    let warm = exec_with(dir.path(), 1);
    assert!(
        warm.environment_info().sandbox.is_some(),
        "the sandbox is on"
    );
    let probe = |target: &Path| {
        format!(
            "grep -E '^(NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status; \
             for ns in ipc mnt net pid uts cgroup; do readlink /proc/self/ns/$ns; done; \
             echo \"sandbox=$BASHTOOL_SANDBOX\"; touch '{}' 2>/dev/null; echo \"touch=$?\"",
            target.display()
        )
    };
    let (fresh_target, warm_target) = (outside.path().join("fresh"), outside.path().join("warm"));
    // A call with a variable of its own starts a fresh shell, in the same
    // sandbox (the same realm) as the warm one, which goes on waiting.
    let waiting = a_waiting_shell(dir.path()).await;
    let fresh = warm
        .spawn(
            &probe(&fresh_target),
            SpawnOptions::default().env("A_FRESH_SHELL", "1"),
        )
        .await
        .expect("runs");
    assert_eq!(
        waiting_shells(dir.path()),
        waiting,
        "the fresh call took the warm shell"
    );
    let fresh_output = text(&fresh);
    let (warm_output, _) = run_warm(&warm, dir.path(), &probe(&warm_target)).await;
    for (target, output) in [(&fresh_target, &fresh_output), (&warm_target, &warm_output)] {
        assert!(!target.exists(), "wrote outside the workspace: {output}");
        assert!(output.contains("NoNewPrivs:\t1"), "{output}");
        assert!(output.contains("Seccomp:\t2"), "{output}");
        assert!(output.contains("sandbox=workspace-write"), "{output}");
        assert!(output.ends_with("touch=1"), "{output}");
    }
    assert_eq!(warm_output, fresh_output);
    warm.shutdown().await;
}
