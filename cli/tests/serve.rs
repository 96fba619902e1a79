//! `bashtool serve` driven by hand over its stdin/stdout: every stdout line
//! is a protocol message; on SIGTERM, SIGHUP or stdin EOF it stops the
//! commands and jobs it started (jobs are kept with --keep-jobs). Liveness
//! is read from `/proc` by the test.

use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use bashtool_tests::{
    DEATH_LIMIT, KillGroup, echo_pid, kill_all, killed_survivors, pid_alive, pids_in,
    survivors_after,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::timeout;

const DEADLINE: Duration = Duration::from_secs(20);

struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Raw output bytes seen so far, by request id.
    seen: std::collections::HashMap<u64, Vec<u8>>,
    dir: tempfile::TempDir,
}

impl Serve {
    async fn start(flags: &[&str]) -> Self {
        Self::start_with(flags, json!({})).await
    }

    /// Starts the server with `flags` and `initialize` params beyond the
    /// protocol and the client's name.
    async fn start_with(flags: &[&str], extra: Value) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_bashtool"))
            .arg("serve")
            .args(flags)
            .current_dir(dir.path())
            .env("TMPDIR", dir.path())
            .env("BASHTOOL_STATE_DIR", dir.path().join("state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("serve starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut serve = Self {
            child,
            stdin,
            stdout,
            seen: std::collections::HashMap::new(),
            dir,
        };
        serve
            .request(1, "initialize", {
                let mut params = json!({"protocol": "bashtool-serve/1", "client": "test"});
                if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
                    params.extend(extra.clone());
                }
                params
            })
            .await;
        let answer = serve.answer(1).await;
        assert_eq!(answer["result"]["protocol"], "bashtool-serve/1", "{answer}");
        // The handshake names the build too (`bashtool --version` prints both).
        assert_eq!(
            answer["result"]["server"],
            format!("bashtool {}", env!("CARGO_PKG_VERSION")),
            "{answer}"
        );
        serve
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
        stdin.flush().await.expect("flush");
    }

    /// The next stdout line, which must be a JSON-RPC 2.0 message.
    async fn message(&mut self) -> Option<Value> {
        let line = timeout(DEADLINE, self.stdout.next_line())
            .await
            .expect("a line in time")
            .expect("read")?;
        let message: Value = serde_json::from_str(&line).expect("every stdout line is JSON");
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        if message["method"] == "output" {
            let params = &message["params"];
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(params["data"].as_str().expect("data"))
                .expect("base64");
            self.seen
                .entry(params["id"].as_u64().expect("id"))
                .or_default()
                .extend(bytes);
        }
        Some(message)
    }

    async fn answer(&mut self, id: u64) -> Value {
        loop {
            let message = self.message().await.expect("the server answers");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Waits until request `id` printed `count` pids.
    async fn pids(&mut self, id: u64, count: usize) -> Vec<u32> {
        loop {
            let pids = pids_in(&String::from_utf8_lossy(
                self.seen.get(&id).map_or(&[][..], Vec::as_slice),
            ));
            if pids.len() >= count {
                return pids;
            }
            self.message().await.expect("more output");
        }
    }

    /// The directory the server runs in (the test's own).
    fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Reads stdout to its end (each line still a protocol message) and
    /// waits for the exit.
    async fn wait_exit(&mut self) {
        while self.message().await.is_some() {}
        let status = timeout(DEADLINE, self.child.wait())
            .await
            .expect("exits in time")
            .expect("wait");
        assert!(status.success(), "{status}");
    }
}

/// A process that prints its pid and sleeps.
fn leaf() -> String {
    format!("sh -c '{}; exec sleep 300'", echo_pid("$$"))
}

/// A foreground command and a background job, both running; their pids.
async fn start_work(serve: &mut Serve) -> Vec<u32> {
    serve
        .request(
            2,
            "spawn",
            json!({"command": format!("{} & wait", leaf()), "timeout_ms": 60_000}),
        )
        .await;
    let mut pids = serve.pids(2, 1).await;
    serve
        .request(3, "spawn", json!({"command": leaf(), "mode": "background"}))
        .await;
    let job = serve.answer(3).await;
    let job_pid = job["result"]["background"]["pid"]
        .as_u64()
        .expect("job pid");
    pids.push(u32::try_from(job_pid).expect("pid"));
    assert!(pids.iter().all(|&pid| pid_alive(pid)), "{pids:?}");
    pids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sighup_stop_every_command_and_job() {
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGHUP,
    ] {
        let mut serve = Serve::start(&["--kill-grace", "1"]).await;
        let pids = start_work(&mut serve).await;
        let server = nix::unistd::Pid::from_raw(serve.child.id().expect("pid") as i32);
        nix::sys::signal::kill(server, signal).expect("signal");
        serve.wait_exit().await;
        assert_eq!(
            killed_survivors(&pids, DEATH_LIMIT).await,
            Vec::<u32>::new(),
            "{signal}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_eof_stops_everything_unless_jobs_are_kept() {
    let mut serve = Serve::start(&["--kill-grace", "1"]).await;
    let pids = start_work(&mut serve).await;
    drop(serve.stdin.take());
    serve.wait_exit().await;
    assert_eq!(
        killed_survivors(&pids, DEATH_LIMIT).await,
        Vec::<u32>::new()
    );

    let mut serve = Serve::start(&["--kill-grace", "1", "--keep-jobs"]).await;
    let pids = start_work(&mut serve).await;
    drop(serve.stdin.take());
    serve.wait_exit().await;
    let (command, job) = (pids[0], pids[1]);
    // The kept job outlives the server: its whole process group goes when
    // the test ends (its root alone would leave the command in it running).
    let _job = KillGroup(job);
    let survivors = survivors_after(&[command], DEATH_LIMIT).await;
    let job_alive = pid_alive(job);
    kill_all(&[command]);
    assert_eq!(
        survivors,
        Vec::<u32>::new(),
        "the foreground command stopped"
    );
    assert!(job_alive, "the kept job still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_missing_directories_and_a_second_initialize_are_clear_errors() {
    let mut serve = Serve::start(&[]).await;
    serve.request(2, "nope", json!({})).await;
    let answer = serve.answer(2).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    serve
        .request(
            3,
            "spawn",
            json!({"command": "true", "cwd": "/no/such/dir"}),
        )
        .await;
    let answer = serve.answer(3).await;
    assert_eq!(answer["error"]["code"], -32010, "{answer}");
    assert_eq!(
        answer["error"]["data"]["kind"], "missing_directory",
        "{answer}"
    );
    serve
        .request(
            4,
            "initialize",
            json!({"protocol": "bashtool-serve/1", "client": "again"}),
        )
        .await;
    let answer = serve.answer(4).await;
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    drop(serve.stdin.take());
    serve.wait_exit().await;
}

/// The most memory the process has held resident, in KiB (`VmHWM`).
fn peak_resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().strip_suffix("kB"))
        .and_then(|value| value.trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_over_32_mib_is_answered_with_an_error_without_being_kept_and_the_connection_goes_on()
 {
    const SIZE: usize = 100 * 1000 * 1000;
    let mut serve = Serve::start(&[]).await;
    let pid = serve.child.id().expect("pid");
    let marker = serve.dir().join("ran");
    // A spawn of 100 MB whose command would leave a mark if it ran; the id
    // is at the start, where the server finds it without keeping the line.
    let head = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"spawn","params":{{"command":"touch {} # "#,
        marker.display()
    );
    let tail = "\"}}\n";
    let filler = SIZE - head.len() - tail.len();
    let stdin = serve.stdin.as_mut().expect("stdin open");
    stdin.write_all(head.as_bytes()).await.expect("write");
    let chunk = vec![b'x'; 1 << 20];
    let mut left = filler;
    while left > 0 {
        let now = left.min(chunk.len());
        stdin.write_all(&chunk[..now]).await.expect("write");
        left -= now;
    }
    stdin.write_all(tail.as_bytes()).await.expect("write");
    stdin.flush().await.expect("flush");
    let answer = serve.answer(2).await;
    assert_eq!(
        answer,
        json!({
            "jsonrpc": "2.0",
            "id": 2,
            "error": {
                "code": -32700,
                "message": format!("message of {SIZE} bytes is larger than the limit of 32 MiB"),
            },
        })
    );
    // The connection goes on: the next request runs.
    serve
        .request(3, "spawn", json!({"command": "echo still here"}))
        .await;
    let answer = serve.answer(3).await;
    assert_eq!(answer["result"]["exit_code"], 0, "{answer}");
    assert_eq!(
        String::from_utf8_lossy(&serve.seen[&3]),
        "still here\n",
        "{answer}"
    );
    // Nothing ran for the refused line.
    assert!(!marker.exists());
    // At most one capped line (32 MiB) in memory, never the 100 MB.
    let peak = peak_resident_kib(pid);
    assert!(peak < 100 * 1024, "peak resident memory {peak} KiB");
    drop(serve.stdin.take());
    serve.wait_exit().await;
}

/// Children of `server` that are bash waiting for a command on fd 3 (warm
/// shells), read from `/proc` by the test.
fn waiting_shells(server: u32) -> Vec<u32> {
    bashtool_process::all_processes()
        .into_iter()
        .filter(|info| info.parent == server && !info.zombie)
        .filter(|info| {
            std::fs::read(format!("/proc/{}/cmdline", info.pid)).is_ok_and(|cmdline| {
                cmdline
                    .windows(b"-u 3 BASH_EXECUTION_STRING".len())
                    .any(|window| window == b"-u 3 BASH_EXECUTION_STRING")
            })
        })
        // A shell that took its command closed fd 3.
        .filter(|info| std::fs::symlink_metadata(format!("/proc/{}/fd/3", info.pid)).is_ok())
        .map(|info| info.pid)
        .collect()
}

/// A stateless connection keeps the warm shells its client asks for
/// (`warm_shells`, what `mcp --stateless --remote` sends), at most 4, in
/// the default sandbox; a call takes one; without the field, none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_connection_keeps_the_warm_shells_it_asks_for_up_to_four() {
    let mut serve = Serve::start_with(&[], json!({"warm_shells": 1})).await;
    let server = serve.child.id().expect("pid");
    let mut waiting = Vec::new();
    assert!(
        bashtool_tests::wait_until(Duration::from_secs(10), || {
            waiting = waiting_shells(server);
            !waiting.is_empty()
        })
        .await,
        "no warm shell waits"
    );
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    serve
        .request(2, "spawn", json!({"command": "echo \"$BASHTOOL_SANDBOX\""}))
        .await;
    let answer = serve.answer(2).await;
    assert_eq!(answer["result"]["exit_code"], 0, "{answer}");
    assert_eq!(
        String::from_utf8_lossy(serve.seen.get(&2).map_or(&[][..], Vec::as_slice)).trim(),
        "workspace-write"
    );
    assert!(
        !pid_alive(waiting[0]),
        "the call did not take the waiting shell"
    );
    drop(serve.stdin.take());
    serve.wait_exit().await;

    let serve = Serve::start_with(&[], json!({"warm_shells": 100})).await;
    let server = serve.child.id().expect("pid");
    assert!(
        bashtool_tests::wait_until(Duration::from_secs(10), || waiting_shells(server).len()
            >= 4)
        .await,
        "fewer than 4 warm shells: {:?}",
        waiting_shells(server)
    );
    // A fill starts its shells within milliseconds; a second is ample.
    assert!(
        !bashtool_tests::wait_until(Duration::from_secs(1), || waiting_shells(server).len() > 4)
            .await,
        "more than 4 warm shells: {:?}",
        waiting_shells(server)
    );

    let serve = Serve::start(&[]).await;
    let server = serve.child.id().expect("pid");
    assert!(
        !bashtool_tests::wait_until(Duration::from_secs(1), || !waiting_shells(server)
            .is_empty())
        .await,
        "a warm shell nobody asked for: {:?}",
        waiting_shells(server)
    );
}
