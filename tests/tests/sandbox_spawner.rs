//! The sandbox as env-local launches with it. Where no user namespace is
//! needed (root, always), commands are made by a spawner thread that took
//! every step but Landlock on itself (namespaces joined, capabilities
//! dropped, `no_new_privs`, the seccomp filter), and inherit them from it.
//! Each test decides from outside (files, `/proc`, a listener it holds)
//! that every layer still holds for such a command.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use bashtool_env_local::LocalExec;
use bashtool_sandbox::NetworkMode;
use bashtool_tests::{run, temp_dir, test_config, text};

fn root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Names of this process's threads, read from `/proc`.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("tasks")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect()
}

fn git_init(workspace: &Path) {
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(workspace)
        .status()
        .expect("git");
    assert!(status.success());
}

/// One `/proc/<pid>/status` field of the command, from its output.
fn field<'a>(output: &'a str, name: &str) -> &'a str {
    output
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .map_or("", str::trim)
}

#[tokio::test]
async fn every_layer_holds_for_a_command_the_spawner_makes() {
    let dir = temp_dir();
    let workspace = dir.path().canonicalize().expect("canonical");
    git_init(&workspace);
    let exec = LocalExec::new(test_config(&workspace));
    let outside = format!("/etc/bashtool-spawner-test-{}", std::process::id());
    let result = run(
        &exec,
        &format!(
            "cat /proc/self/status; touch {outside} 2>/dev/null; \
             touch .git/hooks/evil 2>/dev/null; touch inside; \
             unshare --mount true 2>/dev/null && echo unshared; true"
        ),
    )
    .await;
    let output = text(&result);
    let escaped = Path::new(&outside).exists();
    let _ = std::fs::remove_file(&outside);
    assert!(!escaped, "Landlock: wrote {outside}");
    assert!(
        !workspace.join(".git/hooks/evil").exists(),
        "mount namespace: wrote into .git/hooks"
    );
    assert!(workspace.join("inside").exists(), "{output}");
    assert!(!output.contains("unshared"), "seccomp: unshare ran");
    assert_eq!(field(&output, "Seccomp:"), "2", "{output}");
    assert_eq!(field(&output, "NoNewPrivs:"), "1", "{output}");
    for set in ["CapEff:", "CapPrm:"] {
        let mask = u64::from_str_radix(field(&output, set), 16).expect(set);
        // CAP_NET_ADMIN, CAP_SYS_MODULE, CAP_SYS_PTRACE, CAP_SYS_ADMIN,
        // CAP_SYS_TIME, CAP_MKNOD.
        for capability in [12, 16, 19, 21, 25, 27] {
            assert_eq!(
                mask & (1 << capability),
                0,
                "{set} has {capability}: {output}"
            );
        }
    }
    if root() {
        assert!(
            thread_names().iter().any(|name| name == "bashtool-spawn"),
            "no spawner thread: {:?}",
            thread_names()
        );
    }
}

#[tokio::test]
async fn a_git_made_after_the_first_launch_is_protected_from_the_next() {
    let dir = temp_dir();
    let workspace = dir.path().canonicalize().expect("canonical");
    let exec = LocalExec::new(test_config(&workspace));
    // The first launch makes the spawner of the mount namespace without a
    // `.git`; the repository made now needs a new namespace, and with it a
    // new spawner (the old one cannot join it).
    run(&exec, "true").await;
    git_init(&workspace);
    let config_before = std::fs::read(workspace.join(".git/config")).expect("config");
    let result = run(
        &exec,
        "touch .git/hooks/evil 2>/dev/null; echo '[core] hooksPath = /tmp' >> .git/config; \
         touch after",
    )
    .await;
    assert!(workspace.join("after").exists(), "{}", text(&result));
    assert!(!workspace.join(".git/hooks/evil").exists());
    assert_eq!(
        std::fs::read(workspace.join(".git/config")).expect("config"),
        config_before
    );
}

#[tokio::test]
async fn network_off_holds_for_a_command_the_spawner_makes() {
    let dir = temp_dir();
    let mut config = test_config(dir.path());
    config.confinement = bashtool_sandbox::SandboxConfig {
        network: NetworkMode::Off,
        ..bashtool_sandbox::SandboxConfig::default()
    }
    .confinement();
    let exec = LocalExec::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("address").port();
    let result = run(
        &exec,
        &format!(
            "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo refused"
        ),
    )
    .await;
    let output = text(&result);
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(error) if error.kind() == ErrorKind::WouldBlock),
        "the host's listener was reached: {accepted:?}"
    );
    assert_eq!(output, "refused");
}
