//! One request, answered: each method of the protocol mapped onto the
//! environment's ports.

use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{CommandResult, JobOutput, OutputCapture, SpawnOptions, Stream};
use bashtool_env_remote::protocol::{
    self, JobParams, ListResult, ReadParams, RpcError, SpawnParams, SpawnResult, WaitParams,
    WriteParams, code, method,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::environment::Environment;
use super::outbox::Outbox;

/// What a request needs besides its params.
pub struct Request {
    /// Its id as a number (clients send integers): what `output` and
    /// `cancel` name it by.
    pub number: u64,
    pub method: String,
    pub params: Option<Value>,
    /// Fired by a `cancel` for this request.
    pub cancel: CancellationToken,
}

fn params<T: DeserializeOwned>(request: &Request) -> Result<T, RpcError> {
    serde_json::from_value(request.params.clone().unwrap_or(Value::Null)).map_err(|error| {
        RpcError::new(
            code::INVALID_PARAMS,
            format!("invalid params for {}: {error}", request.method),
        )
    })
}

fn json(value: &impl Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value)
        .map_err(|error| RpcError::new(code::INVALID_PARAMS, error.to_string()))
}

/// Answers `request` (not `initialize` or `cancel`, which the connection handles).
pub async fn answer(
    environment: &Environment,
    outbox: &Outbox,
    request: Request,
) -> Result<Value, RpcError> {
    match request.method.as_str() {
        method::SPAWN => spawn(environment, outbox, &request).await,
        method::ENVIRONMENT => json(&environment.exec.environment()),
        method::JOBS_LIST => json(&ListResult {
            jobs: environment.jobs.list().await,
        }),
        method::JOBS_READ => {
            let params: ReadParams = params(&request)?;
            let output = environment
                .jobs
                .read(&params.job, params.from.into(), params.max_bytes)
                .await;
            json(&masked(
                environment,
                output.map_err(|error| RpcError::from(&error))?,
            ))
        }
        method::JOBS_WAIT => {
            let params: WaitParams = params(&request)?;
            let timeout = Duration::from_millis(params.timeout_ms);
            let info = environment
                .jobs
                .wait(&params.job, timeout, request.cancel.clone())
                .await;
            json(&info.map_err(|error| RpcError::from(&error))?)
        }
        method::JOBS_STOP => {
            let params: JobParams = params(&request)?;
            let info = environment.jobs.stop(&params.job).await;
            json(&info.map_err(|error| RpcError::from(&error))?)
        }
        method::JOBS_WRITE => {
            let params: WriteParams = params(&request)?;
            let yield_after = Duration::from_millis(params.yield_ms);
            let output = environment
                .jobs
                .write(&params.job, params.input, yield_after)
                .await;
            json(&masked(
                environment,
                output.map_err(|error| RpcError::from(&error))?,
            ))
        }
        method::JOBS_STOP_ALL => {
            environment.jobs.stop_all().await;
            Ok(Value::Object(serde_json::Map::new()))
        }
        other => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!(
                "unknown method {other:?}; this server knows initialize, spawn, cancel, environment and jobs/list|read|wait|stop|write|stop_all"
            ),
        )),
    }
}

/// A job's output window with this side's secrets masked: its file is
/// masked as it is written, and this catches what reached it otherwise.
/// The cursors stay those of the file.
fn masked(environment: &Environment, mut output: JobOutput) -> JobOutput {
    if let Some(redactor) = &environment.redactor {
        output.text = redactor.redact(&output.text).into_owned();
        if let Some(screen) = &output.screen {
            output.screen = Some(redactor.redact(screen).into_owned());
        }
    }
    output
}

async fn spawn(
    environment: &Environment,
    outbox: &Outbox,
    request: &Request,
) -> Result<Value, RpcError> {
    let params: SpawnParams = params(request)?;
    // The server's capture writes the full log (env-local attaches it) and
    // keeps small windows of its own; the bytes go to the client, whose
    // capture makes what the model sees.
    // With secrets masked, the tap gets the masked text (see
    // `OutputCapture::set_raw_tap`): nothing secret leaves this side.
    let capture = OutputCapture::default().redacting(environment.redactor.clone());
    let tap_outbox = outbox.clone();
    let id = request.number;
    capture.set_raw_tap(Arc::new(move |stream: Stream, bytes: &[u8]| {
        tap_outbox.send(protocol::output_line(id, stream, bytes));
    }));
    let options = SpawnOptions {
        cwd: params.cwd,
        timeout: params.timeout_ms.map(Duration::from_millis),
        env: params.env,
        cancel: request.cancel.clone(),
        output: capture,
        mode: params.mode,
        yield_after: None,
    };
    match environment.exec.spawn(&params.command, options).await {
        Ok(result) => json(&spawn_result(result)),
        Err(error) => Err(RpcError::from(&error)),
    }
}

fn spawn_result(result: CommandResult) -> SpawnResult {
    SpawnResult {
        redacted: result.output.redacted(),
        exit_code: result.exit_code,
        signal: result.signal,
        duration_ms: u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
        timed_out: result.timed_out,
        cancelled: result.cancelled,
        log_file: result.log_file,
        notes: result.notes,
        background: result.background,
        interactive: result.interactive,
        shell: result.shell,
        working_directory: result.working_directory,
    }
}
