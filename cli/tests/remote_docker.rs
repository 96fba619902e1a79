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
//!
//! The README's docker recipe (issue 35) is run as written: its two lines
//! are read from README.md and run with `sh -c`, `docker` talking to the
//! private daemon through `DOCKER_HOST` and `bashtool` being this build, the
//! second one as the MCP server a real MCP client (rmcp) talks to.

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
/// The README recipe's container.
const RECIPE_CONTAINER: &str = "box";
/// Programs the scenarios use, as busybox applets.
const APPLETS: &[&str] = &[
    "sh", "sleep", "cat", "seq", "setsid", "kill", "mkdir", "echo", "printf", "true", "false",
    "ls", "test", "tail", "stat", "pwd",
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
            .args(["rm", "-f", CONTAINER, RECIPE_CONTAINER])
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
    for sub in ["usr/local/bin", "work"] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
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
    // Where an image's `bashtool` is found by name (the README's recipe).
    std::os::unix::fs::symlink("/bashtool", root.join("usr/local/bin/bashtool"))
        .expect("symlink bashtool");
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

/// The README's docker recipe: the `docker run` line and the `bashtool mcp`
/// line that follows it.
fn readme_recipe() -> (String, String) {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let lines: Vec<&str> = readme.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.starts_with("docker run "))
        .expect("the README has a `docker run` line");
    let run = lines[at].to_owned();
    let mcp = lines
        .get(at + 1)
        .filter(|line| line.starts_with("bashtool mcp --remote 'docker exec "))
        .expect("the `bashtool mcp` line follows it")
        .to_string();
    (run, mcp)
}

/// The processes in the container but the probe itself: (pid, command
/// name, state).
fn container_processes(socket: &str) -> Vec<(u32, String, char)> {
    let output = Command::new("docker")
        .args(["-H", socket, "exec", RECIPE_CONTAINER, "sh", "-c"])
        .arg("echo $$; for f in /proc/[0-9]*/stat; do cat $f 2>/dev/null && echo; done")
        .output()
        .expect("docker exec");
    let listing = String::from_utf8_lossy(&output.stdout);
    let mut lines = listing.lines();
    let probe: u32 = lines
        .next()
        .and_then(|line| line.parse().ok())
        .expect("the probe's pid");
    lines
        .filter_map(|line| {
            let (pid, rest) = line.split_once(" (")?;
            let (name, rest) = rest.rsplit_once(") ")?;
            Some((pid.parse().ok()?, name.to_owned(), rest.chars().next()?))
        })
        .filter(|(pid, name, _)| *pid != probe && name != "cat")
        .collect()
}

/// A real MCP client on `line`, run with `sh -c` in `project`, with
/// `docker` reaching the lab and `bashtool` being this build.
async fn mcp_client(
    line: &str,
    project: &Path,
    socket: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::ServiceExt as _;
    let bin = Path::new(env!("CARGO_BIN_EXE_bashtool"))
        .parent()
        .expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(line)
        .current_dir(project)
        .env("DOCKER_HOST", socket)
        .env("PATH", path)
        .env("XDG_CONFIG_HOME", project.join(".config"))
        .env("BASHTOOL_STATE_DIR", project.join(".state"))
        .env_remove("BASHTOOL_CONFIG")
        .stderr(Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(command).expect("spawn the server");
    tokio::time::timeout(remote_support::SAFETY, ().serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize")
}

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    command: &str,
) -> rmcp::model::CallToolResult {
    let arguments = serde_json::json!({ "command": command });
    let serde_json::Value::Object(arguments) = arguments else {
        unreachable!()
    };
    tokio::time::timeout(
        remote_support::SAFETY,
        client.call_tool(rmcp::model::CallToolRequestParams::new("bash").with_arguments(arguments)),
    )
    .await
    .expect("answer in time")
    .expect("an answer")
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|content| content.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 35, item 2: the README's docker recipe, run as written against a
/// real dockerd, with a real MCP client: the commands run in the mounted
/// project, `--sandbox off` given to `mcp` reaches the server (the
/// container cannot make the sandbox's namespaces), the same line without
/// it gives the client the reason instead of a closed connection, and
/// `--init` leaves no zombie behind when the server stops its commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_docker_recipe_works_as_written() {
    if !Path::new(DOCKERD).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{DOCKERD} is missing in CI: .ci/run installs docker.io"
        );
        println!("SKIPPED: {DOCKERD} is not installed (apt-get install docker.io)");
        return;
    }
    let (run_line, mcp_line) = readme_recipe();
    assert!(run_line.contains(" --init "), "{run_line}");
    assert!(mcp_line.ends_with(" --sandbox off"), "{mcp_line}");
    let image = run_line
        .split_whitespace()
        .last()
        .expect("an image")
        .to_owned();
    let lab = start_daemon();
    let socket = lab.socket();
    let tarball = build_rootfs(&lab.dir);
    lab.docker_ok(&[
        "import",
        "--change",
        r#"CMD ["/bin/sleep", "1000000"]"#,
        &tarball.display().to_string(),
        &image,
    ]);
    let project = tempfile::tempdir().expect("project dir");
    let started = Command::new("sh")
        .arg("-c")
        .arg(&run_line)
        .current_dir(project.path())
        .env("DOCKER_HOST", &socket)
        .output()
        .expect("sh runs");
    assert!(
        started.status.success(),
        "{run_line}: {}",
        String::from_utf8_lossy(&started.stderr)
    );

    let before = container_processes(&socket);
    let client = mcp_client(&mcp_line, project.path(), &socket).await;
    let result = call(&client, "pwd; echo made > made-in-box; cat /proc/1/comm").await;
    let shown = text(&result);
    assert_eq!(result.is_error, Some(false), "{shown}");
    assert!(shown.starts_with("stdout:\n/work\n"), "{shown}");
    assert!(
        shown.contains("docker-init"),
        "PID 1 is Docker's init: {shown}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("made-in-box")).expect("made in the mount"),
        "made\n"
    );
    // The flag reached the server: no sandbox over there.
    let details = result.structured_content.expect("details");
    assert!(details["sandbox"].is_null(), "{details}");
    // A daemon a command starts (left alone: that is how one starts a
    // daemon) outlives its parent, so the container's PID 1 inherits it;
    // when it ends, only an init reaps it.
    let left = call(
        &client,
        "(setsid bash -c 'sleep 1' > /dev/null 2>&1 < /dev/null &); echo started",
    )
    .await;
    assert!(
        text(&left).starts_with("stdout:\nstarted\n"),
        "{}",
        text(&left)
    );
    client.cancel().await.expect("closed");
    let deadline = std::time::Instant::now() + remote_support::SAFETY;
    loop {
        // Everything the server and its commands started is gone, reaped.
        let left: Vec<_> = container_processes(&socket)
            .into_iter()
            .filter(|process| !before.contains(process))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "left in the container (Z: a zombie): {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The same line without `--sandbox off`: the server cannot enforce the
    // sandbox in this container, and the client is told why, at
    // `initialize` and by every call, instead of a closed connection.
    let sandboxed = mcp_line.trim_end_matches(" --sandbox off");
    let client = mcp_client(sandboxed, project.path(), &socket).await;
    let instructions = client
        .peer_info()
        .and_then(|info| info.instructions.clone())
        .unwrap_or_default();
    assert!(instructions.contains("\nUnavailable: "), "{instructions}");
    assert!(instructions.contains("sandbox"), "{instructions}");
    let refused = call(&client, "echo never").await;
    let shown = text(&refused);
    assert_eq!(refused.is_error, Some(true), "{shown}");
    assert!(shown.contains("sandbox"), "{shown}");
    assert!(shown.contains("--sandbox off"), "{shown}");
    assert!(!project.path().join("never").exists());
    client.cancel().await.expect("closed");
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
