//! The attacks of the sandbox's escape review, each performed by a real
//! sandboxed command through the library (`LocalExec`, `Session`), and
//! judged from outside: by the test's own `/proc` reads, by files, by a
//! `git` run on the host the way the user's next command would.
//! `cli/tests/escapes.rs` has the attacks across processes and transports.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bashtool_core::{CommandExec as _, CommandResult, SpawnOptions};
use bashtool_env_local::{LocalConfig, LocalExec};
use bashtool_tests::{killed_survivors, new_session, pids_in, text, workspace};

/// A sandboxed environment (the default sandbox) working in `dir`.
fn sandboxed(dir: &Path) -> LocalExec {
    LocalExec::new(LocalConfig {
        working_directory: dir.to_path_buf(),
        log_dir: Some(dir.join(".logs")),
        kill_grace: Duration::from_millis(500),
        ..LocalConfig::default()
    })
}

async fn run(exec: &impl bashtool_core::CommandExec, command: &str) -> CommandResult {
    exec.spawn(
        command,
        SpawnOptions::default().timeout(Duration::from_secs(30)),
    )
    .await
    .expect("the command starts")
}

/// `git` on the host, as the user's next command in `dir`, with a
/// configuration of its own only (no global one).
fn host_git(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git runs")
}

/// A repository with one commit at `dir`, made on the host.
fn repository(dir: &Path) {
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["commit", "-q", "--allow-empty", "-m", "first"][..],
    ] {
        let output = host_git(dir, args);
        assert!(output.status.success(), "{output:?}");
    }
}

/// The file a payload creates when it runs; the test's own directory,
/// outside the workspace.
fn payload_marker() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = dir.path().join("payload-ran");
    (dir, marker)
}

/// After the attack, the user's `git status` and `git commit` on the host
/// must not run the payload.
fn assert_host_git_runs_no_payload(dir: &Path, marker: &Path, attack: &str) {
    host_git(dir, &["status"]);
    host_git(dir, &["commit", "-q", "--allow-empty", "-m", "after"]);
    host_git(dir, &["submodule", "status"]);
    assert!(
        !marker.exists(),
        "{attack}: a git command outside the sandbox ran the payload"
    );
}

/// A config that runs the payload through fsmonitor and a hooks path.
fn evil_config(marker: &Path) -> String {
    format!(
        "[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {m}\\n\\thooksPath = /tmp/bashtool-evil-hooks\\n",
        m = marker.display()
    )
}

#[tokio::test]
async fn a_commondir_pointing_at_an_evil_config_is_moved_aside() {
    let (_dir, root) = workspace();
    repository(&root);
    let (_marker_dir, marker) = payload_marker();
    let exec = sandboxed(&root);
    let evil = tempfile::tempdir_in("/tmp").expect("temp dir");
    let result = run(
        &exec,
        &format!(
            "cp -r .git/objects .git/refs .git/HEAD {evil}/ && printf '{config}' > {evil}/config && echo {evil} > .git/commondir",
            evil = evil.path().display(),
            config = evil_config(&marker)
        ),
    )
    .await;
    assert_eq!(result.exit_code, Some(0), "{}", text(&result));
    assert!(!root.join(".git/commondir").exists());
    assert!(root.join(".git/commondir.bashtool-quarantine").exists());
    assert!(
        result
            .notes
            .iter()
            .any(|note| note.contains(".git/commondir") && note.contains("moved it to")),
        "{:?}",
        result.notes
    );
    assert_host_git_runs_no_payload(&root, &marker, "commondir");
}

#[tokio::test]
async fn a_linked_worktree_cannot_be_pointed_elsewhere() {
    let (_dir, root) = workspace();
    repository(&root);
    let added = host_git(&root, &["worktree", "add", "-q", "linked"]);
    assert!(added.status.success(), "{added:?}");
    let (_marker_dir, marker) = payload_marker();
    let evil = tempfile::tempdir_in("/tmp").expect("temp dir");
    std::fs::write(evil.path().join("HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    std::fs::write(evil.path().join("config"), evil_config(&marker)).expect("config");
    let exec = sandboxed(&root);
    // The existing worktree's `.git` file is read-only; one the command
    // adds and points elsewhere is moved aside.
    let result = run(
        &exec,
        &format!(
            "echo 'gitdir: {evil}' > linked/.git; git worktree add -q second && echo 'gitdir: {evil}' > second/.git",
            evil = evil.path().display()
        ),
    )
    .await;
    let output = text(&result);
    assert!(
        std::fs::read_to_string(root.join("linked/.git"))
            .expect("gitfile")
            .starts_with("gitdir: "),
        "{output}"
    );
    assert!(
        !std::fs::read_to_string(root.join("linked/.git"))
            .expect("gitfile")
            .contains(&evil.path().display().to_string()),
        "{output}"
    );
    assert!(!root.join("second/.git").exists(), "{output}");
    assert!(
        result
            .notes
            .iter()
            .any(|note| note.contains("second/.git") && note.contains("outside the workspace")),
        "{:?}",
        result.notes
    );
    for checkout in ["linked", "second"] {
        assert_host_git_runs_no_payload(&root.join(checkout), &marker, checkout);
    }
}

#[tokio::test]
async fn a_nested_repository_registered_as_a_submodule_loses_its_evil_config() {
    let (_dir, root) = workspace();
    repository(&root);
    let (_marker_dir, marker) = payload_marker();
    let exec = sandboxed(&root);
    let result = run(
        &exec,
        &format!(
            "git init -q -b main sub && git -C sub commit -q --allow-empty -m x && \
             git -C sub config core.fsmonitor 'touch {m}' && \
             printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n' > .gitmodules && \
             git add .gitmodules sub",
            m = marker.display()
        ),
    )
    .await;
    let output = text(&result);
    assert!(
        result
            .notes
            .iter()
            .any(|note| note.contains("sub/.git/config") && note.contains("core.fsmonitor")),
        "{output}: {:?}",
        result.notes
    );
    assert_host_git_runs_no_payload(&root, &marker, "nested repository");
    assert_host_git_runs_no_payload(&root.join("sub"), &marker, "inside the nested repository");
}

#[tokio::test]
async fn a_submodules_config_and_hooks_stay_read_only() {
    let (_dir, root) = workspace();
    let library = root.join("library");
    let project = root.join("project");
    for dir in [&library, &project] {
        std::fs::create_dir(dir).expect("dir");
        repository(dir);
    }
    let added = host_git(
        &project,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            library.to_str().expect("utf-8"),
            "vendor/lib",
        ],
    );
    assert!(added.status.success(), "{added:?}");
    let (_marker_dir, marker) = payload_marker();
    let exec = sandboxed(&project);
    let module = project.join(".git/modules/vendor/lib");
    let result = run(
        &exec,
        &format!(
            "git -C vendor/lib config core.fsmonitor 'touch {m}'; \
             printf '#!/bin/sh\\ntouch {m}\\n' > .git/modules/vendor/lib/hooks/post-checkout; \
             echo 'gitdir: /tmp' > vendor/lib/.git",
            m = marker.display()
        ),
    )
    .await;
    let output = text(&result);
    let config = std::fs::read_to_string(module.join("config")).expect("config");
    assert!(!config.contains("fsmonitor"), "{output}");
    assert!(!module.join("hooks/post-checkout").exists(), "{output}");
    assert!(
        std::fs::read_to_string(project.join("vendor/lib/.git"))
            .expect("gitfile")
            .contains("modules/vendor/lib"),
        "{output}"
    );
    host_git(&project, &["submodule", "update"]);
    assert_host_git_runs_no_payload(&project, &marker, "submodule");
}

#[tokio::test]
async fn a_repository_made_in_a_session_is_protected_from_the_next_call_on() {
    let (_dir, root) = workspace();
    let session = new_session(&root);
    let (_marker_dir, marker) = payload_marker();
    // The same call that makes the repository plants a hook: moved aside.
    let first = run(
        &session,
        &format!(
            "git init -q -b main . && printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
            m = marker.display()
        ),
    )
    .await;
    assert!(
        first
            .notes
            .iter()
            .any(|note| note.contains(".git/hooks/pre-commit") && note.contains("moved it to")),
        "{}: {:?}",
        text(&first),
        first.notes
    );
    // A later call finds them read-only.
    let later = run(
        &session,
        &format!(
            "printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/pre-commit; git config core.fsmonitor 'touch {m}'; echo done",
            m = marker.display()
        ),
    )
    .await;
    let output = text(&later);
    assert!(output.contains("done"), "{output}");
    assert!(!root.join(".git/hooks/pre-commit").exists(), "{output}");
    let config = std::fs::read_to_string(root.join(".git/config")).expect("config");
    assert!(!config.contains("fsmonitor"), "{output}");
    assert_host_git_runs_no_payload(&root, &marker, "session");
    session.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn bashtool_and_other_processes_are_invisible() {
    let (_dir, root) = workspace();
    let exec = sandboxed(&root);
    let outside = std::process::Command::new("sleep")
        .arg("60")
        .env("BASHTOOL_TEST_SECRET", "outside-secret-value")
        .spawn()
        .expect("sleep");
    let result = run(
        &exec,
        &format!(
            "tr '\\0' '\\n' < /proc/$PPID/environ; cat /proc/{pid}/environ; cat /proc/{server}/maps | head -1; \
             ls /proc | grep -c '^[0-9]'",
            pid = outside.id(),
            server = std::process::id()
        ),
    )
    .await;
    let output = text(&result);
    let mut outside = outside;
    let _ = outside.kill();
    let _ = outside.wait();
    assert!(!output.contains("outside-secret-value"), "{output}");
    assert!(
        !output.contains("CARGO"),
        "the server's environment leaked: {output}"
    );
    // Only the sandbox's init and the command's own processes are listed.
    let count: usize = output
        .lines()
        .rev()
        .find_map(|line| line.trim().parse().ok())
        .expect("a count");
    assert!(count <= 6, "{count} processes visible: {output}");
}

#[tokio::test]
async fn a_setsid_double_fork_with_a_cleared_environment_dies_with_the_timeout() {
    let (_dir, root) = workspace();
    let exec = sandboxed(&root);
    let script = format!(
        "setsid -f env -i sh -c '{}; exec sleep 1004'; setsid -f bash -c 'exec -c sh -c \"{}; exec sleep 1006\"'; sleep 300",
        bashtool_tests::echo_pid("$$"),
        bashtool_tests::echo_pid("$$").replace('"', "\\\"")
    );
    let result = exec
        .spawn(
            &script,
            SpawnOptions::default().timeout(Duration::from_secs(2)),
        )
        .await
        .expect("starts");
    assert!(result.timed_out, "{}", text(&result));
    let pids = pids_in(&text(&result));
    assert_eq!(pids.len(), 2, "{}", text(&result));
    assert_eq!(
        killed_survivors(&pids, Duration::from_secs(5)).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn sysv_shared_memory_of_the_host_is_out_of_reach() {
    let (_dir, root) = workspace();
    let made = std::process::Command::new("ipcmk")
        .args(["-M", "4096"])
        .output()
        .expect("ipcmk");
    let id: i32 = String::from_utf8_lossy(&made.stdout)
        .split_whitespace()
        .last()
        .and_then(|id| id.parse().ok())
        .expect("a shared memory id");
    let exec = sandboxed(&root);
    let result = run(
        &exec,
        &format!(
            "ipcs -m | grep -c ' {id} '; python3 -c 'import ctypes; libc = ctypes.CDLL(None); libc.shmat.restype = ctypes.c_void_p; print(libc.shmat({id}, None, 0))'"
        ),
    )
    .await;
    let _ = std::process::Command::new("ipcrm")
        .args(["-m", &id.to_string()])
        .status();
    let output = text(&result);
    let lines: Vec<&str> = output.lines().collect();
    assert!(
        lines.contains(&"0"),
        "the host's segment is listed: {output}"
    );
    // shmat returns (void *) -1 when the id names no segment here.
    assert!(
        lines.contains(&"18446744073709551615"),
        "the host's segment was attached: {output}"
    );
}

#[tokio::test]
async fn packet_sockets_and_system_wide_perf_events_are_refused() {
    let (_dir, root) = workspace();
    let exec = sandboxed(&root);
    let result = run(
        &exec,
        "python3 -c '
import socket, ctypes
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)); print(\"packet: opened\")
except OSError as error:
    print(\"packet:\", error.errno)
libc = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_uint32 * 32)()
attr[0] = 1  # PERF_TYPE_SOFTWARE
attr[1] = 128
fd = libc.syscall(298, attr, -1, 0, -1, 0)  # perf_event_open(pid=-1, cpu=0): system wide
print(\"perf:\", fd if fd >= 0 else -ctypes.get_errno())
'",
    )
    .await;
    let output = text(&result);
    let lines: Vec<&str> = output.lines().collect();
    // EPERM: no CAP_NET_RAW.
    assert!(lines.contains(&"packet: 1"), "{output}");
    // EACCES or EPERM: no CAP_PERFMON for events of every process.
    assert!(
        lines.contains(&"perf: -1") || lines.contains(&"perf: -13"),
        "{output}"
    );
}

#[tokio::test]
async fn another_terminal_cannot_be_read() {
    let (_dir, root) = workspace();
    // A terminal of the host, as a person's shell would have.
    let master = nix::pty::posix_openpt(nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_NOCTTY)
        .expect("openpt");
    nix::pty::grantpt(&master).expect("grant");
    nix::pty::unlockpt(&master).expect("unlock");
    let name = nix::pty::ptsname_r(&master).expect("ptsname");
    let exec = sandboxed(&root);
    let result = run(
        &exec,
        &format!("ls /dev/pts; timeout 2 cat {name}; echo secret > {name}; echo end"),
    )
    .await;
    let output = text(&result);
    assert!(output.contains("end"), "{output}");
    let number = name.trim_start_matches("/dev/pts/");
    assert!(
        !output.lines().any(|line| line.trim() == number),
        "the host's terminal is listed: {output}"
    );
    // Nothing reached the host's terminal.
    nix::fcntl::fcntl(
        &master,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .expect("nonblocking");
    let mut buffer = [0u8; 64];
    let read = nix::unistd::read(&master, &mut buffer);
    assert!(
        matches!(read, Err(nix::errno::Errno::EAGAIN)),
        "the command wrote to the host's terminal: {read:?}"
    );
}

#[tokio::test]
async fn read_only_with_the_workspace_in_tmp_writes_nothing_of_it() {
    let (_dir, root) = workspace();
    repository(&root);
    let exec = LocalExec::new(LocalConfig {
        working_directory: root.clone(),
        log_dir: Some(root.join(".logs")),
        confinement: bashtool_sandbox::SandboxConfig {
            mode: bashtool_sandbox::SandboxMode::ReadOnly,
            ..bashtool_sandbox::SandboxConfig::default()
        }
        .confinement(),
        ..LocalConfig::default()
    });
    assert!(root.starts_with("/tmp"), "the workspace lies in /tmp");
    let result = run(
        &exec,
        "echo x > file; echo x >> .git/config; mkdir .git/hooks/x; ls -A /tmp | wc -l; echo $TMPDIR",
    )
    .await;
    let output = text(&result);
    assert!(!root.join("file").exists(), "{output}");
    assert!(!root.join(".git/hooks/x").exists(), "{output}");
    assert!(
        !std::fs::read_to_string(root.join(".git/config"))
            .expect("config")
            .ends_with("x\n"),
        "{output}"
    );
    // A private /tmp: only the workspace's own directory path is there.
    assert!(output.contains("\n1\n/tmp"), "{output}");
}

#[tokio::test]
async fn a_write_through_a_hard_link_is_noted() {
    let (_dir, root) = workspace();
    // A package store outside the workspace, on the same file system.
    let store = tempfile::tempdir().expect("store");
    let stored = store.path().join("package.js");
    std::fs::write(&stored, "original\n").expect("stored");
    std::fs::hard_link(&stored, root.join("package.js")).expect("link");
    assert_eq!(std::fs::metadata(&stored).expect("meta").nlink(), 2);
    let exec = sandboxed(&root);
    let result = run(&exec, "echo changed > package.js").await;
    assert!(
        result
            .notes
            .iter()
            .any(|note| note.contains("package.js, a file with 2 hard links")),
        "{:?}",
        result.notes
    );
}
