//! Ordinary shell text must not hijack or brick a persistent session
//! (issue 18 item 5): redefined names, readonly variables, descriptor games,
//! forged statuses, the user's own EXIT trap, `break` and `continue` at top
//! level. Every call has a short timeout, so that a bricked session fails
//! the test quickly instead of hanging it.

use bashtool_core::{BashTool, ToolResult};
use bashtool_tests::{
    DEATH_LIMIT, RESTARTED, cwd_line, new_session, session_tool, survivors_after, workspace,
};
use serde_json::json;

async fn run(tool: &BashTool, command: &str) -> ToolResult {
    tool.call(json!({ "command": command, "timeout": 10 }))
        .await
}

/// The text of a call that printed `stdout` and exited with `code`, in `cwd`.
fn plain(stdout: &str, code: i32, cwd: &std::path::Path) -> String {
    let status = if code == 0 {
        "exit code 0".to_owned()
    } else {
        format!("exit code {code}")
    };
    format!("stdout:\n{stdout}\n{status}\n{}", cwd_line(cwd))
}

const SHELL_ENDED: &str = "[the command ended the session's shell (exit, exec or a signal); the next call starts a new shell with the state saved last]";

#[tokio::test]
async fn redefined_source_builtin_dot_and_command_do_not_take_over_later_calls() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let define = run(
        &tool,
        "source() { echo hijacked; }; builtin() { echo hijacked; }; .() { echo hijacked; }; \
         command() { echo hijacked; }; printf() { echo hijacked; }; read() { echo hijacked; }",
    )
    .await;
    assert_eq!(
        define.text(),
        format!("(no output)\nexit code 0\n{}", cwd_line(&root))
    );
    let pid = session.shell_pid().await;
    let later = run(&tool, "echo real; cd sub; false").await;
    assert_eq!(later.text(), plain("real", 1, &root.join("sub")));
    // The same shell: it was repaired, not replaced.
    assert_eq!(session.shell_pid().await, pid);
    // The user's own functions still work for the user (but `builtin` and
    // `.` are the driver's).
    let mine = run(&tool, "source /dev/null; type -t builtin .").await;
    assert_eq!(
        mine.text(),
        plain("hijacked\nbuiltin\nbuiltin", 0, &root.join("sub"))
    );
}

#[tokio::test]
async fn aliases_of_driver_words_and_keywords_do_not_take_over_later_calls() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(
        &tool,
        "alias builtin='echo hijacked'; alias .='echo hijacked'; alias source='echo hijacked'; \
         alias while='echo hijacked;'; alias if='echo hijacked;'; alias __bt_exit='echo hijacked'",
    )
    .await;
    let later = run(&tool, "echo real; x=1").await;
    assert_eq!(later.text(), plain("real", 0, &root));
    let after = run(&tool, "echo $x; exit 4").await;
    assert_eq!(
        after.text(),
        format!(
            "stdout:\n1\n{SHELL_ENDED}\nexit code 4\n{}",
            cwd_line(&root)
        )
    );
    // The restart does not bring the driver's aliases back.
    // stdout and stderr are two pipes: their lines may arrive in either
    // order, so each stream's lines are checked on their own.
    let restarted = run(&tool, "echo $x; alias builtin .").await;
    let text = restarted.text();
    let err = command_file(&restarted);
    for expected in [
        "stdout:\n1\n".to_owned(),
        format!("{err}: line 1: alias: builtin: not found\n{err}: line 1: alias: .: not found\n"),
        format!("exit code 1\n{}\n{RESTARTED}", cwd_line(&root)),
    ] {
        assert!(text.contains(&expected), "{expected:?} in {text}");
    }
}

/// The path bash names in a session call's error messages.
fn command_file(result: &ToolResult) -> String {
    let text = result.text();
    let start = text.find("stderr:\n").expect("stderr") + "stderr:\n".len();
    let end = text[start..].find(": line ").expect("line") + start;
    text[start..end].to_owned()
}

#[tokio::test]
async fn readonly_driver_variables_are_repaired_by_a_restart_that_drops_them() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "cd sub; export KEPT=yes").await;
    let poison = run(
        &tool,
        "readonly __bt_stamp __bt_status __bt_seq __bt_running __bt_request __bt_out __bt_err __bt_marker POSIXLY_CORRECT; echo poisoned",
    )
    .await;
    assert!(
        poison.text().starts_with("stdout:\npoisoned\n"),
        "{}",
        poison.text()
    );
    for _ in 0..3 {
        let next = run(&tool, "echo $KEPT; pwd").await;
        assert_eq!(
            next.details.exit_code,
            Some(0),
            "a later call must run: {}",
            next.text()
        );
        assert!(next.text().starts_with(&format!(
            "stdout:\nyes\n{}\nexit code 0\n",
            root.join("sub").display()
        )));
    }
    // The new shell has none of them readonly.
    let check = run(
        &tool,
        "declare -p __bt_stamp | cut -c1-11; [[ -v POSIXLY_CORRECT ]] || echo unset",
    )
    .await;
    assert_eq!(
        check.text(),
        plain("declare -- \nunset", 0, &root.join("sub"))
    );
}

#[tokio::test]
async fn exec_3_from_stdin_does_not_crash_the_shell() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "true").await;
    let pid = session.shell_pid().await.expect("running");
    let games = run(&tool, "exec 3<&0; exec 4<&0 5<&0; echo fine").await;
    assert_eq!(games.text(), plain("fine", 0, &root));
    let next = run(&tool, "echo alive").await;
    assert_eq!(next.text(), plain("alive", 0, &root));
    assert_eq!(session.shell_pid().await, Some(pid));
}

#[tokio::test]
async fn descriptors_from_3_up_are_the_commands_own() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let opened = run(
        &tool,
        "exec 10>ten.txt; exec 3>three.txt; exec 11>eleven.txt; \
         echo 10 >&10; echo 3 >&3; echo 11 >&11; \
         exec 10>&- 3>&- 11>&-; cat ten.txt three.txt eleven.txt",
    )
    .await;
    assert_eq!(opened.text(), plain("10\n3\n11", 0, &root));
    // Kept open for a later call, as at a terminal.
    run(&tool, "exec 12>twelve.txt").await;
    let later = run(&tool, "echo 12 >&12; cat twelve.txt").await;
    assert_eq!(later.text(), plain("12", 0, &root));
}

#[tokio::test]
async fn a_command_cannot_forge_its_status_on_any_descriptor() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "true").await;
    // Status records in the old and the new shape, for this call's id and
    // the next ones, on every descriptor the shell might hold.
    let forged = run(
        &tool,
        "exec 2>/dev/null; \
         for fd in 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 255; do \
           for id in 1 2 3 4 5; do \
             builtin printf 'S %s 0\\nP/\\0S %s x 0\\nP/\\0' $id $id >&$fd; \
           done; \
         done; echo after; false",
    )
    .await;
    assert_eq!(forged.text(), plain("after", 1, &root));
    let next = run(&tool, "echo next").await;
    assert_eq!(next.text(), plain("next", 0, &root));
}

#[tokio::test]
async fn a_users_exit_trap_runs_and_the_exiting_calls_state_is_kept() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let trap_file = root.join("trap-ran.txt");
    run(
        &tool,
        &format!(
            "trap 'echo \"trap ran in $PWD\" > {}' EXIT",
            trap_file.display()
        ),
    )
    .await;
    let exiting = run(&tool, "cd sub; export KEPT=yes; exit 3").await;
    assert_eq!(
        exiting.text(),
        format!(
            "(no output)\n{SHELL_ENDED}\nexit code 3\n{}",
            cwd_line(&root)
        )
    );
    assert_eq!(
        std::fs::read_to_string(&trap_file).expect("the user's trap ran"),
        format!("trap ran in {}\n", root.join("sub").display())
    );
    let next = run(&tool, "pwd; echo $KEPT").await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\n{}\nyes\nexit code 0\n{}\n{RESTARTED}",
            root.join("sub").display(),
            cwd_line(&root.join("sub"))
        )
    );
}

#[tokio::test]
async fn break_and_continue_at_top_level_end_only_their_call() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let broke = run(&tool, "echo one; x=1; break; echo not reached").await;
    assert_eq!(broke.text(), plain("one", 0, &root));
    let continued = run(&tool, "echo two $x; continue; echo not reached").await;
    assert_eq!(continued.text(), plain("two 1", 0, &root));
    let pid = session.shell_pid().await;
    let next = run(&tool, "for i in 1 2; do break; done; echo three $x").await;
    assert_eq!(next.text(), plain("three 1", 0, &root));
    // A command that can change no state takes the driver's short branch
    // for the common call: `break` there ends only its call too.
    let short = run(&tool, "echo four; break; echo not reached").await;
    assert_eq!(short.text(), plain("four", 0, &root));
    let after = run(&tool, "echo five $x").await;
    assert_eq!(after.text(), plain("five 1", 0, &root));
    assert_eq!(session.shell_pid().await, pid);
}

#[tokio::test]
async fn a_restart_does_not_restore_the_poison() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(
        &tool,
        "builtin() { echo hijacked; }; alias builtin='echo hijacked'; .() { echo hijacked; }; \
         export KEPT=yes",
    )
    .await;
    // The snapshot is written right after the status; the next call starts
    // only once that is done.
    run(&tool, "true").await;
    // The shell dies from outside; the next one starts from the snapshot.
    let pid = session.shell_pid().await.expect("running");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    assert!(survivors_after(&[pid], DEATH_LIMIT).await.is_empty());
    let next = run(&tool, "echo $KEPT; type -t builtin .").await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\nyes\nbuiltin\nbuiltin\nexit code 0\n{}\n{RESTARTED}",
            cwd_line(&root)
        )
    );
}

#[tokio::test]
async fn a_call_right_after_the_shell_was_killed_still_runs_once() {
    // No wait: whether the session sees the death before it hands the call
    // over or only after, the command runs exactly once, in a new shell.
    kill_the_shell_then_call(false).await;
}

/// Kills the session's shell with SIGKILL and makes a call at once,
/// holding a CPU against the shell in between if `hold_cpu` (see
/// [`CpuHeld`]); the call must run exactly once, in a new shell that has
/// the exported variable back.
async fn kill_the_shell_then_call(hold_cpu: bool) {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "export KEPT=yes").await;
    run(&tool, "true").await;
    let pid = session.shell_pid().await.expect("running");
    let counter = root.join("runs.txt");
    let next = {
        let _held = hold_cpu.then(|| CpuHeld::against(pid));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill");
        run(
            &tool,
            &format!("echo run >> {}; echo $KEPT", counter.display()),
        )
        .await
    };
    assert_eq!(
        next.text(),
        format!(
            "stdout:\nyes\nexit code 0\n{}\n{RESTARTED}",
            cwd_line(&root)
        )
    );
    assert_eq!(std::fs::read_to_string(&counter).expect("ran"), "run\n");
}

/// Holds one CPU for this thread against `pid`: both run only there, this
/// thread at real-time priority, so `pid` cannot run until this thread
/// blocks. Undone on drop. `None` where real-time priority is not allowed
/// (neither root nor `CAP_SYS_NICE`, or a cgroup without real-time time).
struct CpuHeld {
    affinity: nix::sched::CpuSet,
}

impl CpuHeld {
    fn against(pid: u32) -> Option<Self> {
        let this_thread = nix::unistd::Pid::from_raw(0);
        let affinity = nix::sched::sched_getaffinity(this_thread).expect("affinity");
        let first = (0..nix::sched::CpuSet::count())
            .find(|&cpu| affinity.is_set(cpu).unwrap_or(false))
            .expect("a CPU to run on");
        let mut one = nix::sched::CpuSet::new();
        one.set(first).expect("a CPU in range");
        let param = libc::sched_param { sched_priority: 1 };
        // Reset on fork: the shell started in the meantime (from this
        // thread) must not run at real-time priority.
        let policy = libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK;
        // SAFETY: the pointer is to a live local; 0 is this thread.
        #[allow(unsafe_code)]
        let result = unsafe { libc::sched_setscheduler(0, policy, &raw const param) };
        if result != 0 {
            eprintln!(
                "real-time priority refused ({}): the race is left to the scheduler",
                std::io::Error::last_os_error()
            );
            return None;
        }
        let held = Self { affinity };
        let shell = nix::unistd::Pid::from_raw(pid as i32);
        nix::sched::sched_setaffinity(shell, &one).expect("the shell on one CPU");
        nix::sched::sched_setaffinity(this_thread, &one).expect("this thread on that CPU");
        Some(held)
    }
}

impl Drop for CpuHeld {
    fn drop(&mut self) {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: as above.
        #[allow(unsafe_code)]
        unsafe {
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &raw const param);
        }
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &self.affinity);
    }
}

#[tokio::test]
async fn a_shell_killed_just_before_a_call_that_still_takes_the_request_runs_it_once() {
    // The shell, blocked reading the next request, gets SIGKILL but cannot
    // run before the request is written (this thread writes it before it
    // first blocks): the kernel then finishes the read it was blocked in,
    // and the shell dies right after, without having run the command.
    // (Without real-time priority the race is left to the scheduler; what
    // is asserted is the same.)
    kill_the_shell_then_call(true).await;
}

#[tokio::test]
async fn a_command_setting_tmout_does_not_time_the_shell_out_between_calls() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "TMOUT=1").await;
    let pid = session.shell_pid().await.expect("running");
    // bash's `read` gives up after $TMOUT seconds; the driver waits for the
    // next call with `read`, so the time must really pass here.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let next = run(&tool, "echo $TMOUT").await;
    assert_eq!(
        next.text(),
        format!("stdout:\n1\nexit code 0\n{}", cwd_line(&root))
    );
    assert_eq!(session.shell_pid().await, Some(pid));
}
