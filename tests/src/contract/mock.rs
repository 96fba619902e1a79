//! env-mock as a subject of the port-level promises: a [`ScriptedExec`]
//! and [`ScriptedJobs`] scripted to play the commands those promises send
//! the way the contract says an environment must. A command it has no
//! script for fails the promise that sent it, naming the command.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bashtool_core::{BackgroundJob, CommandResult, ExecError, ExecMode, SpawnOptions, Stream};
use bashtool_env_mock::{Reply, ScriptedExec, ScriptedJobs, play};

use super::subject::Subject;

/// env-mock, scripted for the port-level promises, in a fresh workspace.
/// Its delays and timeouts are tokio time: run it on a paused clock.
pub fn mock_subject() -> Subject {
    let (guard, dir) = crate::workspace();
    let jobs = ScriptedJobs::new();
    let script = Arc::new(Script {
        dir: dir.clone(),
        jobs: jobs.clone(),
        started: AtomicU32::new(0),
    });
    let exec = ScriptedExec::new(move |command, options| {
        let script = Arc::clone(&script);
        async move { script.respond(&command, options).await }
    });
    Subject {
        exec: Arc::new(exec),
        jobs: Arc::new(jobs),
        dir,
        guard: Box::new(guard),
    }
}

struct Script {
    /// The environment's working directory.
    dir: std::path::PathBuf,
    jobs: ScriptedJobs,
    /// Jobs started so far (their ids).
    started: AtomicU32,
}

impl Script {
    async fn respond(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let cwd = options.cwd.clone().unwrap_or_else(|| self.dir.clone());
        if !cwd.is_dir() {
            return Err(ExecError::MissingDirectory { path: cwd });
        }
        if options.mode == ExecMode::Background {
            return self.start_job(command, options).await;
        }
        let variable = |name: &str| options.env.get(name).cloned().unwrap_or_default();
        let reply = match command {
            "true" => Reply::new(),
            "false" => Reply::new().exit(1),
            "exit 42" => Reply::new().exit(42),
            "sh -c 'exit 3'" => Reply::new().exit(3),
            "echo before; kill -KILL $$" => Reply::new().stdout("before\n").signal("SIGKILL"),
            "echo started; sleep 300" => Reply::new().stdout("started\n").never(),
            "seq 1 2000000" => pipe_sized(Reply::new(), &lines(1..=2_000_000, "")),
            "pwd; echo \"$GREETING\"" => {
                Reply::new().stdout(format!("{}\n{}\n", cwd.display(), variable("GREETING")))
            }
            "echo \"[$GREETING]\"" => Reply::new().stdout(format!("[{}]\n", variable("GREETING"))),
            "yes flood" => return Ok(flood(options).await),
            _ if command.starts_with("echo out1; read _ < ") => {
                return Ok(handshake(command, options).await);
            }
            other => panic!("the mock subject has no script for `{other}`"),
        };
        play(reply, options).await
    }

    /// A background job in the scripted jobs: `sleep 300` runs until
    /// stopped; the counting loop prints its lines and the note a job's
    /// output ends with, and exits 7.
    async fn start_job(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let id = format!("job{}", self.started.fetch_add(1, Ordering::Relaxed) + 1);
        self.jobs.add(&id, command, false);
        match command {
            "sleep 300" => {}
            "for i in $(seq 1 3000); do echo \"line $i\"; done; exit 7" => {
                let output = lines(1..=3000, "line ") + "\n[background job exited with code 7]\n";
                self.jobs.print(&id, output.as_bytes());
                self.jobs.exit(&id, 7);
            }
            other => panic!("the mock subject has no script for background `{other}`"),
        }
        let mut result = play(Reply::new(), options).await?;
        result.background = Some(BackgroundJob {
            id,
            pid: None,
            pid_in_sandbox: None,
            output_file: None,
        });
        Ok(result)
    }
}

/// `<prefix><n>\n` for each `n`.
fn lines(numbers: std::ops::RangeInclusive<u32>, prefix: &str) -> String {
    numbers
        .map(|number| format!("{prefix}{number}\n"))
        .collect()
}

/// `text` on stdout in chunks the size of a pipe's buffer, as a real
/// environment reads it (`text` is ASCII).
fn pipe_sized(reply: Reply, text: &str) -> Reply {
    text.as_bytes()
        .chunks(64 * 1024)
        .fold(reply, |reply, chunk| {
            reply.stdout(String::from_utf8_lossy(chunk).into_owned())
        })
}

/// `yes flood`: output without end, until the call is cancelled or times
/// out.
async fn flood(options: SpawnOptions) -> CommandResult {
    let output = options.output.clone();
    let chunk = "flood\n".repeat(1024);
    until_stopped(options, async move {
        loop {
            output.push(Stream::Stdout, chunk.as_bytes());
            tokio::task::yield_now().await;
        }
    })
    .await
}

/// The interleaving promise's command: `echo` lines to stdout or stderr,
/// each after reading the FIFO named before it (`read _ < 'PATH'`), which
/// the promise writes once it has seen the previous line.
async fn handshake(command: &str, options: SpawnOptions) -> CommandResult {
    let output = options.output.clone();
    let steps: Vec<String> = command.split("; ").map(str::to_owned).collect();
    until_stopped(options, async move {
        for step in steps {
            if let Some(gate) = step
                .strip_prefix("read _ < '")
                .and_then(|rest| rest.strip_suffix('\''))
            {
                let gate = Path::new(gate).to_path_buf();
                tokio::task::spawn_blocking(move || std::fs::read(gate))
                    .await
                    .expect("the reader")
                    .expect("read the gate");
            } else if let Some(line) = step.strip_prefix("echo ") {
                match line.strip_suffix(" >&2") {
                    Some(line) => output.push(Stream::Stderr, format!("{line}\n").as_bytes()),
                    None => output.push(Stream::Stdout, format!("{line}\n").as_bytes()),
                }
            } else {
                panic!("the mock subject cannot play `{step}`");
            }
        }
    })
    .await
}

/// Runs `command` (which pushes its own output) until it ends (exit 0), or
/// its timeout or a cancel stops it, reported as [`play`] reports them.
async fn until_stopped(options: SpawnOptions, command: impl Future<Output = ()>) -> CommandResult {
    let start = tokio::time::Instant::now();
    let deadline = async {
        match options.timeout {
            Some(timeout) => tokio::time::sleep(timeout).await,
            None => std::future::pending().await,
        }
    };
    let (timed_out, cancelled) = tokio::select! {
        biased;
        () = options.cancel.cancelled() => (false, true),
        () = deadline => (true, false),
        () = command => (false, false),
    };
    let stopped = timed_out || cancelled;
    CommandResult {
        exit_code: (!stopped).then_some(0),
        signal: stopped.then(|| "SIGTERM".to_owned()),
        timed_out,
        cancelled,
        duration: start.elapsed(),
        working_directory: options.cwd.clone(),
        ..CommandResult::exited(0, options.output.finish())
    }
}
