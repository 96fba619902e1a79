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

use bashtool_env_remote::ServeBinary;
use remote_support::{Target, Upload};

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

/// Whether the test can run: sshd is installed (in CI it must be).
fn sshd_installed() -> bool {
    if Path::new(SSHD).exists() {
        return true;
    }
    // In CI the component must be there (.ci/run installs it): a skipped
    // test would pass without proving anything.
    assert!(
        std::env::var_os("CI").is_none(),
        "{SSHD} is missing in CI: .ci/run installs openssh-server"
    );
    println!("SKIPPED: {SSHD} is not installed (apt-get install openssh-server)");
    false
}

/// A temp dir with an sshd of its own on loopback, and `subs` made in it.
struct Lab {
    _temp: tempfile::TempDir,
    dir: PathBuf,
    _sshd: Sshd,
    port: u16,
}

/// The lab, or `None` where sshd is not installed (never in CI).
fn lab(subs: &[&str]) -> Option<Lab> {
    if !sshd_installed() {
        return None;
    }
    let temp = tempfile::tempdir().expect("temp dir");
    let dir: PathBuf = temp.path().canonicalize().expect("canonical");
    let (sshd, port) = start_sshd(&dir);
    for sub in subs {
        std::fs::create_dir(dir.join(sub)).expect("mkdir");
    }
    Some(Lab {
        _temp: temp,
        dir,
        _sshd: sshd,
        port,
    })
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
    let Some(Lab {
        _temp,
        dir,
        _sshd,
        port,
    }) = lab(&["tmp", "state", "work"])
    else {
        return;
    };
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

/// `--remote-shell 'ssh … 127.0.0.1'`: a shell whose HOME is in the temp
/// dir, so the cache (`~/.cache/bashtool/VERSION`) is the test's own. The
/// first start uploads (this test's build: the server is this machine, its
/// libraries are there; the static build when `.ci/test` names it), the
/// second uploads nothing, and the transport scenarios pass through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_shell_bootstraps_over_ssh_on_loopback() {
    let Some(Lab {
        _temp,
        dir,
        _sshd,
        port,
    }) = lab(&["home", "tmp", "state", "work"])
    else {
        return;
    };
    let build = std::env::var_os("BASHTOOL_TEST_STATIC_BINARY").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_bashtool")),
        PathBuf::from,
    );
    let shell = format!(
        "HOME={dir}/home TMPDIR={dir}/tmp BASHTOOL_STATE_DIR={dir}/state XDG_CACHE_HOME= exec sh",
        dir = dir.display()
    );
    let line = ssh_line(&dir, port, &shell);
    let cache = dir.join(format!(
        "home/.cache/bashtool/{}",
        env!("CARGO_PKG_VERSION")
    ));
    let run = |command: &str| {
        Command::new(env!("CARGO_BIN_EXE_bashtool"))
            .env("BASHTOOL_STATE_DIR", dir.join("state"))
            .args(["run", "--remote-shell", &line, "--serve-binary"])
            .arg(&build)
            .arg("--cwd")
            .arg(dir.join("work"))
            .args(["--", command])
            .stdin(Stdio::null())
            .output()
            .expect("bashtool runs")
    };
    let first = run("echo first");
    let stderr = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(first.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&first.stdout).contains("first"),
        "{first:?}"
    );
    assert!(stderr.contains("bashtool: uploading bashtool"), "{stderr}");
    assert_eq!(
        std::fs::read(cache.join("bashtool")).expect("installed"),
        std::fs::read(&build).expect("the build"),
        "the installed binary is the build, byte for byte"
    );
    let second = run("echo second");
    let stderr = String::from_utf8_lossy(&second.stderr).into_owned();
    assert!(second.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&second.stdout).contains("second"),
        "{second:?}"
    );
    assert!(!stderr.contains("upload"), "{stderr}");

    let target = Target {
        line,
        upload: Some(Upload {
            build: ServeBinary::open(&build).expect("a Linux build"),
            serve_args: Vec::new(),
        }),
        sessions: true,
        remote_dir: format!("{}/work", dir.display()),
        alive: Box::new(bashtool_tests::pid_alive),
        pids_in: bashtool_tests::pids_in,
        pid_file: dir.join("transport.pid"),
    };
    remote_support::every_scenario(&target).await;
}
