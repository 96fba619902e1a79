//! Running commands beyond the contract suite (which covers exit codes,
//! signals and stream order in every environment): the environment, the
//! directories, stdin, the terminal, long scripts, errors.

use std::time::{Duration, Instant};

use bashtool_core::{CommandExec, ExecError, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec};
use bashtool_tests::{local_exec, run, run_with, temp_dir, test_config, text};
use nix::sys::signal::Signal;

#[tokio::test]
async fn runs_in_the_working_directory_and_resolves_relative_ones() {
    let dir = temp_dir();
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let exec = local_exec(dir.path());
    let result = run(&exec, "pwd").await;
    assert_eq!(text(&result), dir.path().display().to_string());
    let result = run_with(&exec, "pwd", SpawnOptions::default().current_dir("sub"))
        .await
        .expect("runs");
    assert_eq!(text(&result), dir.path().join("sub").display().to_string());
    assert_eq!(result.working_directory, Some(dir.path().join("sub")));
}

#[tokio::test]
async fn adds_environment_variables_and_the_non_interactive_defaults() {
    let dir = temp_dir();
    let mut config = test_config(dir.path());
    config.env.insert("FROM_CONFIG".to_owned(), "c".to_owned());
    config.env.insert("PAGER".to_owned(), "less".to_owned());
    let exec = LocalExec::new(config);
    let options = SpawnOptions::default()
        .env("FROM_CALL", "x y")
        .env("FROM_CONFIG", "overridden");
    let result = run_with(
        &exec,
        "echo \"$FROM_CALL|$FROM_CONFIG|$PAGER|$GIT_PAGER|$TERM|$NO_COLOR|$GIT_TERMINAL_PROMPT|$DEBIAN_FRONTEND\"",
        options,
    )
    .await
    .expect("runs");
    assert_eq!(
        text(&result),
        "x y|overridden|less|cat|dumb|1|0|noninteractive"
    );
}

#[tokio::test]
async fn non_interactive_defaults_can_be_switched_off() {
    let dir = temp_dir();
    let config = LocalConfig {
        non_interactive: false,
        ..test_config(dir.path())
    };
    let exec = LocalExec::new(config);
    let result = run(&exec, "echo \"[${GIT_TERMINAL_PROMPT-unset}]\"").await;
    assert_eq!(text(&result), "[unset]");
}

#[tokio::test]
async fn stdin_is_empty_so_readers_return_at_once() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let started = Instant::now();
    let result = run(&exec, "cat; read line; echo \"read: $? [$line]\"").await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(text(&result), "read: 1 []");
}

#[tokio::test]
async fn has_no_controlling_terminal() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let result = run(
        &exec,
        "(exec 3</dev/tty) 2>/dev/null && echo has-tty || echo no-tty",
    )
    .await;
    assert_eq!(text(&result), "no-tty");
}

#[tokio::test]
async fn git_commit_without_a_message_fails_fast_with_a_hint() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let setup = run(
        &exec,
        "git init -q repo && cd repo && git config user.email t@example.com && git config user.name t && echo a > a && git add a",
    )
    .await;
    assert_eq!(setup.exit_code, Some(0), "{}", text(&setup));
    let started = Instant::now();
    let result = run_with(
        &exec,
        "git commit",
        SpawnOptions::default()
            .current_dir("repo")
            .timeout(Duration::from_secs(20)),
    )
    .await
    .expect("runs");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_ne!(result.exit_code, Some(0));
    assert!(!result.timed_out);
    let output = text(&result);
    assert!(
        output.contains("no interactive editor is available to bashtool")
            && output.contains("git commit -m"),
        "{output}"
    );
}

#[tokio::test]
async fn runs_scripts_longer_than_one_argument_may_be() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let mut script = String::from("count=0\n");
    while script.len() < 200 * 1024 {
        script.push_str("count=$((count + 1)) # padding padding padding padding padding\n");
    }
    script.push_str("echo \"lines: $count\"; false");
    let result = run(&exec, &script).await;
    assert_eq!(result.exit_code, Some(1));
    assert!(text(&result).starts_with("lines: "), "{}", text(&result));
}

#[tokio::test]
async fn a_missing_directory_is_a_clear_error() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let error = run_with(&exec, "true", SpawnOptions::default().current_dir("nope"))
        .await
        .expect_err("no such directory");
    assert!(
        matches!(&error, ExecError::MissingDirectory { path } if path == &dir.path().join("nope"))
    );
    std::fs::write(dir.path().join("file"), "").expect("write");
    let error = run_with(&exec, "true", SpawnOptions::default().current_dir("file"))
        .await
        .expect_err("not a directory");
    assert!(matches!(error, ExecError::NotADirectory { .. }));
}

#[tokio::test]
async fn a_missing_shell_is_a_clear_error() {
    let dir = temp_dir();
    let exec = LocalExec::new(LocalConfig {
        shell: "/no/such/shell".into(),
        ..test_config(dir.path())
    });
    let error = exec
        .spawn("true", SpawnOptions::default())
        .await
        .expect_err("no shell");
    assert!(matches!(&error, ExecError::ShellNotFound { program } if program == "/no/such/shell"));
    assert_eq!(
        error.to_string(),
        "shell `/no/such/shell` was not found; install it or configure another shell"
    );
    // A bare name is looked up in PATH, by us or by the child.
    let exec = LocalExec::new(LocalConfig {
        shell: "no-such-shell-for-bashtool".into(),
        ..test_config(dir.path())
    });
    let error = exec
        .spawn("true", SpawnOptions::default())
        .await
        .expect_err("no shell");
    assert!(
        matches!(&error, ExecError::ShellNotFound { program } if program == "no-such-shell-for-bashtool"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_failed_spawn_is_a_clear_error() {
    let dir = temp_dir();
    let not_executable = dir.path().join("shell");
    std::fs::write(&not_executable, "").expect("write");
    let exec = LocalExec::new(LocalConfig {
        shell: not_executable.clone(),
        ..test_config(dir.path())
    });
    let error = exec
        .spawn("true", SpawnOptions::default())
        .await
        .expect_err("cannot run");
    assert!(matches!(error, ExecError::Spawn { .. }), "{error:?}");
}

/// The `SigBlk`/`SigIgn`-style mask named `field` in a `/proc/.../status` text.
fn signal_mask(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

/// `status` (a command's `/proc/self/status`) shows no blocked signal and
/// none of the signals a command is stopped with ignored.
fn assert_starts_with_default_signals(status: &str) {
    assert_eq!(signal_mask(status, "SigBlk:"), 0, "{status}");
    let ignored = signal_mask(status, "SigIgn:");
    for signal in [
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGPIPE,
        Signal::SIGTERM,
    ] {
        let bit = 1_u64 << (signal as i32 - 1);
        assert_eq!(ignored & bit, 0, "{signal} ignored: {status}");
    }
}

/// A sandboxed command starts in a child that shares our memory until it
/// execs (`clone(CLONE_VM | CLONE_VFORK)`): the sandbox's steps still ran
/// in it (a write outside the workspace is refused), the command gets no
/// blocked signal and the default action of the signals it is stopped
/// with, and our own thread's signal mask is as it was.
#[tokio::test(flavor = "current_thread")]
async fn a_sandboxed_command_is_contained_and_starts_with_default_signals() {
    let dir = temp_dir();
    let exec = local_exec(dir.path());
    let own_status = || std::fs::read_to_string("/proc/thread-self/status").expect("status");
    let blocked_before = signal_mask(&own_status(), "SigBlk:");
    let outside = format!("/etc/bashtool-clone-test-{}", std::process::id());
    let result = run(
        &exec,
        &format!(
            "cat /proc/self/status; touch {outside} 2>/dev/null && echo wrote || echo refused"
        ),
    )
    .await;
    let written = std::path::Path::new(&outside).exists();
    let _ = std::fs::remove_file(&outside);
    assert!(!written, "the sandbox let the command write {outside}");
    let output = text(&result);
    assert!(output.ends_with("refused"), "{output}");
    assert_starts_with_default_signals(&output);
    assert_eq!(signal_mask(&own_status(), "SigBlk:"), blocked_before);
}

/// Without a sandbox the command starts in the same kind of child (made
/// with `clone3(CLONE_CLEAR_SIGHAND)` where the kernel has it, else by
/// `posix_spawn`): no blocked signal, the default action of the signals it
/// is stopped with (Rust's runtime ignores SIGPIPE), and a signal the host
/// ignores for its own reasons stays ignored, as across `fork` and exec.
#[tokio::test(flavor = "current_thread")]
async fn an_unsandboxed_command_starts_with_default_signals_and_keeps_ignored_ones() {
    // SAFETY: SIG_IGN installs no handler; nothing in this test binary
    // uses SIGUSR2.
    #[allow(unsafe_code)]
    unsafe {
        nix::sys::signal::signal(Signal::SIGUSR2, nix::sys::signal::SigHandler::SigIgn)
            .expect("ignore SIGUSR2");
    }
    let dir = temp_dir();
    let exec = LocalExec::new(LocalConfig {
        confinement: None,
        ..test_config(dir.path())
    });
    let own_status = || std::fs::read_to_string("/proc/thread-self/status").expect("status");
    let blocked_before = signal_mask(&own_status(), "SigBlk:");
    let output = text(&run(&exec, "cat /proc/self/status").await);
    assert_starts_with_default_signals(&output);
    let usr2 = 1_u64 << (Signal::SIGUSR2 as i32 - 1);
    assert_eq!(
        signal_mask(&output, "SigIgn:") & usr2,
        usr2,
        "SIGUSR2 no longer ignored: {output}"
    );
    assert_eq!(signal_mask(&own_status(), "SigBlk:"), blocked_before);
}

/// The sandbox's steps in the child use descriptors it prepared (its
/// namespaces, its Landlock ruleset), opened early, at low numbers. A
/// launch whose extra descriptors take those numbers (a warm shell's
/// command pipe at 3) must still be sandboxed: the steps run before the
/// descriptors are put in place. Here every number from 3 to 96 is taken.
#[tokio::test]
async fn a_sandboxed_launch_whose_descriptors_take_low_numbers_is_still_sandboxed() {
    use std::os::fd::OwnedFd;
    let dir = temp_dir();
    let sandbox = bashtool_sandbox::Sandbox::new(
        &bashtool_sandbox::SandboxConfig::default(),
        dir.path(),
        None,
    )
    .expect("sandbox");
    let wrappers = [sandbox as std::sync::Arc<dyn bashtool_process::Wrapper>];
    let (read_end, write_end) = nix::unistd::pipe().expect("pipe");
    drop(write_end);
    let extra: Vec<(OwnedFd, i32)> = (3..=96)
        .map(|target| (read_end.try_clone().expect("dup"), target))
        .collect();
    let outside = format!("/etc/bashtool-low-fd-test-{}", std::process::id());
    let spawned = bashtool_process::launch(
        bashtool_process::Launch {
            argv: vec![
                "bash".into(),
                "-c".into(),
                format!("touch {outside} 2>/dev/null && echo wrote || echo refused").into(),
            ],
            env: std::env::vars_os().collect(),
            cwd: dir.path().to_path_buf(),
        },
        &wrappers,
        bashtool_process::ChildIo {
            stdin_pipe: false,
            stdout: bashtool_process::Sink::Pipe,
            stderr: bashtool_process::Sink::Null,
            extra,
            terminal: None,
        },
        None,
    )
    .expect("the sandboxed launch starts");
    let mut stdout = spawned.stdout.expect("stdout");
    let mut output = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut output)
        .await
        .expect("read");
    spawned.root.exited().await;
    let written = std::path::Path::new(&outside).exists();
    let _ = std::fs::remove_file(&outside);
    assert!(!written, "the command wrote {outside}");
    assert_eq!(output, "refused\n");
}
