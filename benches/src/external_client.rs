//! A server driven by one of the SDK client scripts in `benches/clients/`,
//! in its `--control` mode: the script starts the server, initializes, lists
//! tools and warms up, then answers each `CALLS CONCURRENCY` line on its
//! stdin with a JSON line of calls/s. The script and its server stay up
//! between runs, so that runs can take turns with the other contenders.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::clients::Launcher;
use crate::mcp_client::{EchoCall, ServerSpec, isolate};

/// Longest the script may take to start (interpreter, SDK import, server
/// start, initialize, warm-up) on a loaded machine.
const START_DEADLINE: Duration = Duration::from_secs(120);
/// Longest one run may take.
const RUN_DEADLINE: Duration = Duration::from_secs(300);
/// Warm-up calls the script makes before it says it is ready, sequentially
/// and again with the run's concurrency.
const WARMUP_CALLS: usize = 20;

pub struct ExternalClient {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// The server's cwd and state home, and the script's stderr.
    dir: tempfile::TempDir,
}

/// What one run measured, as the script reports it.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    pub calls_per_second: f64,
    /// Mean time per call in the client, from the call to its result.
    pub call_ms: f64,
    /// Mean time per call the SDK spent validating `structuredContent`
    /// against the tool's output schema (the Python script measures it).
    pub validate_ms: Option<f64>,
}

impl ExternalClient {
    /// Starts `launcher`'s script on `spec`'s server, calling the tool as
    /// `call` says, with `concurrency` calls in flight in the warm-up.
    pub async fn start(
        launcher: &Launcher,
        spec: &ServerSpec,
        call: &EchoCall,
        concurrency: usize,
    ) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let stderr = std::fs::File::create(dir.path().join("client-stderr"))?;
        let mut command = tokio::process::Command::new(&launcher.program);
        command
            .args(&launcher.args)
            .args(["--control", "--tool", call.tool(), "--arguments"])
            .arg(Value::Object(call.arguments().clone()).to_string())
            .args(["--warmup", &WARMUP_CALLS.to_string()])
            .args(["--concurrency", &concurrency.to_string()])
            .arg("--")
            .arg(&spec.program)
            .args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        isolate(&mut command, spec, dir.path());
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {}", launcher.program.display()))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut client = Self {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            dir,
        };
        let ready = client.answer(START_DEADLINE).await?;
        if ready.get("ready") != Some(&Value::Bool(true)) {
            bail!(
                "the warm-up failed: {}",
                ready
                    .get("first_failure")
                    .and_then(Value::as_str)
                    .unwrap_or("(no reason given)")
            );
        }
        Ok(client)
    }

    /// The next JSON line, or what the script wrote to stderr if it ended.
    async fn answer(&mut self, deadline: Duration) -> anyhow::Result<Value> {
        let line = tokio::time::timeout(deadline, self.lines.next_line())
            .await
            .context("no answer in time")??;
        let Some(line) = line else {
            let stderr =
                std::fs::read_to_string(self.dir.path().join("client-stderr")).unwrap_or_default();
            let last = stderr.lines().last().unwrap_or("(nothing on stderr)");
            bail!("the client script ended: {last}");
        };
        serde_json::from_str(&line).with_context(|| format!("not JSON: {line}"))
    }

    /// `calls` calls with `concurrency` in flight; any failed call fails the
    /// run.
    pub async fn run(&mut self, calls: usize, concurrency: usize) -> anyhow::Result<Measured> {
        self.stdin
            .write_all(format!("{calls} {concurrency}\n").as_bytes())
            .await?;
        self.stdin.flush().await?;
        let answer = self.answer(RUN_DEADLINE).await?;
        let number = |key: &str| answer.get(key).and_then(Value::as_f64);
        let failures = number("failures").context("no `failures` in the answer")?;
        if failures > 0.0 {
            bail!(
                "{failures} of {calls} calls failed, first: {}",
                answer
                    .get("first_failure")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            );
        }
        Ok(Measured {
            calls_per_second: number("calls_per_second").context("no `calls_per_second`")?,
            call_ms: number("call_ms").unwrap_or(f64::NAN),
            validate_ms: number("validate_ms"),
        })
    }

    /// Ends stdin (the script closes its session and its server); the
    /// script is killed if it does not exit in time.
    pub async fn stop(mut self) {
        drop(self.stdin);
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
