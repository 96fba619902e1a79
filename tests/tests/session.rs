//! Persistent sessions with real bash, driven through the tool as the model
//! would: state carries over between calls, and no command can break the
//! session.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{BashTool, CallContext, OutputChunk, ToolConfig, ToolResult};
use bashtool_env_local::Session;
use bashtool_tests::{
    DEATH_LIMIT, RESTARTED, cancel_when_output_contains, cwd_line, echo_pid, killed_survivors,
    new_session, pids_in, qualified_pid, read_pids, session_config, session_tool, workspace,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn run(tool: &BashTool, command: &str) -> ToolResult {
    tool.call(json!({ "command": command })).await
}

async fn call(tool: &BashTool, input: Value) -> ToolResult {
    tool.call(input).await
}

#[tokio::test]
async fn cwd_variables_functions_aliases_and_options_persist() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let setup = run(
        &tool,
        "cd sub && plain=1 && export EXPORTED=2 && greet() { echo \"hello $1\"; } && \
         alias say='echo said' && set -o pipefail && shopt -s extglob && declare -a list=(a 'b c')",
    )
    .await;
    assert_eq!(
        setup.text(),
        format!("(no output)\nexit code 0\n{}", cwd_line(&root.join("sub")))
    );
    let check = run(
        &tool,
        "pwd; echo \"$plain $EXPORTED ${list[1]}\"; greet you; say it; \
         bash -c 'echo child sees ${EXPORTED:-nothing} ${plain:-nothing}'; \
         set -o | grep -w pipefail; shopt extglob",
    )
    .await;
    assert_eq!(
        check.text(),
        format!(
            "stdout:\n{}\n1 2 b c\nhello you\nsaid it\nchild sees 2 nothing\npipefail       \ton\nextglob        \ton\nexit code 0\n{}",
            root.join("sub").display(),
            cwd_line(&root.join("sub"))
        )
    );
    assert!(!check.is_error);
}

#[tokio::test]
async fn venv_style_activation_persists() {
    let (_dir, root) = workspace();
    let bin = root.join(".venv/bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::write(
        bin.join("activate"),
        format!(
            "export VIRTUAL_ENV={root}/.venv\n_OLD_PATH=\"$PATH\"\nexport PATH=\"$VIRTUAL_ENV/bin:$PATH\"\n\
             deactivate() {{ export PATH=\"$_OLD_PATH\"; unset VIRTUAL_ENV; unset -f deactivate; }}\n",
            root = root.display()
        ),
    )
    .expect("write");
    std::fs::write(
        bin.join("venv-tool"),
        "#!/bin/sh\necho \"venv tool in $VIRTUAL_ENV\"\n",
    )
    .expect("write");
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(bin.join("venv-tool"))
        .status()
        .expect("chmod");
    let session = new_session(&root);
    let tool = session_tool(&session);
    assert!(!run(&tool, "source .venv/bin/activate").await.is_error);
    let used = run(&tool, "venv-tool; type -t deactivate").await;
    assert_eq!(
        used.text(),
        format!(
            "stdout:\nvenv tool in {}/.venv\nfunction\nexit code 0\n{}",
            root.display(),
            cwd_line(&root)
        )
    );
    assert!(!run(&tool, "deactivate").await.is_error);
    let after = run(&tool, "command -v venv-tool || echo gone").await;
    assert_eq!(
        after.text(),
        format!("stdout:\ngone\nexit code 0\n{}", cwd_line(&root))
    );
}

#[tokio::test]
async fn exit_returns_its_code_and_the_session_lives_on() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let exited = run(&tool, "cd sub; export KEPT=yes; echo bye; exit 3").await;
    assert_eq!(
        exited.text(),
        format!(
            "stdout:\nbye\n[the command ended the session's shell (exit, exec or a signal); the next call starts a new shell with the state saved last]\nexit code 3\n{}",
            cwd_line(&root)
        )
    );
    assert_eq!(exited.details.exit_code, Some(3));
    assert!(exited.is_error);
    let next = run(&tool, "pwd; echo $KEPT").await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\n{sub}\nyes\nexit code 0\n{}\n{RESTARTED}",
            cwd_line(&root.join("sub")),
            sub = root.join("sub").display()
        )
    );
    assert!(next.details.shell.as_ref().expect("shell").restarted);
    // And the one after runs in the same new shell: no restart.
    let third = run(&tool, "echo $KEPT").await;
    assert!(!third.details.shell.expect("shell").restarted);
}

#[tokio::test]
async fn failures_and_top_level_return_keep_the_same_shell() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    assert!(!run(&tool, "true").await.is_error);
    let pid = session.shell_pid().await.expect("shell running");
    let failed = run(&tool, "ls /nonexistent-dir-for-bashtool").await;
    assert_eq!(failed.details.exit_code, Some(2));
    let returned = run(&tool, "echo before; return 4; echo after").await;
    assert_eq!(
        returned.text(),
        format!("stdout:\nbefore\nexit code 4\n{}", cwd_line(&root))
    );
    let syntax = run(&tool, "if then fi (").await;
    assert!(syntax.is_error);
    let killed = run(&tool, "sh -c 'kill -9 $$'").await;
    assert_eq!(killed.details.exit_code, Some(137));
    assert_eq!(session.shell_pid().await, Some(pid));
    assert!(
        !run(&tool, "true")
            .await
            .details
            .shell
            .expect("shell")
            .restarted
    );
}

#[tokio::test]
async fn timeout_kills_the_tree_and_the_next_call_has_the_earlier_state() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "cd sub; export BEFORE=1").await;
    let timed_out = call(
        &tool,
        json!({
            "command": format!(
                "sleep 300 & {child}; bash -c 'sleep 300 & {child}; setsid sleep 300 & {child}; wait' & {child}; wait",
                child = echo_pid("$!")
            ),
            "timeout": 1
        }),
    )
    .await;
    assert!(timed_out.details.timed_out);
    assert!(timed_out.is_error);
    let pids = pids_in(&timed_out.text());
    assert_eq!(pids.len(), 4, "{}", timed_out.text());
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
    let next = run(&tool, "pwd; echo $BEFORE").await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\n{}\n1\nexit code 0\n{}\n{RESTARTED}",
            root.join("sub").display(),
            cwd_line(&root.join("sub"))
        )
    );
}

#[tokio::test]
async fn timeout_of_a_loop_inside_the_shell_itself() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "x=kept").await;
    let timed_out = call(
        &tool,
        json!({"command": "trap '' TERM; while :; do :; done", "timeout": 1}),
    )
    .await;
    assert!(timed_out.details.timed_out);
    let next = run(&tool, "echo $x").await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\nkept\nexit code 0\n{}\n{RESTARTED}",
            cwd_line(&root)
        )
    );
}

/// bash reports a foreground command killed by a signal ("Terminated") on
/// the command's stderr when it reaps the command before handling its own
/// SIGTERM. The session stops its shell first, alone, so that the notice
/// is never written: the command, when its SIGTERM comes, finds itself
/// already handed to another parent, and the output is exactly what it
/// wrote.
#[tokio::test]
async fn a_timed_out_command_gets_its_signal_after_the_shell_is_gone() {
    let (dir, root) = workspace();
    // A grace far longer than the shell's exit takes, even on a loaded
    // machine: the command is signalled only once the shell is gone or
    // the grace has run out, and the test must see the first.
    let mut config = session_config(&root);
    config.local.kill_grace = Duration::from_secs(10);
    let session = Session::new(config).expect("session");
    let tool = session_tool(&session);
    let order = dir.path().join("order");
    let child = format!(
        r#"bash -c 'parent=$PPID; trap "read -r _ _ _ now _ </proc/\$\$/stat; if [ \$now = \$parent ]; then echo shell-alive; else echo shell-gone; fi >{order}; exit 143" TERM; sleep 300 & wait'"#,
        order = order.display()
    );
    for _ in 0..5 {
        let timed_out = call(
            &tool,
            json!({"command": format!("echo started; {child}"), "timeout": 1}),
        )
        .await;
        assert!(timed_out.details.timed_out);
        assert_eq!(
            timed_out
                .text()
                .lines()
                .take_while(|line| !line.starts_with('['))
                .collect::<Vec<_>>(),
            ["stdout:", "started"],
            "{}",
            timed_out.text()
        );
        assert_eq!(
            std::fs::read_to_string(&order).expect("the command's trap ran"),
            "shell-gone\n"
        );
        std::fs::remove_file(&order).expect("rm");
    }
}

#[tokio::test]
async fn cancel_stops_the_running_command() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "y=still").await;
    let context = cancel_when_output_contains("started");
    let result = tool
        .call_with(
            &json!({"command": format!(
                "{}; sleep 300 & {}; echo started; wait",
                echo_pid("$$"),
                echo_pid("$!")
            )}),
            context,
        )
        .await;
    assert!(result.details.cancelled);
    assert!(
        result
            .text()
            .contains("[command cancelled; its process tree was stopped]")
    );
    assert_eq!(
        killed_survivors(&pids_in(&result.text()), DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
    let next = run(&tool, "echo $y").await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\nstill\nexit code 0\n{}\n{RESTARTED}",
            cwd_line(&root)
        )
    );
}

#[tokio::test]
async fn marker_like_output_does_not_confuse_the_session() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    // Records on the control pipe look like `S <id> <status>\n...P<cwd>\0`.
    let tricky = run(
        &tool,
        "printf 'S 1 0\\nP/\\0R\\0\\n'; echo '__bt_post 0 2'; \
         { echo to-control >&3; } 2>/dev/null || echo 'fd 3 is closed'; echo after",
    )
    .await;
    // NULs are control characters: removed or shown, but never a record.
    assert_eq!(
        tricky.text().replace('\0', ""),
        format!(
            "stdout:\nS 1 0\nP/R\n__bt_post 0 2\nfd 3 is closed\nafter\nexit code 0\n{}",
            cwd_line(&root)
        )
    );
    let next = run(&tool, "echo fine").await;
    assert_eq!(
        next.text(),
        format!("stdout:\nfine\nexit code 0\n{}", cwd_line(&root))
    );
}

#[tokio::test]
async fn exec_and_descriptor_games_do_not_take_the_session_along() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "export Z=zed").await;
    let pid = session.shell_pid().await.expect("running");
    let closed = run(&tool, "exec >/dev/null 2>&1 0<&- 3>&-; echo hidden").await;
    assert_eq!(closed.details.exit_code, Some(0));
    let visible = run(&tool, "echo visible $Z").await;
    assert_eq!(
        visible.text(),
        format!("stdout:\nvisible zed\nexit code 0\n{}", cwd_line(&root))
    );
    assert_eq!(session.shell_pid().await, Some(pid));

    let replaced = run(&tool, "cd sub; exec sh -c 'echo replaced; exit 5'").await;
    assert_eq!(replaced.details.exit_code, Some(5));
    assert!(replaced.text().starts_with("stdout:\nreplaced\n"));
    let next = run(&tool, "echo $Z").await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\nzed\nexit code 0\n{}\n{RESTARTED}",
            cwd_line(&root)
        )
    );
}

#[tokio::test]
async fn a_command_that_reads_stdin_gets_eof() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let result = run(&tool, "cat; read -r line; echo \"read $?\"").await;
    assert_eq!(
        result.text(),
        format!("stdout:\nread 1\nexit code 0\n{}", cwd_line(&root))
    );
}

#[tokio::test]
async fn state_changed_by_a_user_function_survives_a_crash() {
    // `enter` holds no state word, so only the rule that a defined function
    // makes every later call snapshot keeps its `cd` and `export`.
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "enter() { cd sub; export ENTERED=yes; }").await;
    run(&tool, "enter").await;
    run(&tool, "true").await;
    let pid = session.shell_pid().await.expect("running");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    assert_eq!(
        killed_survivors(&[pid], DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
    let next = run(&tool, "pwd; echo $ENTERED").await;
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
async fn shell_killed_from_outside_restarts_with_cwd_and_env() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "cd sub; export SURVIVES=yes; unexported=also").await;
    // The shell saves its state right after reporting a status; the next
    // call starts only once that is done. (A kill within that fraction of a
    // millisecond would restore the state from before the last call.)
    run(&tool, "true").await;
    let pid = session.shell_pid().await.expect("running");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    assert_eq!(
        killed_survivors(&[pid], DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
    let next = run(&tool, "pwd; echo $SURVIVES $unexported").await;
    assert_eq!(
        next.text(),
        format!(
            "stdout:\n{}\nyes also\nexit code 0\n{}\n{RESTARTED}",
            root.join("sub").display(),
            cwd_line(&root.join("sub"))
        )
    );
    assert!(next.details.shell.expect("shell").restarted);
    assert_ne!(session.shell_pid().await, Some(pid));
}

#[tokio::test]
async fn two_sessions_are_isolated() {
    let (_dir, root) = workspace();
    let first = new_session(&root);
    let second = new_session(&root);
    let (one, two) = (session_tool(&first), session_tool(&second));
    let (a, b) = tokio::join!(
        run(&one, "cd sub; export WHO=first"),
        run(&two, "export WHO=second")
    );
    assert!(!a.is_error && !b.is_error);
    let (a, b) = tokio::join!(run(&one, "echo $WHO; pwd"), run(&two, "echo $WHO; pwd"));
    assert_eq!(
        a.text(),
        format!(
            "stdout:\nfirst\n{}\nexit code 0\n{}",
            root.join("sub").display(),
            cwd_line(&root.join("sub"))
        )
    );
    assert_eq!(
        b.text(),
        format!(
            "stdout:\nsecond\n{}\nexit code 0\n{}",
            root.display(),
            cwd_line(&root)
        )
    );
}

#[tokio::test]
async fn telemetry_line_shows_cwd_and_git_branch() {
    let (_dir, root) = workspace();
    let repo = root.join("repo");
    std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
    let session = new_session(&root);
    let tool = session_tool(&session);
    let result = run(&tool, "cd repo/src").await;
    assert_eq!(
        result.text(),
        format!(
            "(no output)\nexit code 0\n[cwd: {}/repo/src · git: main]",
            root.display()
        )
    );
    assert_eq!(
        result.details.shell.expect("shell").git_branch.as_deref(),
        Some("main")
    );

    let quiet = BashTool::new(
        ToolConfig {
            persistent_session: true,
            shell_telemetry: false,
            ..ToolConfig::default()
        },
        Arc::new(session.clone()),
    );
    assert_eq!(run(&quiet, "true").await.text(), "(no output)\nexit code 0");
}

#[tokio::test]
async fn working_directory_and_environment_apply_to_one_call() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let there = call(
        &tool,
        json!({"command": "pwd; echo $ONE; bash -c 'echo child $ONE'; kept=1", "working_directory": "sub", "environment": {"ONE": "1"}}),
    )
    .await;
    assert_eq!(
        there.text(),
        format!(
            "stdout:\n{}\n1\nchild 1\nexit code 0\n{}",
            root.join("sub").display(),
            cwd_line(&root)
        )
    );
    let back = run(&tool, "pwd; echo \"${ONE:-unset} $kept\"").await;
    assert_eq!(
        back.text(),
        format!(
            "stdout:\n{}\nunset 1\nexit code 0\n{}",
            root.display(),
            cwd_line(&root)
        )
    );
    let missing = call(
        &tool,
        json!({"command": "true", "working_directory": "nope"}),
    )
    .await;
    assert!(missing.is_error);
    assert_eq!(missing.details.field.as_deref(), Some("working_directory"));
}

#[tokio::test]
async fn leftover_background_processes_are_stopped_and_their_output_does_not_leak() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let result = run(
        &tool,
        &format!(
            "(while :; do echo tick; sleep 0.01; done) & {child}; sleep 300 >/dev/null 2>&1 & {child}",
            child = echo_pid("$!")
        ),
    )
    .await;
    let text = result.text();
    // Two jobs, plus the loop's `sleep 0.01` when it is caught mid-nap.
    assert!(
        text.contains(" leftover processes were stopped; servers belong in mode \"background\"]"),
        "{text}"
    );
    assert_eq!(
        killed_survivors(&pids_in(&text), DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
    let next = run(&tool, "echo clean").await;
    assert_eq!(
        next.text(),
        format!("stdout:\nclean\nexit code 0\n{}", cwd_line(&root))
    );
}

#[tokio::test]
async fn declarations_are_global_and_large_commands_run() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let big = format!(
        "declare -A map=([k]=v)\n: '{}'\necho big",
        "x".repeat(200 * 1024)
    );
    let result = run(&tool, &big).await;
    assert!(
        result.text().starts_with("stdout:\nbig\n"),
        "{}",
        result.text()
    );
    let next = run(&tool, "echo ${map[k]}").await;
    assert!(next.text().starts_with("stdout:\nv\n"));
}

#[tokio::test]
async fn state_persists_across_sessions_through_a_snapshot_path() {
    let (_dir, root) = workspace();
    let path = root.join("state/session.sh");
    let first = Session::with_snapshot_path(session_config(&root), &path).expect("session");
    let tool = session_tool(&first);
    run(&tool, "cd sub; export CARRIED=over; f() { echo func; }").await;
    first.shutdown().await.expect("shutdown");
    drop(first);
    let second = Session::with_snapshot_path(session_config(&root), &path).expect("session");
    let tool = session_tool(&second);
    let result = run(&tool, "pwd; echo $CARRIED; f").await;
    assert_eq!(
        result.text(),
        format!(
            "stdout:\n{}\nover\nfunc\nexit code 0\n{}",
            root.join("sub").display(),
            cwd_line(&root.join("sub"))
        )
    );
    assert!(!result.details.shell.expect("shell").restarted);
}

#[tokio::test]
async fn a_second_session_on_the_same_snapshot_path_waits_for_the_first() {
    let (_dir, root) = workspace();
    let path = root.join("state/session.sh");
    let first = Session::with_snapshot_path(session_config(&root), &path).expect("session");
    let first_tool = session_tool(&first);
    run(&first_tool, "x=1").await;
    // The second starts while the first holds the file: it may restore only
    // what the first saved, so its increment counts.
    let second = Session::with_snapshot_path(session_config(&root), &path).expect("session");
    let second_tool = session_tool(&second);
    let waiting = tokio::spawn(async move {
        let result = second_tool
            .call(json!({"command": "x=$((x+1)); echo $x"}))
            .await;
        (result, second)
    });
    run(&first_tool, "x=$((x+1))").await;
    first.shutdown().await.expect("shutdown");
    let (result, second) = waiting.await.expect("second call");
    assert_eq!(
        result.text(),
        format!("stdout:\n3\nexit code 0\n{}", cwd_line(&root))
    );
    second.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_session_whose_snapshot_path_stays_held_gives_up_at_its_timeout() {
    let (_dir, root) = workspace();
    let path = root.join("state/session.sh");
    let first = Session::with_snapshot_path(session_config(&root), &path).expect("session");
    run(&session_tool(&first), "true").await;
    let second = Session::with_snapshot_path(session_config(&root), &path).expect("session");
    let result = call(
        &session_tool(&second),
        json!({"command": "echo never", "timeout": 1}),
    )
    .await;
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        format!(
            "the session is in use by another bashtool process (lock {}.lock, held until that call ends); try again when it is done",
            path.display()
        )
    );
}

#[tokio::test]
async fn dropping_the_session_kills_its_shell() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    // A disowned job with its output elsewhere is not noticed when its call
    // ends (it is neither a job nor holding the output), but it does not
    // outlive the session.
    let started = run(
        &tool,
        &format!(
            "sleep 300 >/dev/null 2>&1 & {child}; disown; (sleep 300 >/dev/null 2>&1 & {child}); echo started",
            child = echo_pid("$!")
        ),
    )
    .await;
    let mut pids = pids_in(&started.text());
    assert_eq!(pids.len(), 2, "{}", started.text());
    let pid = session.shell_pid().await.expect("running");
    pids.push(pid);
    drop(tool);
    drop(session);
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn set_e_and_set_u_apply_to_their_own_call_only() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let strict = run(&tool, "set -euo pipefail; echo strict").await;
    assert!(!strict.is_error);
    let lenient = run(
        &tool,
        "false; echo \"${UNSET_FOR_TEST-}$UNSET_FOR_TEST\" and on; set -o | grep -w pipefail",
    )
    .await;
    assert_eq!(
        lenient.text(),
        format!(
            "stdout:\n and on\npipefail       \ton\nexit code 0\n{}",
            cwd_line(&root)
        )
    );
    // Within the call that sets it, `set -e` works as written, even when it
    // ends the shell; the state survives and errexit does not come back.
    let stopped = run(&tool, "export E=kept; set -e; false; echo unreachable").await;
    assert_eq!(stopped.details.exit_code, Some(1));
    assert!(!stopped.text().contains("unreachable"));
    let after = run(&tool, "false; echo $E; [[ $- == *e* ]] || echo no-errexit").await;
    assert_eq!(
        after.text(),
        format!(
            "stdout:\nkept\nno-errexit\nexit code 0\n{}\n{RESTARTED}",
            cwd_line(&root)
        )
    );
}

#[tokio::test]
async fn concurrent_calls_run_one_at_a_time_in_arrival_order() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let context = CallContext {
        cancel: CancellationToken::new(),
        on_output: Some(Arc::new(move |chunk: &OutputChunk| {
            if chunk.text.contains("started")
                && let Ok(mut sender) = started_tx.lock()
                && let Some(sender) = sender.take()
            {
                let _ = sender.send(());
            }
        })),
    };
    let first_tool = tool.clone();
    let first = tokio::spawn(async move {
        first_tool
            .call_with(
                &json!({"command": "echo started; sleep 0.3; export ORDER=first"}),
                context,
            )
            .await
    });
    started_rx.await.expect("first call started");
    let second = run(&tool, "echo ${ORDER:-not yet}").await;
    assert_eq!(
        second.text(),
        format!("stdout:\nfirst\nexit code 0\n{}", cwd_line(&root))
    );
    assert!(!first.await.expect("first call").is_error);
}

#[tokio::test]
async fn background_call_starts_with_the_session_state() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(
        &tool,
        "cd sub; export BG=yes; plain=too; f() { echo func; }",
    )
    .await;
    let started = call(
        &tool,
        json!({"command": "echo $BG $plain; pwd; f", "mode": "background"}),
    )
    .await;
    assert!(!started.is_error, "{}", started.text());
    let output_file = PathBuf::from(started.details.output_file.expect("output file"));
    let expected = format!("yes too\n{}\nfunc\n", root.join("sub").display());
    let mut text = String::new();
    let written = bashtool_tests::wait_until(Duration::from_secs(10), || {
        text = std::fs::read_to_string(&output_file).unwrap_or_default();
        text.contains(&expected)
    })
    .await;
    assert!(written, "{text}");
    // The session itself is unchanged and goes on.
    let next = run(&tool, "echo $BG").await;
    assert_eq!(
        next.text(),
        format!("stdout:\nyes\nexit code 0\n{}", cwd_line(&root.join("sub")))
    );
}

#[tokio::test]
async fn output_is_cleaned_like_a_stateless_call() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let result = run(
        &tool,
        "printf '\\033[31mred\\033[0m\\n'; printf 'caf\\303\\251\\n'",
    )
    .await;
    assert_eq!(
        result.text(),
        format!("stdout:\nred\ncafé\nexit code 0\n{}", cwd_line(&root))
    );
}

#[tokio::test]
async fn dropping_a_call_stops_its_command_and_the_session_goes_on() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    run(&tool, "export KEPT=1").await;
    let pid_file = root.join("pid");
    let command = format!(
        "sleep 300 & echo {} > {}; wait",
        qualified_pid("$!"),
        pid_file.display()
    );
    let abandoned = tokio::time::timeout(Duration::from_secs(1), run(&tool, &command)).await;
    assert!(abandoned.is_err(), "the call should still be running");
    let pid = read_pids(&pid_file, 1).await[0];
    assert_eq!(
        killed_survivors(&[pid], DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
    let next = run(&tool, "echo $KEPT").await;
    assert_eq!(
        next.text(),
        format!("stdout:\n1\nexit code 0\n{}\n{RESTARTED}", cwd_line(&root))
    );
}

/// The session's shell runs in the default sandbox (workspace-write), so
/// both what it writes itself (a redirection) and what its commands and
/// background jobs write outside the workspace are refused; inside, both
/// work. Decided from outside: which files exist afterwards.
#[tokio::test]
async fn the_shell_its_commands_and_its_jobs_are_sandboxed() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    let outside = |what: &str| {
        PathBuf::from(format!(
            "/etc/bashtool-session-{what}-{}",
            std::process::id()
        ))
    };
    let (by_shell, by_command, by_job) = (outside("shell"), outside("command"), outside("job"));
    let result = run(
        &tool,
        &format!(
            "echo x > {} ; touch {} ; echo x > inside-by-shell; touch inside-by-command; \
             grep Seccomp: /proc/$$/status",
            by_shell.display(),
            by_command.display()
        ),
    )
    .await;
    let job = call(
        &tool,
        json!({"command": format!("touch {} ; touch inside-by-job", by_job.display()), "mode": "background"}),
    )
    .await;
    assert!(!job.is_error, "{}", job.text());
    let job_done = bashtool_tests::wait_until(Duration::from_secs(10), || {
        root.join("inside-by-job").exists()
    })
    .await;
    let escaped: Vec<_> = [&by_shell, &by_command, &by_job]
        .into_iter()
        .filter(|path| path.exists())
        .collect();
    for path in &escaped {
        let _ = std::fs::remove_file(path);
    }
    assert!(escaped.is_empty(), "written outside: {escaped:?}");
    assert!(job_done, "the background job did not run");
    assert!(root.join("inside-by-shell").exists(), "{}", result.text());
    assert!(root.join("inside-by-command").exists(), "{}", result.text());
    // The shell itself is filtered (2: a seccomp filter), not only its children.
    assert!(result.text().contains("Seccomp:\t2"), "{}", result.text());
}

#[tokio::test]
async fn output_beyond_the_pipe_buffer_on_both_streams_arrives_whole_call_after_call() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let tool = session_tool(&session);
    // 333 000 bytes on each stream, five times a pipe's buffer, written in
    // turns: the shell blocks on whichever stream we have not read yet.
    // Three calls: the second and third reuse the first call's FIFOs.
    let command = "for i in $(seq 3000); do printf 'out %05d %0100d\\n' $i 0; \
                   printf 'err %05d %0100d\\n' $i 0 >&2; done";
    for _ in 0..3 {
        let result = run(&tool, command).await;
        assert_eq!(result.details.exit_code, Some(0), "{}", result.text());
        assert_eq!(result.details.total_bytes, 2 * 3000 * 111);
        assert_eq!(result.details.total_lines, 2 * 3000);
        // Every line of each stream, in its own order (the log has both).
        let log = std::fs::read_to_string(result.details.log_file.expect("logged"))
            .expect("log readable");
        for stream in ["out", "err"] {
            let lines: Vec<&str> = log
                .lines()
                .filter(|line| line.starts_with(stream))
                .collect();
            let expected: Vec<String> = (1..=3000)
                .map(|i| format!("{stream} {i:05} {:0100}", 0))
                .collect();
            assert_eq!(lines, expected, "{stream}");
        }
    }
}
