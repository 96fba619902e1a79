//! The wire protocol between [`crate::RemoteExec`] and `bashtool serve`:
//! JSON-RPC 2.0, one message per line (see `docs/protocol.md`). Both sides
//! use these types, so they cannot drift apart.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use bashtool_core::{
    BackgroundJob, EnvironmentInfo, ExecError, ExecMode, JobError, JobInfo, JobInput,
    LimitSettings, ReadFrom, RedactSettings, ShellState, Stream,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol's name; the version follows the slash.
pub const PROTOCOL_NAME: &str = "bashtool-serve";
/// The major version: both sides must speak the same one.
pub const PROTOCOL_MAJOR: u32 = 1;
/// What both sides announce in `initialize`.
pub const PROTOCOL_VERSION: &str = "bashtool-serve/1";

/// The JSON-RPC version string.
pub const JSONRPC: &str = "2.0";

/// Method names.
pub mod method {
    /// Handshake; must come first.
    pub const INITIALIZE: &str = "initialize";
    /// Run a command (request); output arrives as [`OUTPUT`] notifications.
    pub const SPAWN: &str = "spawn";
    /// Live output of a `spawn` (server → client notification).
    pub const OUTPUT: &str = "output";
    /// Stop the request with this id (client → server notification).
    pub const CANCEL: &str = "cancel";
    /// Where and how commands run.
    pub const ENVIRONMENT: &str = "environment";
    /// The jobs port.
    pub const JOBS_LIST: &str = "jobs/list";
    /// Read a window of a job's output.
    pub const JOBS_READ: &str = "jobs/read";
    /// Wait for a job to end.
    pub const JOBS_WAIT: &str = "jobs/wait";
    /// Stop a job's tree.
    pub const JOBS_STOP: &str = "jobs/stop";
    /// Type into an interactive job.
    pub const JOBS_WRITE: &str = "jobs/write";
    /// Stop every job.
    pub const JOBS_STOP_ALL: &str = "jobs/stop_all";
}

/// JSON-RPC error codes.
pub mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The message is not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The two sides speak different major versions.
    pub const PROTOCOL_MISMATCH: i64 = -32001;
    /// A request came before `initialize`, or `initialize` came twice.
    pub const NOT_INITIALIZED: i64 = -32002;
    /// The environment could not run the command (`data`: `ExecErrorData`).
    pub const EXEC_ERROR: i64 = -32010;
    /// The jobs call did nothing (`data`: `JobErrorData`).
    pub const JOB_ERROR: i64 = -32011;
    /// The server is shutting down.
    pub const SHUTTING_DOWN: i64 = -32012;
}

/// The major version in `bashtool-serve/<major>[.<minor>]`, if it is one.
pub fn major_version(version: &str) -> Option<u32> {
    let number = version.strip_prefix(PROTOCOL_NAME)?.strip_prefix('/')?;
    number.split('.').next()?.parse().ok()
}

/// The error both sides give when the other speaks another major version.
pub fn mismatch_message(client: &str, server: &str) -> String {
    format!(
        "protocol mismatch: the client speaks {client} and the server speaks {server}; install the same bashtool version on both sides"
    )
}

/// True when `other` can talk to this build.
pub fn compatible(other: &str) -> bool {
    major_version(other) == Some(PROTOCOL_MAJOR)
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// One of [`code`].
    pub code: i64,
    /// For a person.
    pub message: String,
    /// Structured detail ([`ExecErrorData`], [`JobErrorData`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// Any message on the wire. Requests have `id` and `method`, notifications
/// only `method`, responses `id` and `result` or `error`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Message {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// Request and response id. Clients send integers.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub id: Option<Value>,
    /// The method of a request or notification.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub method: Option<String>,
    /// Its params.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub params: Option<Value>,
    /// A successful response's value.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub result: Option<Value>,
    /// A failed response's error.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<RpcError>,
}

impl Message {
    /// A request.
    pub fn request(id: u64, method: &str, params: Value) -> Self {
        Self {
            jsonrpc: JSONRPC.to_owned(),
            id: Some(Value::from(id)),
            method: Some(method.to_owned()),
            params: Some(params),
            ..Self::default()
        }
    }

    /// A notification.
    pub fn notification(method: &str, params: Value) -> Self {
        Self {
            jsonrpc: JSONRPC.to_owned(),
            method: Some(method.to_owned()),
            params: Some(params),
            ..Self::default()
        }
    }

    /// A response: the value or the error.
    pub fn response(id: Value, outcome: Result<Value, RpcError>) -> Self {
        let (result, error) = match outcome {
            Ok(value) => (Some(value), None),
            Err(error) => (None, Some(error)),
        };
        Self {
            jsonrpc: JSONRPC.to_owned(),
            id: Some(id),
            result,
            error,
            ..Self::default()
        }
    }

    /// One line of the wire: the JSON and a newline. JSON never contains a
    /// raw newline (it is escaped in strings), so lines are messages.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// Which session the client wants (`initialize`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SessionRequest {
    /// A named session is kept in a file on the server's side and survives
    /// reconnects; `None` is a session that lives as long as the connection.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
}

/// Which jobs the jobs methods see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobsSource {
    /// The jobs started over this connection.
    #[default]
    Connection,
    /// Every job recorded for the server's user (`bashtool jobs`), started by
    /// any bashtool process there.
    Recorded,
}

/// `initialize` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitializeParams {
    /// The client's protocol version ([`PROTOCOL_VERSION`]).
    pub protocol: String,
    /// The client's program and version, for logs.
    pub client: String,
    /// A persistent session, or `None` for a fresh shell per call (unless the
    /// server was started with `--session`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub session: Option<SessionRequest>,
    /// Background jobs keep running when the connection closes.
    #[serde(default)]
    pub keep_jobs: bool,
    /// Which jobs the jobs methods see.
    #[serde(default)]
    pub jobs: JobsSource,
    /// Where commands run by default, a directory on the server's side.
    /// `None`: the server's `--cwd` (or its current directory).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub working_directory: Option<PathBuf>,
    /// The sandbox the client's user asked for (its `--sandbox`,
    /// `--network`, `--writable` and config file), applied over the
    /// server's own settings. `None`: the server's settings alone.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sandbox: Option<SandboxRequest>,
    /// Limit the commands' network to these domains (`--allow-domain`),
    /// through a proxy the server runs; the server refuses when it cannot
    /// (no sandbox, its network off, or a list of its own that does not
    /// cover these). Empty: the server's own setting.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub allowed_domains: Vec<String>,
    /// Resource limits per command the client asks for (its `--limit`):
    /// `{"pids": 64, "memory": 268435456, "cpu": 1.5}`, each may be `"off"`.
    /// The server applies them, capped by its own `--limit`; one it cannot
    /// enforce fails the handshake. Absent: the server's own settings.
    #[serde(skip_serializing_if = "LimitSettings::is_unset", default)]
    pub limits: LimitSettings,
    /// How the server masks secrets (`{"mode": "on"|"off", "env":
    /// [PATTERN, …]}`): the values of its own variables that its
    /// environment policy or `env` name, and the credential shapes, in
    /// what it sends (output, job reads) and keeps (logs, job outputs).
    /// Masking happens over there because only the server knows its
    /// variables. `None`: the server's own flags decide.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub redact: Option<RedactSettings>,
    /// Shells the server keeps started ahead of stateless calls (warm
    /// shells, `docs/warm-shells.md`), for a client that makes many calls
    /// (`mcp --stateless`); 0 (the default) for one that makes one. The
    /// server caps it at [`MAX_WARM_SHELLS`] and ignores it for a session.
    #[serde(skip_serializing_if = "no_warm_shells", default)]
    pub warm_shells: usize,
}

/// The sandbox settings a client sends in `initialize`: plain data, in the
/// sandbox's own names. Each field given replaces the server's setting
/// (`writable` and `protected` add to its lists); the server checks them
/// and refuses the handshake, saying why, if they are wrong or its kernel
/// cannot enforce them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SandboxRequest {
    /// `off`, `read-only` or `workspace-write`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mode: Option<String>,
    /// `on` or `off`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub network: Option<String>,
    /// More writable roots, on the server's side; relative ones are taken
    /// from the working directory.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub writable: Vec<PathBuf>,
    /// More paths kept read-only inside the writable roots, absolute, on
    /// the server's side.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub protected: Vec<PathBuf>,
}

impl SandboxRequest {
    /// True when it asks for nothing.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// The most warm shells a server keeps for one connection, whatever the
/// client asks.
pub const MAX_WARM_SHELLS: usize = 4;

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn no_warm_shells(value: &usize) -> bool {
    *value == 0
}

/// What the server can do.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Capabilities {
    /// Persistent sessions (`session` in `initialize`).
    pub sessions: bool,
    /// The jobs methods and background mode.
    pub jobs: bool,
    /// Sandbox modes the server can enforce (`off` always).
    pub sandbox_modes: Vec<String>,
    /// Interactive (PTY) jobs.
    pub interactive: bool,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitializeResult {
    /// The server's protocol version.
    pub protocol: String,
    /// The server's program and version.
    pub server: String,
    /// What it can do.
    pub capabilities: Capabilities,
    /// Where commands run, as the server sees it (`local` there).
    pub environment: EnvironmentInfo,
    /// The session in use, if any.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub session: Option<SessionInfo>,
}

/// The session a connection runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Its name; `None` for a connection's own session.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    /// Its state survives reconnects (kept in a file on the server's side).
    pub survives_reconnect: bool,
}

/// `spawn` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnParams {
    /// The script for `bash -c`.
    pub command: String,
    /// Where to run; `None`: the server's working directory.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cwd: Option<PathBuf>,
    /// The deadline, enforced by the server.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub timeout_ms: Option<u64>,
    /// Variables added for this call.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `foreground` or `background`.
    #[serde(default)]
    pub mode: ExecMode,
}

/// `output` params: raw bytes of one stream of a running `spawn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputParams {
    /// The id of the `spawn` request.
    pub id: u64,
    /// `stdout` or `stderr`.
    pub stream: Stream,
    /// The bytes, base64 (standard alphabet, padded): output need not be
    /// UTF-8 and must arrive exactly as written.
    pub data: String,
}

impl OutputParams {
    /// The notification for `bytes`.
    pub fn encode(id: u64, stream: Stream, bytes: &[u8]) -> Self {
        Self {
            id,
            stream,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// The raw bytes.
    pub fn bytes(&self) -> Result<Vec<u8>, base64::DecodeError> {
        base64::engine::general_purpose::STANDARD.decode(&self.data)
    }
}

/// The `output` notification as one wire line, built directly: base64
/// needs no JSON escaping, and this is the hot path of a command that
/// prints a lot. Parses to the same [`Message`] as the generic way.
pub fn output_line(id: u64, stream: Stream, bytes: &[u8]) -> String {
    let mut line = String::with_capacity(bytes.len() * 4 / 3 + 96);
    line.push_str(OUTPUT_LINE_PREFIX);
    line.push_str(&format!(
        r#","params":{{"id":{id},"stream":"{}","data":""#,
        stream.as_str()
    ));
    base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut line);
    line.push_str("\"}}\n");
    line
}

/// How every [`output_line`] starts: the client's fast path recognises it.
pub const OUTPUT_LINE_PREFIX: &str = r#"{"jsonrpc":"2.0","method":"output""#;

/// An `output` notification read without building a [`Value`] tree.
#[derive(Debug, Deserialize)]
pub struct OutputNotification<'a> {
    /// Its params; `data` borrowed from the line.
    #[serde(borrow)]
    pub params: OutputParamsRef<'a>,
}

/// [`OutputParams`] borrowing its data.
#[derive(Debug, Deserialize)]
pub struct OutputParamsRef<'a> {
    /// The id of the `spawn` request.
    pub id: u64,
    /// `stdout` or `stderr`.
    pub stream: Stream,
    /// The bytes, base64.
    pub data: &'a str,
}

impl OutputParamsRef<'_> {
    /// The raw bytes.
    pub fn bytes(&self) -> Result<Vec<u8>, base64::DecodeError> {
        base64::engine::general_purpose::STANDARD.decode(self.data)
    }
}

/// `spawn` result: everything of a [`bashtool_core::CommandResult`] but
/// the output, which the client built from the `output` notifications.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SpawnResult {
    /// The exit code; `null` when it ended by a signal or did not end.
    pub exit_code: Option<i32>,
    /// The signal that ended it (`SIGKILL`).
    pub signal: Option<String>,
    /// How long the call took on the server.
    pub duration_ms: u64,
    /// The server's timeout stopped it.
    pub timed_out: bool,
    /// A `cancel` stopped it.
    pub cancelled: bool,
    /// The full log, a path on the server's machine.
    pub log_file: Option<PathBuf>,
    /// What the environment wants the model to know.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Set for `mode: background`.
    pub background: Option<BackgroundJob>,
    /// Set when an interactive command runs on past the call.
    #[serde(default)]
    pub interactive: Option<bashtool_core::InteractiveStatus>,
    /// Where the session's shell stands.
    pub shell: Option<ShellState>,
    /// Where it ran.
    pub working_directory: Option<PathBuf>,
    /// How many secrets the server masked in the output it sent.
    #[serde(skip_serializing_if = "is_zero", default)]
    pub redacted: u64,
}

// serde's `skip_serializing_if` passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// `cancel` params.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelParams {
    /// The id of the request to stop (`spawn` or `jobs/wait`).
    pub id: u64,
}

/// `jobs/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListResult {
    /// Oldest first.
    pub jobs: Vec<JobInfo>,
}

/// `jobs/stop` params (and the job of every jobs method).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobParams {
    /// The job's id.
    pub job: String,
}

/// Where `jobs/read` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadPosition {
    /// At this cursor.
    Cursor(u64),
    /// The last lines.
    Tail(usize),
}

impl From<ReadFrom> for ReadPosition {
    fn from(from: ReadFrom) -> Self {
        match from {
            ReadFrom::Cursor(cursor) => Self::Cursor(cursor),
            ReadFrom::Tail { lines } => Self::Tail(lines),
        }
    }
}

impl From<ReadPosition> for ReadFrom {
    fn from(position: ReadPosition) -> Self {
        match position {
            ReadPosition::Cursor(cursor) => Self::Cursor(cursor),
            ReadPosition::Tail(lines) => Self::Tail { lines },
        }
    }
}

/// `jobs/read` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadParams {
    /// The job's id.
    pub job: String,
    /// `{"cursor": N}` or `{"tail": LINES}`.
    pub from: ReadPosition,
    /// The most bytes of text to return.
    pub max_bytes: usize,
}

/// `jobs/wait` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitParams {
    /// The job's id.
    pub job: String,
    /// The longest wait.
    pub timeout_ms: u64,
}

/// `jobs/write` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteParams {
    /// The job's id.
    pub job: String,
    /// Text and keys.
    pub input: JobInput,
    /// How long to collect what the job prints.
    pub yield_ms: u64,
}

/// Why the environment could not run a command: [`ExecError`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExecErrorData {
    /// The working directory does not exist.
    MissingDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// The working directory is a file.
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The shell is not installed.
    ShellNotFound {
        /// The program.
        program: String,
    },
    /// The process could not start.
    Spawn {
        /// The program.
        program: String,
        /// What the system said.
        message: String,
    },
    /// Anything else.
    Other {
        /// What went wrong.
        message: String,
    },
}

impl From<&ExecError> for ExecErrorData {
    fn from(error: &ExecError) -> Self {
        match error {
            ExecError::MissingDirectory { path } => Self::MissingDirectory { path: path.clone() },
            ExecError::NotADirectory { path } => Self::NotADirectory { path: path.clone() },
            ExecError::ShellNotFound { program } => Self::ShellNotFound {
                program: program.clone(),
            },
            ExecError::Spawn { program, source } => Self::Spawn {
                program: program.clone(),
                message: source.to_string(),
            },
            ExecError::Other { message } => Self::Other {
                message: message.clone(),
            },
        }
    }
}

impl From<ExecErrorData> for ExecError {
    fn from(data: ExecErrorData) -> Self {
        match data {
            ExecErrorData::MissingDirectory { path } => Self::MissingDirectory { path },
            ExecErrorData::NotADirectory { path } => Self::NotADirectory { path },
            ExecErrorData::ShellNotFound { program } => Self::ShellNotFound { program },
            ExecErrorData::Spawn { program, message } => Self::Spawn {
                program,
                source: std::io::Error::other(message),
            },
            ExecErrorData::Other { message } => Self::Other { message },
        }
    }
}

impl From<&ExecError> for RpcError {
    fn from(error: &ExecError) -> Self {
        Self {
            code: code::EXEC_ERROR,
            message: error.to_string(),
            data: serde_json::to_value(ExecErrorData::from(error)).ok(),
        }
    }
}

/// Why a jobs call did nothing: [`JobError`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobErrorData {
    /// No job has this id.
    UnknownJob {
        /// The id.
        id: String,
    },
    /// The job takes no input.
    NotInteractive {
        /// The id.
        id: String,
    },
    /// The job has ended.
    Ended {
        /// The id.
        id: String,
    },
    /// The request is wrong.
    InvalidInput {
        /// The field.
        field: String,
        /// What is allowed.
        message: String,
    },
    /// The environment failed.
    Environment {
        /// What went wrong.
        message: String,
    },
}

impl From<&JobError> for JobErrorData {
    fn from(error: &JobError) -> Self {
        match error.clone() {
            JobError::UnknownJob { id } => Self::UnknownJob { id },
            JobError::NotInteractive { id } => Self::NotInteractive { id },
            JobError::Ended { id } => Self::Ended { id },
            JobError::InvalidInput { field, message } => Self::InvalidInput { field, message },
            JobError::Environment { message } => Self::Environment { message },
        }
    }
}

impl From<JobErrorData> for JobError {
    fn from(data: JobErrorData) -> Self {
        match data {
            JobErrorData::UnknownJob { id } => Self::UnknownJob { id },
            JobErrorData::NotInteractive { id } => Self::NotInteractive { id },
            JobErrorData::Ended { id } => Self::Ended { id },
            JobErrorData::InvalidInput { field, message } => Self::InvalidInput { field, message },
            JobErrorData::Environment { message } => Self::Environment { message },
        }
    }
}

impl From<&JobError> for RpcError {
    fn from(error: &JobError) -> Self {
        Self {
            code: code::JOB_ERROR,
            message: error.to_string(),
            data: serde_json::to_value(JobErrorData::from(error)).ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_major() {
        assert_eq!(major_version("bashtool-serve/1"), Some(1));
        assert_eq!(major_version("bashtool-serve/2.3"), Some(2));
        assert_eq!(major_version("other/1"), None);
        assert!(compatible("bashtool-serve/1.4"));
        assert!(!compatible("bashtool-serve/2"));
        assert_eq!(
            mismatch_message("bashtool-serve/2", "bashtool-serve/1"),
            "protocol mismatch: the client speaks bashtool-serve/2 and the server speaks bashtool-serve/1; install the same bashtool version on both sides"
        );
    }

    #[test]
    fn output_bytes_survive_exactly() {
        let bytes: Vec<u8> = (0..=255).chain([b'\n', 0, 0xff, b'\r']).collect();
        let line = Message::notification(
            method::OUTPUT,
            serde_json::to_value(OutputParams::encode(7, Stream::Stderr, &bytes)).expect("json"),
        )
        .to_line();
        assert_eq!(line.matches('\n').count(), 1);
        assert!(line.ends_with('\n'));
        let message: Message = serde_json::from_str(&line).expect("parse");
        let params: OutputParams =
            serde_json::from_value(message.params.expect("params")).expect("params");
        assert_eq!(params.id, 7);
        assert_eq!(params.stream, Stream::Stderr);
        assert_eq!(params.bytes().expect("base64"), bytes);
    }

    #[test]
    fn the_direct_output_line_is_the_generic_one() {
        let bytes = b"\x00\xffhi\n\"\\";
        let direct = output_line(9, Stream::Stdout, bytes);
        assert!(direct.starts_with(OUTPUT_LINE_PREFIX));
        assert!(direct.ends_with("}}\n"));
        let generic = Message::notification(
            method::OUTPUT,
            serde_json::to_value(OutputParams::encode(9, Stream::Stdout, bytes)).expect("json"),
        );
        let parsed: Message = serde_json::from_str(&direct).expect("parse");
        assert_eq!(parsed.method, generic.method);
        assert_eq!(parsed.params, generic.params);
        let fast: OutputNotification<'_> = serde_json::from_str(&direct).expect("fast parse");
        assert_eq!(fast.params.id, 9);
        assert_eq!(fast.params.bytes().expect("base64"), bytes);
    }

    #[test]
    fn errors_round_trip() {
        let error = JobError::InvalidInput {
            field: "job".to_owned(),
            message: "empty".to_owned(),
        };
        let wire = RpcError::from(&error);
        assert_eq!(wire.code, code::JOB_ERROR);
        let data: JobErrorData = serde_json::from_value(wire.data.expect("data")).expect("data");
        assert_eq!(JobError::from(data), error);
        let exec = ExecError::MissingDirectory {
            path: PathBuf::from("/nope"),
        };
        let wire = RpcError::from(&exec);
        let data: ExecErrorData = serde_json::from_value(wire.data.expect("data")).expect("data");
        assert!(matches!(
            ExecError::from(data),
            ExecError::MissingDirectory { path } if path == std::path::Path::new("/nope")
        ));
    }

    #[test]
    fn read_positions_are_tagged() {
        assert_eq!(
            serde_json::to_string(&ReadPosition::from(ReadFrom::Tail { lines: 3 })).expect("json"),
            r#"{"tail":3}"#
        );
        assert_eq!(
            serde_json::from_str::<ReadPosition>(r#"{"cursor":10}"#).expect("json"),
            ReadPosition::Cursor(10)
        );
    }
}
