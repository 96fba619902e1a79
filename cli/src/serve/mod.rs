//! `bashtool serve`: the environment's ports (commands, jobs, sessions)
//! over stdin/stdout for a `RemoteExec` on another machine, in JSON-RPC 2.0,
//! one message per line (`docs/protocol.md`). Whatever carries the bytes
//! (ssh, `docker exec -i`, `kubectl exec -i`) is only a pipe: this side
//! stops process trees, enforces timeouts and keeps the logs.

mod dispatch;
mod environment;
mod outbox;

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use bashtool_env_remote::protocol::{
    self, CancelParams, InitializeParams, Message, RpcError, code, method,
};
use clap::Args;
use serde_json::Value;
use tokio::io::BufReader;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::logging;
use crate::mcp::stdio::{self, Line};
use crate::options::ToolArgs;
use crate::signals::StopSignals;
use dispatch::Request;
use environment::{Environment, Settings};
use outbox::Outbox;

/// Beyond the kill grace, how long the environment may take to close.
const CLOSE_MARGIN: Duration = Duration::from_secs(2);

/// Serve commands and jobs over stdin/stdout for `--remote` (JSON-RPC, one message per line)
///
/// Meant to be started by a transport: `bashtool run --remote 'ssh devbox
/// bashtool serve' -- make`, or `docker exec -i box bashtool serve`. Stdout
/// carries only protocol messages; logs go to stderr. A message may have 32
/// MiB; a longer line is dropped unkept, nothing runs for it, and it is
/// answered with an error. Without --session,
/// each call runs in a fresh shell unless the client asks for a session. On
/// stdin EOF, a closed stdout, SIGTERM or SIGHUP it stops every command and
/// job it started (jobs only without --keep-jobs) and exits. The protocol
/// is in docs/protocol.md.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool run --remote 'ssh devbox bashtool serve' -- uname -a\n  \
bashtool mcp --remote 'docker exec -i box /usr/local/bin/bashtool serve'\n  \
bashtool mcp --remote 'kubectl exec -i pod/agent -- bashtool serve' --session main\n  \
bashtool serve --cwd /work --keep-jobs   (what the transport runs)"
)]
pub struct ServeArgs {
    #[command(flatten)]
    pub tool: ToolArgs,
    /// Leave background jobs running when the connection closes
    #[arg(long)]
    pub keep_jobs: bool,
    /// Logging on stderr: error, warn, info, debug, trace or a RUST_LOG filter [default: $RUST_LOG, else warn]
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// The shell that runs commands, e.g. sh where there is no bash (--remote-shell passes it then); persistent sessions need bash [default: bash, or the config file's `shell`]
    #[arg(long, value_name = "PROGRAM")]
    pub shell: Option<std::path::PathBuf>,
}

pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    forget_ssh_variables()?;
    let log_filter = logging::parse(&logging::filter(args.log_level.as_deref(), None))?;
    anyhow::ensure!(
        !args.tool.no_policy && args.tool.budget_tokens.is_none() && !args.tool.plain_shortening,
        "--no-policy, --budget-tokens and --plain-shortening belong to the client side (run, call or mcp with --remote): the policy and the shortening run there, not in serve"
    );
    let file = args.tool.file()?;
    let (_, mut local) = args.tool.local_settings(&file)?;
    // What serve starts dies with it, even after a SIGKILL (kept jobs
    // excepted); the next start stops what was left.
    crate::environment::tie_to_this_process(&mut local);
    local.keep_jobs_on_drop = args.keep_jobs;
    if let Some(shell) = &args.shell {
        local.shell.clone_from(shell);
    }
    if let Some(name) = &args.tool.session {
        // Refuse a bad name now, not at the first connection.
        crate::session::snapshot_path(name)?;
    }
    let settings = Settings {
        sandbox: args.tool.sandbox_config(&file)?,
        local,
        session: args.tool.session.clone(),
        keep_jobs: args.keep_jobs,
        redact: args.tool.redact_settings(&file)?,
    };
    // Usage errors above still reach the real stderr; from here on it is
    // the log's.
    let stdio = take_stdio().context("moving the protocol off stdio")?;
    logging::to_file(log_filter, stdio.log)?;
    // One thread: a request read, its command started and its answer
    // written without a hand-over between worker threads (a wake-up each,
    // which on a busy machine is a wait for a CPU). Measured in turns with
    // two workers: a stateless call over a local pipe went from about
    // +450 to +270 µs over the same call made locally (docs/performance.md,
    // row 12). A sender that finds stdout's queue full blocks this thread
    // until the writer thread has room (see `outbox`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(serve(settings, stdio.input, stdio.output));
    // tokio reads stdin on a blocking thread that cannot be interrupted.
    runtime.shutdown_background();
    outcome
}

/// Variables that make bash (Debian's, built with SSH_SOURCE_BASHRC) read
/// `/etc/bash.bashrc` and `~/.bashrc` even for `bash -c`, when it thinks
/// sshd started it. Every command would then run the login files (pyenv,
/// nvm, conda: measured 70 to 180 ms per call here) and see a different
/// environment than a local `bashtool`. `SSH_CONNECTION` stays: it only
/// tells commands where the client is.
const SSH_SHELL_VARIABLES: &[&str] = &["SSH_CLIENT", "SSH2_CLIENT"];

/// Called first thing in `run`, before this process starts any thread (the
/// runtime, the stdout writer), which is the only time it may.
fn forget_ssh_variables() -> anyhow::Result<()> {
    for name in SSH_SHELL_VARIABLES {
        if std::env::var_os(name).is_some() {
            bashtool_process::remove_env_var(name)?;
        }
    }
    Ok(())
}

/// A request being answered.
struct Running {
    cancel: CancellationToken,
    abort: Option<AbortHandle>,
}

/// The state of the one connection this process serves.
struct Server {
    settings: Settings,
    outbox: Outbox,
    environment: Option<Arc<Environment>>,
    running: Arc<Mutex<HashMap<u64, Running>>>,
    tasks: TaskTracker,
}

fn lock(running: &Mutex<HashMap<u64, Running>>) -> MutexGuard<'_, HashMap<u64, Running>> {
    // Inserts and removes are single operations: a poisoned map is whole.
    running.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The process's stdio, moved to private descriptors (close-on-exec).
struct Stdio {
    /// The protocol's input (was fd 0).
    input: std::fs::File,
    /// The protocol's output (was fd 1).
    output: std::fs::File,
    /// Where the logs go (was fd 2).
    log: std::fs::File,
}

/// Moves stdin, stdout and stderr to private descriptors and puts
/// `/dev/null` on fds 0, 1 and 2. Under sshd they are sockets, and
/// env-local's calls then took 70 to 180 ms longer each (measured: a
/// `true` took 183 ms in serve with a socket on fd 2, 2 ms with
/// `/dev/null`); and nothing but the protocol may ever reach the client's
/// stdout, whatever a library or a child process writes.
fn take_stdio() -> anyhow::Result<Stdio> {
    fn private(fd: impl std::os::fd::AsFd) -> anyhow::Result<std::fs::File> {
        let copy = nix::unistd::dup(fd)?;
        nix::fcntl::fcntl(
            &copy,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        )?;
        Ok(std::fs::File::from(copy))
    }
    let stdio = Stdio {
        input: private(std::io::stdin())?,
        output: private(std::io::stdout())?,
        log: private(std::io::stderr())?,
    };
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    nix::unistd::dup2_stdin(&null)?;
    nix::unistd::dup2_stdout(&null)?;
    nix::unistd::dup2_stderr(&null)?;
    Ok(stdio)
}

async fn serve(
    settings: Settings,
    input: std::fs::File,
    output: std::fs::File,
) -> anyhow::Result<ExitCode> {
    let outbox = Outbox::start(output).context("starting the stdout writer")?;
    let broken = outbox.broken();
    let mut server = Server {
        settings,
        outbox,
        environment: None,
        running: Arc::new(Mutex::new(HashMap::new())),
        tasks: TaskTracker::new(),
    };
    let mut signals = StopSignals::install()?;
    // Through the event loop where stdin is a pipe or a socket (what ssh,
    // docker exec and a local pipe give): the blocking pool would hand
    // every request from one of its threads to a worker.
    let mut lines = BufReader::new(stdio::reader_of(input));
    let mut line = Vec::new();
    // Every branch but the read ends the loop, so a read cut short by
    // another branch is never resumed: `read_line` need not be cancel safe.
    let reason = loop {
        tokio::select! {
            read = stdio::read_line(&mut lines, &mut line) => match read {
                Ok(Line::End) => break "stdin closed",
                Err(error) => {
                    tracing::info!(%error, "reading stdin failed");
                    break "stdin failed";
                }
                Ok(Line::Complete) => server.handle(&line),
                Ok(Line::Oversized { size, id }) => server.refuse_oversized(size, id),
            },
            () = broken.cancelled() => break "stdout closed",
            signal = signals.next() => break signal,
        }
    };
    tracing::info!(reason, "stopping");
    server.shut_down().await;
    Ok(ExitCode::SUCCESS)
}

impl Server {
    fn reply(&self, id: Value, outcome: Result<Value, RpcError>) {
        self.outbox.send(Message::response(id, outcome).to_line());
    }

    /// A line over the cap was read and dropped: nothing runs for it; the
    /// client gets an error, with the request's id when the line showed
    /// it, and the connection goes on, as MCP over stdio does.
    fn refuse_oversized(&self, size: u64, id: Value) {
        tracing::warn!(size, "message over the size limit; answered with an error");
        let error = RpcError::new(code::PARSE_ERROR, stdio::oversized_message(size));
        self.reply(id, Err(error));
    }

    fn handle(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let message: Message = match serde_json::from_slice(line) {
            Ok(message) => message,
            Err(error) => {
                let error = RpcError::new(code::PARSE_ERROR, format!("not JSON: {error}"));
                return self.reply(Value::Null, Err(error));
            }
        };
        let Some(name) = message.method.clone() else {
            return; // a response: this server sends no requests
        };
        let Some(id) = message.id.clone() else {
            if name == method::CANCEL {
                self.cancel(message.params);
            }
            return;
        };
        if message.jsonrpc != protocol::JSONRPC {
            let error = RpcError::new(code::INVALID_REQUEST, "jsonrpc must be \"2.0\"");
            return self.reply(id, Err(error));
        }
        if name == method::INITIALIZE {
            let outcome = self.initialize(message.params);
            return self.reply(id, outcome);
        }
        let Some(environment) = self.environment.clone() else {
            let error = RpcError::new(
                code::NOT_INITIALIZED,
                "send initialize first (the handshake names the protocol version)",
            );
            return self.reply(id, Err(error));
        };
        let Some(number) = id.as_u64() else {
            let error = RpcError::new(code::INVALID_REQUEST, "ids must be non-negative integers");
            return self.reply(id, Err(error));
        };
        let cancel = CancellationToken::new();
        lock(&self.running).insert(
            number,
            Running {
                cancel: cancel.clone(),
                abort: None,
            },
        );
        let request = Request {
            number,
            method: name,
            params: message.params,
            cancel,
        };
        let outbox = self.outbox.clone();
        let running = Arc::clone(&self.running);
        let task = self.tasks.spawn(async move {
            let outcome = dispatch::answer(&environment, &outbox, request).await;
            // Removed before the answer goes out: a late `cancel` finds nothing.
            lock(&running).remove(&number);
            outbox.send(Message::response(id, outcome).to_line());
        });
        if let Some(entry) = lock(&self.running).get_mut(&number) {
            entry.abort = Some(task.abort_handle());
        }
    }

    fn initialize(&mut self, params: Option<Value>) -> Result<Value, RpcError> {
        if self.environment.is_some() {
            return Err(RpcError::new(
                code::NOT_INITIALIZED,
                "initialize was already sent on this connection",
            ));
        }
        let params: InitializeParams = serde_json::from_value(params.unwrap_or(Value::Null))
            .map_err(|error| {
                RpcError::new(
                    code::INVALID_PARAMS,
                    format!("invalid params for initialize: {error}"),
                )
            })?;
        if !protocol::compatible(&params.protocol) {
            return Err(RpcError::new(
                code::PROTOCOL_MISMATCH,
                protocol::mismatch_message(&params.protocol, protocol::PROTOCOL_VERSION),
            ));
        }
        let (environment, result) = Environment::open(&self.settings, &params)
            .map_err(|error| RpcError::new(code::INVALID_PARAMS, format!("{error:#}")))?;
        tracing::info!(client = %params.client, session = ?result.session, "initialized");
        self.environment = Some(Arc::new(environment));
        serde_json::to_value(result)
            .map_err(|error| RpcError::new(code::INVALID_PARAMS, error.to_string()))
    }

    fn cancel(&self, params: Option<Value>) {
        let Some(Ok(params)) = params.map(serde_json::from_value::<CancelParams>) else {
            tracing::warn!("a cancel without a numeric id was ignored");
            return;
        };
        if let Some(running) = lock(&self.running).get(&params.id) {
            running.cancel.cancel();
        }
    }

    /// Drops every running request (a dropped call kills its tree at once,
    /// without a grace: the client is gone), then stops the jobs unless
    /// kept, and saves a named session.
    async fn shut_down(self) {
        let running: Vec<Running> = lock(&self.running).drain().map(|(_, run)| run).collect();
        for run in running {
            run.cancel.cancel();
            if let Some(abort) = run.abort {
                abort.abort();
            }
        }
        self.tasks.close();
        self.tasks.wait().await;
        if let Some(environment) = &self.environment {
            let limit = environment.local.config().kill_grace + CLOSE_MARGIN;
            environment.close(limit).await;
        }
    }
}
