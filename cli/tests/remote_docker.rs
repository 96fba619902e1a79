//! `RemoteExec` through `docker exec -i` into a container of a private
//! `dockerd` (its own socket, data and exec roots in a temp dir; no
//! iptables, no bridge, vfs storage). The image is built offline with
//! `docker import` from a root filesystem made of local files: busybox,
//! bash, the `bashtool` binary and the libraries `ldd` lists. Nothing is
//! pulled and nothing of the host is mounted into the container. Remote
//! pids are checked in the container's `/proc` through `docker exec`.
//!
//! Skipped, with the reason printed, only when `dockerd` is not installed
//! (`apt-get install docker.io`; CI installs it).

mod remote_support;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use remote_support::Target;

const DOCKERD: &str = "/usr/sbin/dockerd";
const IMAGE: &str = "bashtool-remote-test:latest";
const CONTAINER: &str = "bashtool-remote-test";
/// Programs the scenarios use, as busybox applets.
const APPLETS: &[&str] = &[
    "sh", "sleep", "cat", "seq", "setsid", "kill", "mkdir", "echo", "printf", "true", "false",
    "ls", "test", "tail", "stat",
];

/// The daemon and its temp dir: stopped, unmounted and removed on drop.
struct Lab {
    temp: Option<tempfile::TempDir>,
    dir: PathBuf,
    daemon: Child,
}

impl Lab {
    fn socket(&self) -> String {
        format!("unix://{}/docker.sock", self.dir.display())
    }

    fn docker(&self) -> Command {
        let mut command = Command::new("docker");
        command.arg("-H").arg(self.socket());
        command
    }

    fn docker_ok(&self, args: &[&str]) {
        let output = self.docker().args(args).output().expect("docker runs");
        assert!(
            output.status.success(),
            "docker {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self
            .docker()
            .args(["rm", "-f", CONTAINER])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let pid = nix::unistd::Pid::from_raw(self.daemon.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.daemon.wait();
        // The temp dir is removed only when nothing is mounted below it:
        // removing through a mount point would delete what is mounted.
        let mounted = mounts_below(&self.dir);
        for mount in mounted.iter().rev() {
            let _ = nix::mount::umount2(mount.as_path(), nix::mount::MntFlags::MNT_DETACH);
        }
        let left = mounts_below(&self.dir);
        if let Some(temp) = self.temp.take() {
            if left.is_empty() {
                drop(temp);
            } else {
                eprintln!(
                    "leaving {} in place: still mounted below it: {left:?}",
                    temp.keep().display()
                );
            }
        }
    }
}

/// Mount points at or below `dir`, from this process's mount table.
fn mounts_below(dir: &Path) -> Vec<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(PathBuf::from)
        .filter(|mount| mount.starts_with(dir))
        .collect()
}

/// Starts the private daemon and waits (with a deadline) for "API listen on".
fn start_daemon() -> Lab {
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = temp.path().canonicalize().expect("canonical");
    let mut daemon = Command::new(DOCKERD)
        .args(["--iptables=false", "--ip6tables=false", "--bridge=none"])
        .args(["--storage-driver=vfs"])
        .arg("--data-root")
        .arg(dir.join("data"))
        .arg("--exec-root")
        .arg(dir.join("exec"))
        .arg("--pidfile")
        .arg(dir.join("docker.pid"))
        .arg("-H")
        .arg(format!("unix://{}/docker.sock", dir.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dockerd starts");
    let stderr = daemon.stderr.take().expect("stderr");
    let (ready, listening) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent && line.contains("API listen on") {
                let _ = ready.send(());
                sent = true;
            }
            if line.contains("level=error") || line.contains("level=fatal") {
                eprintln!("dockerd: {line}");
            }
        }
    });
    let lab = Lab {
        temp: Some(temp),
        dir,
        daemon,
    };
    listening
        .recv_timeout(Duration::from_secs(60))
        .expect("dockerd listens within 60 s");
    lab
}

/// A root filesystem of local files: busybox, bash, bashtool (stripped)
/// and the shared libraries both need, as a tarball.
fn build_rootfs(dir: &Path) -> PathBuf {
    let root = dir.join("rootfs");
    for sub in ["bin", "tmp/work", "root", "proc", "dev", "sys", "etc"] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("busybox is installed (apt-get install busybox-static)");
    std::fs::copy(busybox, root.join("bin/busybox")).expect("copy busybox");
    for applet in APPLETS {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).expect("symlink");
    }
    std::fs::copy("/bin/bash", root.join("bin/bash")).expect("copy bash");
    let binary = env!("CARGO_BIN_EXE_bashtool");
    let stripped = Command::new("strip")
        .arg("-o")
        .arg(root.join("bashtool"))
        .arg(binary)
        .status()
        .is_ok_and(|status| status.success());
    if !stripped {
        std::fs::copy(binary, root.join("bashtool")).expect("copy bashtool");
    }
    let ldd = Command::new("ldd")
        .args([binary, "/bin/bash"])
        .output()
        .expect("ldd runs");
    let listing = String::from_utf8_lossy(&ldd.stdout);
    let mut libraries: Vec<&str> = listing
        .split_whitespace()
        // `ldd a b` heads each listing with `a:`; the rest are libraries.
        .filter(|word| word.starts_with('/') && !word.ends_with(':'))
        .collect();
    libraries.sort_unstable();
    libraries.dedup();
    for library in libraries {
        let target = root.join(library.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::copy(library, &target).expect("copy a library");
    }
    let tarball = dir.join("rootfs.tar");
    let status = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&tarball)
        .arg(".")
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar failed");
    tarball
}

/// Whether `pid` is alive (not a zombie) inside the container.
fn alive_in_container(socket: &str, pid: u32) -> bool {
    let Ok(output) = Command::new("docker")
        .args(["-H", socket, "exec", CONTAINER, "cat"])
        .arg(format!("/proc/{pid}/stat"))
        .stderr(Stdio::null())
        .output()
    else {
        return false;
    };
    output.status.success() && bashtool_tests::stat_alive(&String::from_utf8_lossy(&output.stdout))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_exec_through_docker_exec() {
    if !Path::new(DOCKERD).exists() {
        // In CI the component must be there (.ci/run installs it): a
        // skipped test would pass without proving anything.
        assert!(
            std::env::var_os("CI").is_none(),
            "{DOCKERD} is missing in CI: .ci/run installs docker.io"
        );
        println!("SKIPPED: {DOCKERD} is not installed (apt-get install docker.io)");
        return;
    }
    let lab = start_daemon();
    let tarball = build_rootfs(&lab.dir);
    lab.docker_ok(&["import", &tarball.display().to_string(), IMAGE]);
    lab.docker_ok(&[
        "run",
        "-d",
        "--network",
        "none",
        "--name",
        CONTAINER,
        IMAGE,
        "/bin/sleep",
        "100000",
    ]);
    let socket = lab.socket();
    let probe_socket = socket.clone();
    let target = Target {
        line: format!(
            "docker -H {socket} exec -i -e HOME=/root -e TMPDIR=/tmp {CONTAINER} /bashtool serve --cwd /tmp/work --kill-grace 1 --sandbox off"
        ),
        remote_dir: "/tmp/work".to_owned(),
        // Probed inside the container, so numbered as its pid namespace
        // numbers them (as the server there reports its jobs' pids).
        alive: Box::new(move |pid| alive_in_container(&probe_socket, pid)),
        pids_in: bashtool_tests::pids_as_printed,
        pid_file: lab.dir.join("transport.pid"),
    };
    remote_support::every_scenario(&target).await;
    drop(target);
    drop(lab);
}
