//! The sandbox with real processes: each escape is tried by a sandboxed
//! `bash`, and the test decides from outside (the file system, a server the
//! test holds, `/proc`) whether it got through. Ordinary work must still
//! succeed: git, make, cargo, temp files, a loopback server.
//!
//! Commands start through the one launch path (`bashtool_process::launch`),
//! which takes the sandbox's steps before and after the fork.

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader, ErrorKind, Read as _};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;

use bashtool_process::Wrapper;
use bashtool_sandbox::{NetworkMode, Sandbox, SandboxConfig, SandboxMode};

mod support;
use support::{Launched, host_address};

/// A workspace and a fake home, both outside every writable root (not in
/// `/tmp`): the target directory's temp space.
struct Fixture {
    base: tempfile::TempDir,
    workspace: PathBuf,
    home: PathBuf,
    state: PathBuf,
}

/// Should a mount ever leak out of a broken sandbox into the test's own
/// namespace, undo it before the temp dir is removed: removing a tree with
/// a bind mount in it would remove the mounted files too.
impl Drop for Fixture {
    fn drop(&mut self) {
        let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") else {
            return;
        };
        let root = self.base.path().to_string_lossy().into_owned();
        for mount_point in mounts.lines().filter_map(|line| line.split(' ').nth(4)) {
            if mount_point.starts_with(&root) {
                let _ = Command::new("umount").args(["-l", mount_point]).status();
            }
        }
    }
}

/// Where the fixtures go: not under a root the sandbox leaves writable
/// (`/tmp`, `$TMPDIR`), or "outside the workspace" would be writable and
/// the escape tests could not fail. A checkout under /tmp (a CI clone) puts
/// cargo's target dir there, so then `/var/tmp` is used.
fn fixture_base() -> std::path::PathBuf {
    let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let temp_roots = [std::path::PathBuf::from("/tmp"), std::env::temp_dir()];
    if temp_roots.iter().any(|root| target.starts_with(root)) {
        let base = std::path::PathBuf::from("/var/tmp/bashtool-sandbox-tests");
        std::fs::create_dir_all(&base).expect("fixture base");
        base
    } else {
        target
    }
}

fn fixture() -> Fixture {
    let base = tempfile::Builder::new()
        .prefix("sandbox-test-")
        .tempdir_in(fixture_base())
        .expect("temp dir");
    let root = base.path().canonicalize().expect("canonical");
    let workspace = root.join("workspace");
    let home = root.join("home");
    let state = workspace.join(".bashtool-state");
    for directory in [&workspace, &home, &home.join(".ssh"), &state] {
        std::fs::create_dir_all(directory).expect("create dir");
    }
    std::fs::write(home.join(".bashrc"), "original\n").expect("bashrc");
    Fixture {
        base,
        workspace,
        home,
        state,
    }
}

fn sandbox(fixture: &Fixture, mode: SandboxMode, network: NetworkMode) -> Arc<Sandbox> {
    let config = SandboxConfig {
        mode,
        network,
        ..SandboxConfig::default()
    };
    Sandbox::new(&config, &fixture.workspace, Some(&fixture.state)).expect("sandbox")
}

/// The command, sandboxed, as a child with piped output.
fn start(sandbox: &Arc<Sandbox>, fixture: &Fixture, script: &str) -> Launched {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| name != "HOME")
        .collect();
    env.push(("HOME".into(), fixture.home.clone().into()));
    support::launch(sandbox, &fixture.workspace, env, script)
}

fn run(sandbox: &Arc<Sandbox>, fixture: &Fixture, script: &str) -> Output {
    start(sandbox, fixture, script).wait_with_output()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn default_sandbox(fixture: &Fixture) -> Arc<Sandbox> {
    sandbox(fixture, SandboxMode::WorkspaceWrite, NetworkMode::On)
}

#[test]
fn writes_outside_the_workspace_are_refused() {
    let fixture = fixture();
    let sandbox = default_sandbox(&fixture);
    let etc_file = PathBuf::from(format!("/etc/bashtool-sandbox-test-{}", std::process::id()));
    let output = run(
        &sandbox,
        &fixture,
        &format!(
            "echo evil >> ~/.bashrc; echo key > ~/.ssh/authorized_keys; echo x > {etc}; \
             echo inside > inside.txt",
            etc = etc_file.display()
        ),
    );
    let bashrc = std::fs::read_to_string(fixture.home.join(".bashrc")).expect("bashrc");
    let etc_written = etc_file.exists();
    let _ = std::fs::remove_file(&etc_file);
    assert_eq!(bashrc, "original\n");
    assert!(!fixture.home.join(".ssh/authorized_keys").exists());
    assert!(!etc_written, "/etc was written");
    assert_eq!(
        std::fs::read_to_string(fixture.workspace.join("inside.txt")).expect("inside"),
        "inside\n"
    );
    let stderr = text(&output.stderr);
    assert!(stderr.contains("Permission denied"), "{stderr}");
}

#[test]
fn links_and_proc_root_do_not_reach_outside() {
    let fixture = fixture();
    let sandbox = default_sandbox(&fixture);
    let outside = fixture.home.join(".bashrc");
    let script = format!(
        "ln -s {outside} symlink; echo evil >> symlink; \
         ln {outside} hardlink && echo evil >> hardlink; \
         echo evil >> /proc/self/root{outside}; true",
        outside = outside.display()
    );
    run(&sandbox, &fixture, &script);
    assert_eq!(
        std::fs::read_to_string(&outside).expect("outside"),
        "original\n"
    );
    assert!(!fixture.workspace.join("hardlink").exists());
}

#[test]
fn mount_unshare_and_chroot_are_refused() {
    let fixture = fixture();
    let sandbox = default_sandbox(&fixture);
    std::fs::create_dir(fixture.workspace.join("mnt")).expect("mnt");
    // Never bind anything precious: a broken sandbox would mount it for real.
    std::fs::create_dir(fixture.home.join("bind-source")).expect("bind source");
    let output = run(
        &sandbox,
        &fixture,
        "mount -t tmpfs none mnt && touch mounted; \
         mount --bind ~/bind-source mnt && touch bound; \
         unshare --user --map-root-user touch unshared; \
         unshare --mount touch unshared-mount; \
         chroot / touch chrooted; \
         python3 -c 'import os; os.unshare(os.CLONE_NEWUSER)' && touch python-unshared; true",
    );
    for marker in [
        "mounted",
        "bound",
        "unshared",
        "unshared-mount",
        "chrooted",
        "python-unshared",
    ] {
        assert!(
            !fixture.workspace.join(marker).exists(),
            "{marker}: {}",
            text(&output.stderr)
        );
    }
}

/// The capabilities that change the host, as the kernel numbers them.
/// The capabilities root keeps in the sandbox (docs/sandbox.md says why):
/// chown, dac_override, dac_read_search, fowner, fsetid, kill, setgid,
/// setuid, net_bind_service, audit_write.
const KEPT_CAPABILITIES: u64 = (1 << 0)
    | (1 << 1)
    | (1 << 2)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 6)
    | (1 << 7)
    | (1 << 10)
    | (1 << 29);

/// Capabilities that change the host or reach around the other layers,
/// named in messages: none may be held.
const HOST_CHANGING_CAPABILITIES: &[(u32, &str)] = &[
    (9, "CAP_LINUX_IMMUTABLE"),
    (12, "CAP_NET_ADMIN"),
    (13, "CAP_NET_RAW"),
    (16, "CAP_SYS_MODULE"),
    (17, "CAP_SYS_RAWIO"),
    (18, "CAP_SYS_CHROOT"),
    (19, "CAP_SYS_PTRACE"),
    (21, "CAP_SYS_ADMIN"),
    (22, "CAP_SYS_BOOT"),
    (23, "CAP_SYS_NICE"),
    (25, "CAP_SYS_TIME"),
    (27, "CAP_MKNOD"),
    (38, "CAP_PERFMON"),
    (39, "CAP_BPF"),
];

/// The `Cap*` masks of one `/proc/<pid>/status`, by name.
fn capability_masks(status: &str) -> Vec<(String, u64)> {
    status
        .lines()
        .filter_map(|line| {
            let (name, mask) = line.strip_prefix("Cap")?.split_once(':')?;
            let mask = u64::from_str_radix(mask.trim(), 16).expect("hex mask");
            Some((format!("Cap{name}"), mask))
        })
        .collect()
}

#[test]
fn no_command_holds_or_regains_a_host_changing_capability() {
    let fixture = fixture();
    let sandbox = default_sandbox(&fixture);
    // bash's own sets, then those of a program it executes: for root every
    // `exec` recomputes the sets from scratch, the moment to regain them.
    let output = run(
        &sandbox,
        &fixture,
        "cat /proc/$$/status; echo ---; exec cat /proc/self/status",
    );
    let stdout = text(&output.stdout);
    let (shell, program) = stdout.split_once("---").expect("both statuses");
    for (process, status) in [("bash", shell), ("its program", program)] {
        let masks = capability_masks(status);
        for name in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
            let (_, mask) = masks
                .iter()
                .find(|(found, _)| found == name)
                .unwrap_or_else(|| panic!("{name} missing from {status}"));
            for (number, capability) in HOST_CHANGING_CAPABILITIES {
                assert_eq!(
                    mask & (1 << number),
                    0,
                    "{process} holds {capability} in {name}"
                );
            }
            assert_eq!(
                mask & !KEPT_CAPABILITIES,
                0,
                "{process} holds capabilities beyond the kept ones in {name}: {mask:#x}"
            );
        }
        if nix::unistd::geteuid().is_root() {
            // File work as root stays (Landlock limits where).
            let effective = masks
                .iter()
                .find(|(name, _)| name == "CapEff")
                .expect("CapEff")
                .1;
            assert_eq!(
                effective, KEPT_CAPABILITIES,
                "{process} must keep exactly the file and user capabilities"
            );
        }
    }
}

/// A process of the test, outside the sandbox.
fn outside_process() -> Child {
    Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn sleep")
}

#[test]
fn processes_outside_cannot_be_signalled_or_traced() {
    let fixture = fixture();
    let sandbox = default_sandbox(&fixture);
    let mut target = outside_process();
    let pid = target.id();
    let output = run(
        &sandbox,
        &fixture,
        &format!(
            "kill -9 {pid}; python3 -c 'import ctypes; libc = ctypes.CDLL(None); \
             print(libc.ptrace(16, {pid}, 0, 0))'; \
             sleep 1 & kill -9 $! && echo own-child-killed"
        ),
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let alive = target.try_wait().expect("try_wait").is_none();
    let tracer = status
        .lines()
        .find_map(|line| line.strip_prefix("TracerPid:"))
        .map(str::trim)
        .unwrap_or_default()
        .to_owned();
    let _ = target.kill();
    let _ = target.wait();
    assert!(alive, "the outside process was killed");
    assert_eq!(tracer, "0", "the outside process is traced");
    // Signals inside the sandbox still work.
    assert!(
        text(&output.stdout).contains("own-child-killed"),
        "{}",
        text(&output.stderr)
    );
}

fn git(workspace: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(workspace)
        .stdout(Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

#[test]
fn git_hooks_and_config_stay_read_only_but_commits_work() {
    let fixture = fixture();
    git(&fixture.workspace, &["init", "-q"]);
    let config_before =
        std::fs::read_to_string(fixture.workspace.join(".git/config")).expect("config");
    let sandbox = default_sandbox(&fixture);
    let output = run(
        &sandbox,
        &fixture,
        "echo 'touch pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         echo '[core] hooksPath = /tmp' >> .git/config; \
         rm -rf .git/hooks; mv .git/hooks .git/hooks-old; mv .git .git-old; \
         mv \"$PWD\" \"$PWD-old\"; \
         echo hello > file.txt && git add file.txt && \
         git -c user.name=t -c user.email=t@t commit -qm first && \
         git checkout -qb other && git stash list && echo committed",
    );
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("committed"),
        "{stdout}{}",
        text(&output.stderr)
    );
    let git_dir = fixture.workspace.join(".git");
    assert!(!git_dir.join("hooks/pre-commit").exists());
    assert!(git_dir.join("hooks").is_dir());
    assert_eq!(
        std::fs::read_to_string(git_dir.join("config")).expect("config"),
        config_before
    );
    assert!(!fixture.workspace.join(".git-old").exists());
    let log = Command::new("git")
        .args(["log", "--format=%s", "other"])
        .current_dir(&fixture.workspace)
        .output()
        .expect("git log");
    assert_eq!(text(&log.stdout), "first\n");
}

#[test]
fn bashtool_state_stays_read_only() {
    let fixture = fixture();
    std::fs::write(fixture.state.join("job.json"), "{}").expect("record");
    let sandbox = default_sandbox(&fixture);
    run(
        &sandbox,
        &fixture,
        ".bashtool-state_x=1; echo forged > .bashtool-state/job.json; \
         rm -f .bashtool-state/job.json; touch .bashtool-state/new; \
         mv .bashtool-state moved-state; true",
    );
    assert_eq!(
        std::fs::read_to_string(fixture.state.join("job.json")).expect("record"),
        "{}"
    );
    assert!(!fixture.state.join("new").exists());
    assert!(!fixture.workspace.join("moved-state").exists());
}

#[test]
fn read_only_mode_writes_only_a_private_temp() {
    let fixture = fixture();
    let sandbox = sandbox(&fixture, SandboxMode::ReadOnly, NetworkMode::On);
    let host_temp = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(host_temp.path(), "host\n").expect("host temp");
    let private_name = format!("bashtool-private-{}", std::process::id());
    let output = run(
        &sandbox,
        &fixture,
        &format!(
            "echo x > in-workspace; test -e {host} && echo host-temp-visible; echo temp > {host}; \
             echo private > /tmp/{private_name} && cat /tmp/{private_name}; \
             cat /etc/hostname >/dev/null && echo read-ok",
            host = host_temp.path().display()
        ),
    );
    assert!(!fixture.workspace.join("in-workspace").exists());
    assert_eq!(
        std::fs::read_to_string(host_temp.path()).expect("temp"),
        "host\n"
    );
    assert!(!Path::new("/tmp").join(&private_name).exists());
    assert_eq!(
        text(&output.stdout),
        "private\nread-ok\n",
        "{}",
        text(&output.stderr)
    );
    // The private /tmp lives as long as the sandbox: the next command of
    // the same sandbox finds the file.
    let again = run(&sandbox, &fixture, &format!("cat /tmp/{private_name}"));
    assert_eq!(text(&again.stdout), "private\n");
}

#[test]
fn ordinary_work_succeeds() {
    let fixture = fixture();
    let sandbox = default_sandbox(&fixture);
    let temp = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(
        fixture.workspace.join("Makefile"),
        "out.txt: in.txt\n\tcp in.txt out.txt\n",
    )
    .expect("Makefile");
    std::fs::write(fixture.workspace.join("in.txt"), "made\n").expect("in");
    let output = run(
        &sandbox,
        &fixture,
        &format!(
            "set -e; make -s; echo temp > {temp}; cat /etc/passwd > /dev/null; \
             echo to-null > /dev/null; echo \"$BASHTOOL_SANDBOX\"",
            temp = temp.path().display()
        ),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "workspace-write\n");
    assert_eq!(
        std::fs::read_to_string(fixture.workspace.join("out.txt")).expect("out"),
        "made\n"
    );
    assert_eq!(
        std::fs::read_to_string(temp.path()).expect("temp"),
        "temp\n"
    );
}

#[test]
fn cargo_builds_a_path_only_crate_offline() {
    let fixture = fixture();
    let workspace = &fixture.workspace;
    for (directory, manifest, source_name, source) in [
        (
            "helper",
            "[package]\nname = \"helper\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            "lib.rs",
            "pub fn answer() -> u32 { 42 }\n",
        ),
        (
            "app",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nhelper = { path = \"../helper\" }\n\n[workspace]\n",
            "main.rs",
            "fn main() { println!(\"{}\", helper::answer()); }\n",
        ),
    ] {
        let root = workspace.join(directory);
        std::fs::create_dir_all(root.join("src")).expect("src");
        std::fs::write(root.join("Cargo.toml"), manifest).expect("manifest");
        std::fs::write(root.join("src").join(source_name), source).expect("source");
    }
    let sandbox = default_sandbox(&fixture);
    // The real cargo home (rustup's toolchains), not the fake HOME.
    let cargo_home = std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").expect("HOME")));
    let rustup_home = std::env::var("RUSTUP_HOME")
        .unwrap_or_else(|_| format!("{}/.rustup", std::env::var("HOME").expect("HOME")));
    let output = run(
        &sandbox,
        &fixture,
        &format!(
            "cd app && CARGO_HOME={cargo_home} RUSTUP_HOME={rustup_home} \
             CARGO_TARGET_DIR=$PWD/target cargo build --offline -q && ./target/debug/app"
        ),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "42\n");
    assert!(workspace.join("app/target/debug/app").is_file());
}

/// Nothing may have connected to `listener` (a completed handshake would
/// wait in the backlog).
fn no_connection(listener: &TcpListener) -> bool {
    listener.set_nonblocking(true).expect("nonblocking");
    matches!(listener.accept(), Err(error) if error.kind() == ErrorKind::WouldBlock)
}

fn no_datagram(socket: &UdpSocket) -> bool {
    socket.set_nonblocking(true).expect("nonblocking");
    let mut buffer = [0u8; 64];
    matches!(socket.recv(&mut buffer), Err(error) if error.kind() == ErrorKind::WouldBlock)
}

#[test]
fn network_off_reaches_nothing_of_the_host() {
    let fixture = fixture();
    let tcp = TcpListener::bind("127.0.0.1:0").expect("tcp");
    let udp = UdpSocket::bind("127.0.0.1:0").expect("udp");
    let tcp6 = TcpListener::bind("[::1]:0").ok();
    let udp6 = UdpSocket::bind("[::1]:0").ok();
    let tcp_port = tcp.local_addr().expect("addr").port();
    let udp_port = udp.local_addr().expect("addr").port();
    let mut script = format!(
        "echo hi > /dev/tcp/127.0.0.1/{tcp_port}; echo hi > /dev/udp/127.0.0.1/{udp_port}; "
    );
    if let Some(tcp6) = &tcp6 {
        let port = tcp6.local_addr().expect("addr").port();
        script.push_str(&format!("echo hi > /dev/tcp/::1/{port}; "));
    }
    if let Some(udp6) = &udp6 {
        let port = udp6.local_addr().expect("addr").port();
        script.push_str(&format!("echo hi > /dev/udp/::1/{port}; "));
    }
    script.push_str("true");
    // The same script unsandboxed reaches every server: the check can fail.
    let unsandboxed = Command::new("bash")
        .args(["-c", &script])
        .stderr(Stdio::null())
        .status()
        .expect("bash");
    assert!(unsandboxed.success());
    assert!(!no_connection(&tcp) && !no_datagram(&udp));
    let sandbox = sandbox(&fixture, SandboxMode::WorkspaceWrite, NetworkMode::Off);
    run(&sandbox, &fixture, &script);
    assert!(no_connection(&tcp), "TCP 127.0.0.1 reached");
    assert!(no_datagram(&udp), "UDP 127.0.0.1 reached");
    if let Some(tcp6) = &tcp6 {
        // Drain the unsandboxed connection first.
        let _ = tcp6.accept();
        assert!(no_connection(tcp6), "TCP ::1 reached");
    }
    if let Some(udp6) = &udp6 {
        let mut buffer = [0u8; 64];
        let _ = udp6.recv(&mut buffer);
        assert!(no_datagram(udp6), "UDP ::1 reached");
    }
}

#[test]
fn network_off_sends_no_dns_query() {
    let fixture = fixture();
    // A DNS server of the test's, on the host's own address.
    let server = UdpSocket::bind("0.0.0.0:0").expect("udp");
    let port = server.local_addr().expect("addr").port();
    let address = host_address();
    let script = format!(
        "python3 -c '
import socket
query = bytes.fromhex(\"abcd01000001000000000000076578616d706c6503636f6d0000010001\")
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(query, (\"{address}\", {port}))
'; getent ahosts example.com"
    );
    Command::new("bash")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .status()
        .expect("bash");
    let mut buffer = [0u8; 512];
    let received = server
        .recv(&mut buffer)
        .expect("the query arrives unsandboxed");
    assert_eq!(&buffer[..2], b"\xab\xcd");
    assert!(received > 12);
    let sandbox = sandbox(&fixture, SandboxMode::WorkspaceWrite, NetworkMode::Off);
    let output = run(&sandbox, &fixture, &script);
    assert!(no_datagram(&server), "the DNS query reached the host");
    // The system resolver fails too (exit 2: not found), whether or not
    // this machine resolves names outside the sandbox.
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stdout));
}

#[test]
fn network_off_keeps_the_commands_own_loopback() {
    let fixture = fixture();
    let sandbox = sandbox(&fixture, SandboxMode::WorkspaceWrite, NetworkMode::Off);
    let output = run(
        &sandbox,
        &fixture,
        "python3 -c '
import socket, threading
for family, host in ((socket.AF_INET, \"127.0.0.1\"), (socket.AF_INET6, \"::1\")):
    server = socket.socket(family)
    server.bind((host, 0))
    server.listen()
    def answer():
        connection, _ = server.accept()
        connection.sendall(b\"pong\")
        connection.close()
    threading.Thread(target=answer).start()
    client = socket.create_connection((host, server.getsockname()[1]))
    print(client.recv(4).decode())
'",
    );
    assert_eq!(
        text(&output.stdout),
        "pong\npong\n",
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn escapees_inherit_the_sandbox() {
    let fixture = fixture();
    let sandbox = default_sandbox(&fixture);
    let mut child = start(
        &sandbox,
        &fixture,
        "setsid bash -c 'echo started; read -t 5 _ < /dev/zero; echo evil >> ~/.bashrc; echo done' ",
    );
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    assert_eq!(
        lines.next().transpose().expect("read").as_deref(),
        Some("started")
    );
    let mut rest = String::new();
    for line in lines {
        rest.push_str(&line.expect("line"));
    }
    child.wait();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    assert_eq!(
        std::fs::read_to_string(fixture.home.join(".bashrc")).expect("bashrc"),
        "original\n",
        "{stderr}"
    );
}

#[test]
fn off_mode_and_bad_settings_are_refused_by_new() {
    let fixture = fixture();
    let off = Sandbox::new(&SandboxConfig::off(), &fixture.workspace, None).expect_err("off");
    assert_eq!(
        off.to_string(),
        "sandbox setting `sandbox`: mode `off` has no sandbox to prepare"
    );
    let root = Sandbox::new(&SandboxConfig::default(), Path::new("/"), None).expect_err("root");
    assert!(root.to_string().contains("workspace is `/`"), "{root}");
}

#[test]
fn real_denials_get_the_note_that_explains_them() {
    let fixture = fixture();
    let sandbox = sandbox(&fixture, SandboxMode::WorkspaceWrite, NetworkMode::Off);
    let info = sandbox.summary();
    assert_eq!(
        (info.mode.as_str(), info.network.as_str()),
        ("workspace-write", "off")
    );
    assert_eq!(info.writable[0], fixture.workspace);
    // What the tool knows of the sandbox when it explains a denial.
    let info = bashtool_core::SandboxInfo {
        mode: info.mode,
        network: info.network,
        writable: info.writable,
        allowed_domains: info.allowed_domains,
    };
    let outside = fixture.home.join("notes.txt");
    for (script, expected) in [
        (
            format!("echo x > {}", outside.display()),
            format!("writing `{}` was refused", outside.display()),
        ),
        (
            format!("touch {}", outside.display()),
            format!("writing `{}` was refused", outside.display()),
        ),
        (
            "git init -q . 2>/dev/null; echo x > \"$PWD/.git/hooks/pre-commit\"".to_owned(),
            String::new(),
        ),
        (
            "echo > /dev/tcp/127.0.0.1/9".to_owned(),
            "the network is off".to_owned(),
        ),
    ] {
        let output = run(&sandbox, &fixture, &script);
        let stderr = text(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let note = bashtool_core::explain_denial(&lines, &info);
        if expected.is_empty() {
            // The first launch made the repository: not protected yet.
            assert_eq!(note, None, "{stderr}");
            let again = run(&sandbox, &fixture, &script);
            let stderr = text(&again.stderr);
            let lines: Vec<&str> = stderr.lines().collect();
            let note = bashtool_core::explain_denial(&lines, &info).unwrap_or_default();
            assert!(
                note.contains(".git/hooks/pre-commit` is protected"),
                "{stderr}: {note}"
            );
        } else {
            let note = note.unwrap_or_default();
            assert!(note.contains(&expected), "{stderr}: {note}");
        }
    }
}

#[test]
fn a_config_replaced_outside_is_seen_and_still_protected() {
    let fixture = fixture();
    git(&fixture.workspace, &["init", "-q"]);
    let sandbox = default_sandbox(&fixture);
    run(&sandbox, &fixture, "true");
    // git replaces the file by renaming a new one over it.
    git(&fixture.workspace, &["config", "bashtool.probe", "second"]);
    let output = run(
        &sandbox,
        &fixture,
        "git config --get bashtool.probe; echo '[core] hooksPath = /tmp' >> .git/config",
    );
    assert_eq!(text(&output.stdout), "second\n", "{}", text(&output.stderr));
    let config = std::fs::read_to_string(fixture.workspace.join(".git/config")).expect("config");
    assert!(!config.contains("hooksPath"), "{config}");
}

/// As root a sandbox keeps spawner threads that took its steps once; a
/// launch takes an idle one rather than starting another.
#[test]
fn an_idle_spawner_is_reused() {
    let fixture = fixture();
    let sandbox = default_sandbox(&fixture);
    let Some(first) = sandbox.spawner() else {
        assert!(
            !nix::unistd::geteuid().is_root(),
            "root always gets a spawner"
        );
        return;
    };
    let same = sandbox.spawner().expect("spawner");
    assert!(
        Arc::ptr_eq(&first, &same),
        "the idle spawner is taken again"
    );
}

/// The probe names the `bwrap` on PATH: the path it reports is the file a
/// shell finds, and the report says so. CI installs bubblewrap, so there
/// the probe must find it; elsewhere it must agree with the shell.
#[test]
fn the_probe_reports_the_bubblewrap_the_shell_finds() {
    let shell = Command::new("bash")
        .args(["-c", "command -v bwrap"])
        .output()
        .expect("bash");
    let found_by_shell = String::from_utf8_lossy(&shell.stdout).trim().to_owned();
    if std::env::var_os("CI").is_some() {
        assert!(!found_by_shell.is_empty(), "CI installs bubblewrap");
    }
    let capabilities = bashtool_sandbox::probe();
    let report = capabilities.to_string();
    if found_by_shell.is_empty() {
        assert_eq!(capabilities.bubblewrap, None);
        assert!(report.contains("bubblewrap: not installed"), "{report}");
    } else {
        assert_eq!(
            capabilities.bubblewrap,
            Some(PathBuf::from(&found_by_shell))
        );
        assert!(
            report.contains(&format!("bubblewrap: {found_by_shell} ")),
            "{report}"
        );
    }
}
