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

use bashtool_env_remote::ServeBinary;
use remote_support::{Target, Upload};

const DOCKERD: &str = "/usr/sbin/dockerd";
const IMAGE: &str = "bashtool-remote-test:latest";
const BUSYBOX_IMAGE: &str = "bashtool-busybox-test:latest";
const VERSION: &str = env!("CARGO_PKG_VERSION");
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

/// The host's busybox (a static one: busybox-static).
fn busybox() -> &'static str {
    ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("busybox is installed (apt-get install busybox-static)")
}

/// A root filesystem in `dir/name` with busybox and `applets` linked to it.
fn busybox_root(dir: &Path, name: &str, applets: &[&str]) -> PathBuf {
    let root = dir.join(name);
    for sub in ["bin", "tmp/work", "root", "proc", "dev", "sys", "etc"] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    std::fs::copy(busybox(), root.join("bin/busybox")).expect("copy busybox");
    for applet in applets {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).expect("symlink");
    }
    root
}

/// A root filesystem of local files: busybox, bash, bashtool (stripped)
/// and the shared libraries both need, as a tarball.
fn build_rootfs(dir: &Path) -> PathBuf {
    let root = busybox_root(dir, "rootfs", APPLETS);
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
    tar(&root)
}

/// A root filesystem of nothing but busybox and every applet it has: no
/// bash, no C library, no bashtool.
fn build_busybox_rootfs(dir: &Path) -> PathBuf {
    let listing = Command::new(busybox())
        .arg("--list")
        .output()
        .expect("busybox --list runs");
    let listing = String::from_utf8_lossy(&listing.stdout);
    let applets: Vec<&str> = listing
        .lines()
        .filter(|applet| *applet != "busybox")
        .collect();
    tar(&busybox_root(dir, "busybox-rootfs", &applets))
}

/// `root` as a tarball next to it.
fn tar(root: &Path) -> PathBuf {
    let tarball = root.with_extension("tar");
    let status = Command::new("tar")
        .arg("-C")
        .arg(root)
        .arg("-cf")
        .arg(&tarball)
        .arg(".")
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar failed");
    tarball
}

/// Whether the test can run: dockerd is installed (in CI it must be).
fn dockerd_installed() -> bool {
    if Path::new(DOCKERD).exists() {
        return true;
    }
    // In CI the component must be there (.ci/run installs it): a skipped
    // test would pass without proving anything.
    assert!(
        std::env::var_os("CI").is_none(),
        "{DOCKERD} is missing in CI: .ci/run installs docker.io"
    );
    println!("SKIPPED: {DOCKERD} is not installed (apt-get install docker.io)");
    false
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
    if !dockerd_installed() {
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
        upload: None,
        sessions: true,
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

/// `bashtool run --remote-shell LINE` with the static build to upload.
fn run_through_shell(lab: &Lab, line: &str, build: &Path, command: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .env("BASHTOOL_STATE_DIR", lab.dir.join("state"))
        .args(["run", "--remote-shell", line, "--serve-binary"])
        .arg(build)
        .args(["--cwd", "/tmp/work", "--sandbox", "off", "--", command])
        .stdin(Stdio::null())
        .output()
        .expect("bashtool runs")
}

/// What `docker exec CONTAINER ARGS` printed, trimmed.
fn in_container(lab: &Lab, container: &str, args: &[&str]) -> String {
    let output = lab
        .docker()
        .args(["exec", container])
        .args(args)
        .output()
        .expect("docker exec runs");
    assert!(
        output.status.success(),
        "docker exec {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `--remote-shell 'docker exec -i CONTAINER sh'` into an image of nothing
/// but busybox: one command uploads the static build and runs; the second
/// uploads nothing; a damaged binary over there is replaced, never run;
/// then the transport scenarios; and a read-only or full container gets
/// an error naming the cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_shell_bootstraps_a_busybox_only_container() {
    if !dockerd_installed() {
        return;
    }
    let lab = start_daemon();
    let Some(build) = remote_support::static_build(&lab.dir) else {
        return;
    };
    let tarball = build_busybox_rootfs(&lab.dir);
    lab.docker_ok(&["import", &tarball.display().to_string(), BUSYBOX_IMAGE]);
    let sleeping = |name: &str, extra: &[&str]| {
        let mut args = vec!["run", "-d", "--network", "none", "--name", name];
        args.extend(extra);
        args.extend([BUSYBOX_IMAGE, "/bin/sleep", "100000"]);
        lab.docker_ok(&args);
    };
    sleeping(CONTAINER, &[]);
    let socket = lab.socket();
    let line_into =
        |container: &str| format!("docker -H {socket} exec -i -e HOME=/root {container} sh");
    let line = line_into(CONTAINER);
    let cache = format!("/root/.cache/bashtool/{VERSION}");

    let first = run_through_shell(&lab, &line, &build, "echo hello from $(uname -m)");
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        String::from_utf8_lossy(&first.stdout).contains("hello from x86_64"),
        "{first:?}"
    );
    assert!(
        stderr(&first).contains("bashtool: uploading bashtool"),
        "{}",
        stderr(&first)
    );
    assert!(
        stderr(&first).contains(&format!("installed as {cache}/bashtool")),
        "{}",
        stderr(&first)
    );
    assert_eq!(
        in_container(&lab, CONTAINER, &["stat", "-c", "%a", &cache]),
        "700"
    );
    let installed = format!("{cache}/bashtool");
    assert_eq!(
        in_container(&lab, CONTAINER, &["stat", "-c", "%a", &installed]),
        "755"
    );
    assert_eq!(
        in_container(&lab, CONTAINER, &["ls", "-A", &cache]),
        "bashtool",
        "no temp file is left"
    );

    let second = run_through_shell(&lab, &line, &build, "echo again");
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(!stderr(&second).contains("upload"), "{}", stderr(&second));

    // A cut binary over there fails the checksum: it is replaced, not run.
    let cut = format!("head -c 100000 {installed} > /tmp/cut && cat /tmp/cut > {installed}");
    in_container(&lab, CONTAINER, &["sh", "-c", &cut]);
    let third = run_through_shell(&lab, &line, &build, "echo repaired");
    assert!(third.status.success(), "{}", stderr(&third));
    assert!(
        stderr(&third).contains("bashtool: uploading bashtool"),
        "{}",
        stderr(&third)
    );
    let size = std::fs::metadata(&build)
        .expect("the build")
        .len()
        .to_string();
    assert_eq!(
        in_container(&lab, CONTAINER, &["stat", "-c", "%s", &installed]),
        size
    );

    let probe_socket = socket.clone();
    let target = Target {
        line: line.clone(),
        upload: Some(Upload {
            build: ServeBinary::open(&build).expect("a static build"),
            serve_args: vec!["--sandbox".to_owned(), "off".to_owned()],
        }),
        // No bash in the image: commands run with busybox sh, and
        // persistent sessions (which need bash) are not offered.
        sessions: false,
        remote_dir: "/tmp/work".to_owned(),
        alive: Box::new(move |pid| alive_in_container(&probe_socket, pid)),
        pids_in: bashtool_tests::pids_as_printed,
        pid_file: lab.dir.join("transport.pid"),
    };
    remote_support::every_scenario(&target).await;
    drop(target);

    sleeping("read-only", &["--read-only"]);
    let refused = run_through_shell(&lab, &line_into("read-only"), &build, "echo never");
    assert!(!refused.status.success(), "{refused:?}");
    assert!(refused.stdout.is_empty(), "nothing ran: {refused:?}");
    assert!(
        stderr(&refused).contains("the file system over there is read-only"),
        "{}",
        stderr(&refused)
    );

    sleeping("full", &["--read-only", "--tmpfs", "/tmp:size=256k"]);
    let full = run_through_shell(&lab, &line_into("full"), &build, "echo never");
    assert!(!full.status.success(), "{full:?}");
    assert!(full.stdout.is_empty(), "nothing ran: {full:?}");
    assert!(
        stderr(&full).contains("the disk over there is full"),
        "{}",
        stderr(&full)
    );
    drop(lab);
}
