//! [`RemoteExec`]: the [`CommandExec`] and [`Jobs`] ports over a connection
//! to `bashtool serve`, reconnecting after a link broke.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{
    CommandExec, CommandResult, EnvironmentInfo, ExecError, JobError, JobInfo, JobInput, JobOutput,
    Jobs, ReadFrom, SpawnOptions,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{BACKSTOP_MARGIN, RemoteConfig};
use crate::connection::{Call, Connection};
use crate::error::Error;
use crate::protocol::{
    self, ExecErrorData, InitializeParams, InitializeResult, JobErrorData, JobParams, ListResult,
    ReadParams, RpcError, SpawnParams, SpawnResult, WaitParams, WriteParams, method,
};
use crate::transport::{CommandTransport, Transport};

/// Commands and jobs of a remote environment, reached through a
/// [`Transport`]. Cheap to clone: clones share the connection.
///
/// One connection is opened on first use (or by [`RemoteExec::connect`])
/// and reused; calls are multiplexed on it. When it breaks, the calls on
/// it return at once (a command's result says the environment was lost and
/// that the server stopped its processes), and the next call reconnects
/// and shakes hands again.
#[derive(Clone)]
pub struct RemoteExec {
    inner: Arc<Inner>,
}

struct Inner {
    transport: Arc<dyn Transport>,
    config: RemoteConfig,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    environment: Mutex<EnvironmentInfo>,
    /// A connection existed before: a new one starts a new anonymous session.
    connected_before: AtomicBool,
    /// The next result should say the connection's own session was lost.
    session_reset: AtomicBool,
}

impl std::fmt::Debug for RemoteExec {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RemoteExec")
            .field("transport", &self.inner.transport)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl RemoteExec {
    /// An environment behind `transport`; connects on first use.
    pub fn new(transport: Arc<dyn Transport>, config: RemoteConfig) -> Self {
        let label = config.label.clone().unwrap_or_else(|| transport.describe());
        Self {
            inner: Arc::new(Inner {
                transport,
                config,
                connection: tokio::sync::Mutex::new(None),
                environment: Mutex::new(EnvironmentInfo {
                    name: format!("remote: {label}"),
                    ..EnvironmentInfo::default()
                }),
                connected_before: AtomicBool::new(false),
                session_reset: AtomicBool::new(false),
            }),
        }
    }

    /// An environment reached by running `command_line` with `sh -c`.
    pub fn command(command_line: impl Into<String>, config: RemoteConfig) -> Self {
        Self::new(Arc::new(CommandTransport::new(command_line)), config)
    }

    /// Connects now (so that a wrong command line shows at once, and
    /// [`CommandExec::environment`] knows the remote's tools).
    pub async fn connect(&self) -> Result<InitializeResult, Error> {
        let mut slot = self.inner.connection.lock().await;
        let (_, result) = self.open(&mut slot).await?;
        Ok(result)
    }

    /// The configuration.
    pub fn config(&self) -> &RemoteConfig {
        &self.inner.config
    }

    fn remote(&self) -> String {
        self.inner
            .config
            .label
            .clone()
            .unwrap_or_else(|| self.inner.transport.describe())
    }

    /// Closes the connection: the server stops what it started (unless
    /// jobs are kept), saves a named session, and exits; waits up to
    /// `limit` for that.
    pub async fn shutdown(&self, limit: Duration) {
        let connection = self.inner.connection.lock().await.take();
        if let Some(connection) = connection {
            connection.shut_down(limit).await;
        }
    }

    /// The live connection, opened (again) if there is none.
    async fn connection(&self) -> Result<Arc<Connection>, Error> {
        let mut slot = self.inner.connection.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.is_closed()
        {
            return Ok(Arc::clone(connection));
        }
        Ok(self.open(&mut slot).await?.0)
    }

    /// Opens a connection into `slot` and shakes hands. The caller holds
    /// the slot's lock, so concurrent calls share one attempt.
    async fn open(
        &self,
        slot: &mut Option<Arc<Connection>>,
    ) -> Result<(Arc<Connection>, InitializeResult), Error> {
        let remote = self.remote();
        let link = self.inner.transport.connect().await?;
        let connection = Connection::start(remote.clone(), link);
        let params = InitializeParams {
            protocol: protocol::PROTOCOL_VERSION.to_owned(),
            client: format!("bashtool {}", env!("CARGO_PKG_VERSION")),
            session: self.inner.config.session.clone(),
            keep_jobs: self.inner.config.keep_jobs,
            jobs: self.inner.config.jobs,
            working_directory: self.inner.config.working_directory.clone(),
            sandbox: self.inner.config.sandbox.clone(),
            allowed_domains: self.inner.config.allowed_domains.clone(),
            limits: self.inner.config.limits,
            redact: self.inner.config.redact.clone(),
            warm_shells: self.inner.config.warm_shells,
        };
        let limit = self.inner.config.handshake_timeout;
        let answer = tokio::time::timeout(
            limit,
            connection.request::<InitializeResult>(method::INITIALIZE, &params),
        )
        .await;
        let result = match answer {
            Err(_) => {
                return Err(Error::HandshakeTimeout {
                    remote,
                    seconds: limit.as_secs(),
                    stderr: connection.stderr(),
                    stray: connection.stray_line(),
                });
            }
            Ok(Err(Error::ConnectionLost { .. })) => {
                return Err(Error::ClosedDuringHandshake {
                    remote,
                    stderr: settled_stderr(&connection).await,
                });
            }
            Ok(Err(error)) => return Err(error),
            Ok(Ok(Err(error))) => {
                return Err(Error::Refused {
                    remote,
                    message: error.message,
                });
            }
            Ok(Ok(Ok(result))) => result,
        };
        if !protocol::compatible(&result.protocol) {
            return Err(Error::Refused {
                remote,
                message: protocol::mismatch_message(protocol::PROTOCOL_VERSION, &result.protocol),
            });
        }
        // A server that predates allowed domains ignores the field: its
        // network would be wide open where the user asked for a list.
        let limited = result
            .environment
            .sandbox
            .as_ref()
            .is_some_and(|sandbox| sandbox.network == "allowlist");
        if !self.inner.config.allowed_domains.is_empty() && !limited {
            return Err(Error::Refused {
                remote,
                message: "the client asked to limit the network to allowed domains \
                          (--allow-domain), but the server did not report an allow-list \
                          (a `bashtool serve` too old to know them?); nothing was run"
                    .to_owned(),
            });
        }
        let mut environment = result.environment.clone();
        environment.name = format!("remote: {remote}");
        *self
            .inner
            .environment
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = environment;
        let anonymous_session = self
            .inner
            .config
            .session
            .as_ref()
            .is_some_and(|session| session.name.is_none());
        if self.inner.connected_before.swap(true, Ordering::Relaxed) && anonymous_session {
            self.inner.session_reset.store(true, Ordering::Relaxed);
        }
        *slot = Some(Arc::clone(&connection));
        Ok((connection, result))
    }

    /// One request with the connection's errors turned into `E`.
    async fn request<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<Result<T, RpcError>, Error> {
        let connection = self.connection().await?;
        connection.request(method, params).await
    }

    async fn job_request<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, JobError> {
        match self.request(method, params).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(job_error(error)),
            Err(error) => Err(JobError::Environment {
                message: error.to_string(),
            }),
        }
    }
}

/// The transport's last words: it prints them just before exiting, a
/// moment after its stdout closed, so wait (briefly) for its stderr to end.
async fn settled_stderr(connection: &Connection) -> String {
    let _ = tokio::time::timeout(STDERR_SETTLE, connection.stderr_ended()).await;
    connection.stderr()
}

/// How long a failed handshake waits for the transport's error message.
const STDERR_SETTLE: Duration = Duration::from_secs(1);

fn job_error(error: RpcError) -> JobError {
    if error.code == protocol::code::JOB_ERROR
        && let Some(Ok(data)) = error.data.map(serde_json::from_value::<JobErrorData>)
    {
        return data.into();
    }
    JobError::Environment {
        message: error.message,
    }
}

fn exec_error(error: RpcError) -> ExecError {
    if error.code == protocol::code::EXEC_ERROR
        && let Some(Ok(data)) = error.data.map(serde_json::from_value::<ExecErrorData>)
    {
        return data.into();
    }
    ExecError::Other {
        message: error.message,
    }
}

/// How a remote call ended, seen from here.
enum Ending {
    Answered(Result<serde_json::Value, RpcError>),
    Lost,
    /// The server did not answer within timeout + grace + margin.
    Backstop,
    /// The server did not answer within grace + margin of a cancel.
    CancelUnanswered,
}

async fn wait_for_answer(
    call: &mut Call,
    options: &SpawnOptions,
    grace: Duration,
    closed: CancellationToken,
) -> Ending {
    let far = Instant::now() + Duration::from_secs(10 * 365 * 24 * 3600);
    let backstop = options.timeout.map_or(far, |timeout| {
        Instant::now() + timeout + grace + BACKSTOP_MARGIN
    });
    let mut cancel_deadline = far;
    let mut cancel_sent = false;
    loop {
        tokio::select! {
            reply = call.reply() => {
                return reply.map_or(Ending::Lost, Ending::Answered);
            }
            () = closed.cancelled() => {
                // The reader failed the call already, or is about to.
                return call.reply().await.map_or(Ending::Lost, Ending::Answered);
            }
            () = options.cancel.cancelled(), if !cancel_sent => {
                call.cancel();
                cancel_sent = true;
                cancel_deadline = Instant::now() + grace + BACKSTOP_MARGIN;
            }
            () = tokio::time::sleep_until(backstop) => {
                call.cancel();
                return Ending::Backstop;
            }
            () = tokio::time::sleep_until(cancel_deadline) => {
                return Ending::CancelUnanswered;
            }
        }
    }
}

fn empty_result(options: &SpawnOptions, started: Instant) -> CommandResult {
    let mut result = CommandResult::exited(0, options.output.finish());
    result.exit_code = None;
    result.duration = started.elapsed();
    result
}

#[async_trait::async_trait]
impl CommandExec for RemoteExec {
    async fn spawn(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let started = Instant::now();
        let connection = self.connection().await.map_err(|error| ExecError::Other {
            message: error.to_string(),
        })?;
        let params = SpawnParams {
            command: command.to_owned(),
            cwd: options.cwd.clone(),
            timeout_ms: options
                .timeout
                .map(|timeout| u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
            env: options.env.clone(),
            mode: options.mode,
        };
        // Dropping this call (the caller dropped our future) sends `cancel`.
        let mut call = connection.send(method::SPAWN, &params, Some(options.output.clone()));
        let grace = self.inner.config.remote_kill_grace;
        let ending = wait_for_answer(&mut call, &options, grace, connection.closed()).await;
        let mut result = match ending {
            Ending::Answered(Ok(value)) => {
                let answer: SpawnResult =
                    serde_json::from_value(value).map_err(|error| ExecError::Other {
                        message: Error::BadAnswer {
                            remote: self.remote(),
                            method: method::SPAWN.to_owned(),
                            message: error.to_string(),
                        }
                        .to_string(),
                    })?;
                into_command_result(answer, &options)
            }
            Ending::Answered(Err(error)) => return Err(exec_error(error)),
            Ending::Lost => {
                let mut result = empty_result(&options, started);
                result.cancelled = options.cancel.is_cancelled();
                result.notes.push(format!(
                    "{} (while the command ran; its output so far is above)",
                    connection.lost()
                ));
                result
            }
            Ending::Backstop => {
                let mut result = empty_result(&options, started);
                result.timed_out = true;
                result.notes.push(format!(
                    "the remote environment `{}` did not answer within the timeout and the kill grace; bashtool asked it to stop the command",
                    self.remote()
                ));
                result
            }
            Ending::CancelUnanswered => {
                let mut result = empty_result(&options, started);
                result.cancelled = true;
                result.notes.push(format!(
                    "the remote environment `{}` did not confirm the cancel in time; it was asked to stop the command",
                    self.remote()
                ));
                result
            }
        };
        if self.inner.session_reset.swap(false, Ordering::Relaxed) {
            result.notes.push(
                "the connection to the remote environment was re-established: the session's shell started anew (cwd, variables and functions were reset)".to_owned(),
            );
        }
        Ok(result)
    }

    fn environment(&self) -> EnvironmentInfo {
        self.inner
            .environment
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn into_command_result(answer: SpawnResult, options: &SpawnOptions) -> CommandResult {
    // Masked over there before the bytes came: counted for the note here.
    options.output.add_redacted(answer.redacted);
    CommandResult {
        exit_code: answer.exit_code,
        signal: answer.signal,
        duration: Duration::from_millis(answer.duration_ms),
        timed_out: answer.timed_out,
        cancelled: answer.cancelled,
        output: options.output.finish(),
        log_file: answer.log_file,
        notes: answer.notes,
        background: answer.background,
        interactive: answer.interactive,
        shell: answer.shell,
        working_directory: answer.working_directory,
    }
}

#[async_trait::async_trait]
impl Jobs for RemoteExec {
    async fn list(&self) -> Vec<JobInfo> {
        match self
            .job_request::<ListResult>(method::JOBS_LIST, &serde_json::json!({}))
            .await
        {
            Ok(list) => list.jobs,
            Err(error) => {
                // The port cannot say "unknown"; the log can.
                tracing::warn!(%error, "listing the remote jobs failed");
                Vec::new()
            }
        }
    }

    async fn read(
        &self,
        id: &str,
        from: ReadFrom,
        max_bytes: usize,
    ) -> Result<JobOutput, JobError> {
        let params = ReadParams {
            job: id.to_owned(),
            from: from.into(),
            max_bytes,
        };
        self.job_request(method::JOBS_READ, &params).await
    }

    async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<JobInfo, JobError> {
        let connection = self
            .connection()
            .await
            .map_err(|error| JobError::Environment {
                message: error.to_string(),
            })?;
        let params = WaitParams {
            job: id.to_owned(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        };
        let mut call = connection.send(method::JOBS_WAIT, &params, None);
        let reply = tokio::select! {
            reply = call.reply() => reply,
            () = cancel.cancelled() => {
                call.cancel();
                call.reply().await
            }
        };
        match reply {
            None => Err(JobError::Environment {
                message: connection.lost().to_string(),
            }),
            Some(Err(error)) => Err(job_error(error)),
            Some(Ok(value)) => {
                serde_json::from_value(value).map_err(|error| JobError::Environment {
                    message: error.to_string(),
                })
            }
        }
    }

    async fn stop(&self, id: &str) -> Result<JobInfo, JobError> {
        let params = JobParams { job: id.to_owned() };
        self.job_request(method::JOBS_STOP, &params).await
    }

    async fn write(
        &self,
        id: &str,
        input: JobInput,
        yield_after: Duration,
    ) -> Result<JobOutput, JobError> {
        let params = WriteParams {
            job: id.to_owned(),
            input,
            yield_ms: u64::try_from(yield_after.as_millis()).unwrap_or(u64::MAX),
        };
        self.job_request(method::JOBS_WRITE, &params).await
    }

    async fn stop_all(&self) {
        if let Err(error) = self
            .job_request::<serde_json::Value>(method::JOBS_STOP_ALL, &serde_json::json!({}))
            .await
        {
            tracing::warn!(%error, "stopping the remote jobs failed");
        }
    }
}

#[cfg(test)]
mod tests;
