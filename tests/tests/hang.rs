//! Never hangs: the call returns soon after the command's main process
//! exits, whatever its leftovers do with the output pipes.

use std::sync::Arc;

use bashtool_core::{BashTool, Stream, ToolConfig};
use bashtool_tests::{
    DEATH_LIMIT, echo_pid, kill_all, killed_survivors, local_exec, pid_alive, pids_in, run,
    temp_dir, text,
};

#[tokio::test]
async fn leftovers_are_stopped_and_counted() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    // `$!` is known to the parent at once: no race with the children.
    let script = format!("for i in 1 2 3; do sleep 300 & {}; done", echo_pid("$!"));
    let result = run(&exec, &script).await;
    assert!(!result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 3);
    assert!(
        result.notes[0].starts_with("3 leftover processes"),
        "{:?}",
        result.notes
    );
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn leftovers_that_ignore_sigterm_are_killed_after_the_grace() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    // The child says it ignores SIGTERM (through a FIFO) before the
    // command exits: the handshake, instead of a sleep.
    let script = format!(
        "mkfifo ready; sh -c 'trap \"\" TERM; echo > ready; while :; do sleep 1; done' & {}; read _ < ready",
        echo_pid("$!")
    );
    let result = run(&exec, &script).await;
    assert!(!result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 1);
    // SIGKILL follows after the grace (1 s in tests), without the call.
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn an_escapee_holding_the_pipe_does_not_hold_the_call() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(
        &exec,
        &format!("setsid sleep 300 & {}; echo done", echo_pid("$!")),
    )
    .await;
    assert!(!result.timed_out);
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 1);
    // After a normal exit, a setsid'd process is a deliberate daemon: it
    // is left running (and no longer holds our pipe).
    assert!(pid_alive(pids[0]));
    kill_all(&pids);
}

#[tokio::test]
async fn reading_stdin_returns_at_once() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(&exec, "cat").await;
    assert!(!result.timed_out);
    assert_eq!(result.exit_code, Some(0));
}

#[tokio::test]
async fn the_model_is_told_about_leftovers() {
    let dir = temp_dir();
    let tool = BashTool::new(ToolConfig::default(), Arc::new(local_exec(dir.path())));
    let result = tool
        .call(serde_json::json!({"command": "sleep 30 & echo started"}))
        .await;
    assert_eq!(
        result.text(),
        "stdout:\nstarted\n[1 leftover process still running after the command exited was stopped; run servers and watchers with mode \"background\"]\nexit code 0"
    );
}

#[tokio::test]
async fn an_editor_run_directly_fails_at_once_with_advice() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    // Whether or not the editors are installed: the stand-ins come first
    // in PATH, for every program the command starts (bash, dash, xargs).
    let result = run(
        &exec,
        "vim notes.txt; echo \"vim $?\"; bash -c 'nano x'; echo \"nano $?\"; \
         sh -c 'emacs y'; echo \"emacs $?\"; echo z | xargs vi; echo \"vi $?\"; \
         command nvim; echo \"nvim $?\"",
    )
    .await;
    let output = text(&result);
    for status in ["vim 1", "nano 1", "emacs 1", "vi 123", "nvim 1"] {
        assert!(output.contains(status), "{status}: {output}");
    }
    assert!(
        output.contains(
            "vim: an interactive editor cannot run here (no terminal, stdin is empty); edit files with sed -i, or write them with a heredoc: cat <<'EOF' > file"
        ),
        "{output}"
    );
}

#[tokio::test]
async fn an_editor_with_a_batch_flag_reaches_the_real_one_later_in_path() {
    let dir = temp_dir();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let fake = bin.join("nano");
    std::fs::write(&fake, "#!/bin/sh\necho \"real nano $*\"\n").expect("fake nano");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let exec = local_exec(dir.path());
    let result = run(
        &exec,
        "PATH=$PATH:$PWD/bin; nano --version; nano notes; echo \"status $?\"; \
         PATH=${PATH%%:*}; nano --version; echo \"status $?\"",
    )
    .await;
    // Each stream in its own order: which of two pipes is read first is
    // not the command's order (the contract's interleaving test handshakes
    // for that).
    let stream = |wanted: Stream| -> Vec<String> {
        result
            .output
            .retained()
            .0
            .iter()
            .filter(|line| line.stream == wanted)
            .map(|line| line.text.clone())
            .collect()
    };
    assert_eq!(
        stream(Stream::Stdout),
        ["real nano --version", "status 1", "status 127"]
    );
    assert_eq!(
        stream(Stream::Stderr),
        [
            "nano: an interactive editor cannot run here (no terminal, stdin is empty); \
             edit files with sed -i, or write them with a heredoc: cat <<'EOF' > file",
            "nano: command not found"
        ]
    );
}
