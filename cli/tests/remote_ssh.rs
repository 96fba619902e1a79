//! `RemoteExec` through a real `ssh` to a private `sshd` on 127.0.0.1,
//! with host and user keys generated in a temp dir. The server is this
//! machine, so the remote pids are checked in `/proc` here.
//!
//! Skipped, with the reason printed, only when `sshd` is not installed
//! (`apt-get install openssh-server`; CI installs it).

mod remote_support;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use remote_support::Target;

const SSHD: &str = "/usr/sbin/sshd";

/// A private sshd, killed on drop.
struct Sshd {
    child: Child,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(path)
        .status()
        .expect("ssh-keygen runs");
    assert!(status.success(), "ssh-keygen failed");
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// Starts sshd and waits (with a deadline) for its "Server listening" line.
fn start_sshd(dir: &Path) -> (Sshd, u16) {
    keygen(&dir.join("host_key"));
    keygen(&dir.join("user_key"));
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).expect("authorized_keys");
    // sshd wants its privilege separation directory.
    std::fs::create_dir_all("/run/sshd").expect("/run/sshd");
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "ListenAddress 127.0.0.1\nHostKey {dir}/host_key\nAuthorizedKeysFile {dir}/authorized_keys\n\
             StrictModes no\nPidFile {dir}/sshd.pid\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\n",
            dir = dir.display()
        ),
    )
    .expect("sshd_config");
    let port = free_port();
    let mut child = Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .args(["-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sshd starts");
    let stderr = child.stderr.take().expect("stderr");
    let (ready, listening) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent && line.contains("Server listening") {
                let _ = ready.send(());
                sent = true;
            }
            eprintln!("sshd: {line}");
        }
    });
    let sshd = Sshd { child };
    listening
        .recv_timeout(Duration::from_secs(20))
        .expect("sshd listens within 20 s");
    (sshd, port)
}

fn ssh_line(dir: &Path, port: u16, remote_command: &str) -> String {
    format!(
        "ssh -p {port} -i '{key}' -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
         -o BatchMode=yes -o LogLevel=ERROR 127.0.0.1 \"{remote_command}\"",
        key = dir.join("user_key").display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_exec_over_ssh_on_loopback() {
    if !Path::new(SSHD).exists() {
        // In CI the component must be there (.ci/run installs it): a
        // skipped test would pass without proving anything.
        assert!(
            std::env::var_os("CI").is_none(),
            "{SSHD} is missing in CI: .ci/run installs openssh-server"
        );
        println!("SKIPPED: {SSHD} is not installed (apt-get install openssh-server)");
        return;
    }
    let temp = tempfile::tempdir().expect("temp dir");
    let dir: PathBuf = temp.path().canonicalize().expect("canonical");
    let (_sshd, port) = start_sshd(&dir);
    for sub in ["tmp", "state", "work"] {
        std::fs::create_dir(dir.join(sub)).expect("mkdir");
    }
    let serve = format!(
        "TMPDIR={dir}/tmp BASHTOOL_STATE_DIR={dir}/state exec {binary} serve --cwd {dir}/work --kill-grace 1",
        dir = dir.display(),
        binary = env!("CARGO_BIN_EXE_bashtool")
    );
    let target = Target {
        line: ssh_line(&dir, port, &serve),
        upload: None,
        sessions: true,
        remote_dir: format!("{}/work", dir.display()),
        // The server runs on this host: the pids a sandboxed command
        // prints map to pids here.
        alive: Box::new(bashtool_tests::pid_alive),
        pids_in: bashtool_tests::pids_in,
        pid_file: dir.join("transport.pid"),
    };
    remote_support::every_scenario(&target).await;
}
