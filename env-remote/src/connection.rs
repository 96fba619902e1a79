//! One live link to a server: requests out, responses and output in,
//! many calls multiplexed by id. A reader task routes each incoming line:
//! an `output` notification's bytes into the call's [`OutputCapture`], a
//! response to the call waiting for it. When the link ends, every waiting
//! call learns it at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bashtool_core::OutputCapture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::protocol::{
    self, CancelParams, Message, OutputNotification, OutputParams, RpcError, method,
};
use crate::transport::{Link, StderrTail, TransportProcess};

/// What a call gets back: the server's answer, or `None` when the link
/// ended first.
pub type Reply = Option<Result<Value, RpcError>>;

struct Pending {
    reply: oneshot::Sender<Result<Value, RpcError>>,
    output: Option<OutputCapture>,
}

/// A live link. Cheap to share (`Arc`).
pub struct Connection {
    remote: String,
    outgoing: mpsc::UnboundedSender<String>,
    pending: Mutex<HashMap<u64, Pending>>,
    next_id: AtomicU64,
    closed: CancellationToken,
    process: Mutex<Option<TransportProcess>>,
    stderr: StderrTail,
    /// The first line that was not a protocol message (a login banner, a
    /// shell's error), for the handshake's error.
    stray: Mutex<Option<String>>,
    /// Set when the other side sent a request, which no server does: the
    /// method it named (our own `initialize`, echoed back by a `cat`).
    not_a_server: Mutex<Option<String>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Connection")
            .field("remote", &self.remote)
            .field("closed", &self.closed.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts the reader and writer tasks on `link`.
    pub fn start(remote: String, link: Link) -> Arc<Self> {
        let (outgoing, queue) = mpsc::unbounded_channel();
        let stderr = link
            .process
            .as_ref()
            .map_or_else(StderrTail::none, TransportProcess::stderr);
        let connection = Arc::new(Self {
            remote,
            outgoing,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: CancellationToken::new(),
            process: Mutex::new(link.process),
            stderr,
            stray: Mutex::new(None),
            not_a_server: Mutex::new(None),
        });
        tokio::spawn(write_loop(link.writer, queue, connection.closed.clone()));
        tokio::spawn(read_loop(Arc::downgrade(&connection), link.reader));
        connection
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<u64, Pending>> {
        // Inserts and removes are single operations: a poisoned map is whole.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The link has ended (or is ending): no answer will come.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Fires when the link ends.
    pub fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// The error for calls cut off by the end of the link.
    pub fn lost(&self) -> Error {
        if let Some(method) = self
            .not_a_server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            return Error::NotAServer {
                remote: self.remote.clone(),
                method,
            };
        }
        Error::ConnectionLost {
            remote: self.remote.clone(),
            stderr: self.stderr.text(),
        }
    }

    /// The first line the other side printed that is not the protocol.
    pub fn stray_line(&self) -> Option<String> {
        self.stray
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn remember_stray(&self, line: &[u8]) {
        let mut stray = self.stray.lock().unwrap_or_else(PoisonError::into_inner);
        if stray.is_none() {
            let text = String::from_utf8_lossy(line);
            let text = text.trim_end();
            let shown: String = text.chars().take(200).collect();
            *stray = Some(if shown.len() < text.len() {
                format!("{shown}...")
            } else {
                shown
            });
        }
    }

    /// What the transport wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// Returns once the transport closed its stderr (it exited).
    pub async fn stderr_ended(&self) {
        self.stderr.ended().await;
    }

    /// Sends a request; output notifications for it go into `output`.
    pub fn send(
        self: &Arc<Self>,
        method: &str,
        params: &impl Serialize,
        output: Option<OutputCapture>,
    ) -> Call {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, receiver) = oneshot::channel();
        self.pending().insert(id, Pending { reply, output });
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        let line = Message::request(id, method, params).to_line();
        if self.outgoing.send(line).is_err() || self.is_closed() {
            // The reader may already have failed every pending call; make
            // sure this one learns it too.
            self.pending().remove(&id);
        }
        Call {
            connection: Arc::clone(self),
            id,
            receiver: Some(receiver),
        }
    }

    /// Sends a request and decodes its answer.
    pub async fn request<T: DeserializeOwned>(
        self: &Arc<Self>,
        method: &str,
        params: &impl Serialize,
    ) -> Result<Result<T, RpcError>, Error> {
        let mut call = self.send(method, params, None);
        match call.reply().await {
            None => Err(self.lost()),
            Some(Err(error)) => Ok(Err(error)),
            Some(Ok(value)) => {
                serde_json::from_value(value)
                    .map(Ok)
                    .map_err(|error| Error::BadAnswer {
                        remote: self.remote.clone(),
                        method: method.to_owned(),
                        message: error.to_string(),
                    })
            }
        }
    }

    fn cancel(&self, id: u64) {
        let params = serde_json::to_value(CancelParams { id }).unwrap_or(Value::Null);
        let _ = self
            .outgoing
            .send(Message::notification(method::CANCEL, params).to_line());
    }

    /// Closes the server's input (it stops what it started, unless asked
    /// to keep jobs, and exits), then waits up to `limit` for the transport
    /// to end.
    pub async fn shut_down(&self, limit: Duration) {
        self.closed.cancel();
        let process = self
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(process) = process {
            process.finish(limit).await;
        }
    }

    fn route(&self, message: Message) {
        if let Some(name) = &message.method {
            if name == method::OUTPUT {
                self.route_output(message.params);
            } else if message.id.is_some() {
                // A request: no server sends one. This is not a server (a
                // `cat` echoing ours): every call fails now, saying so.
                tracing::warn!(method = %name, "the other side sent a request: not a bashtool serve");
                *self
                    .not_a_server
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(name.clone());
                self.fail_all();
            } else {
                tracing::debug!(method = %name, "ignoring a notification from the server");
            }
            return;
        }
        let Some(id) = message.id.as_ref().and_then(Value::as_u64) else {
            tracing::warn!(?message.error, "the server sent a response without an id");
            return;
        };
        let Some(pending) = self.pending().remove(&id) else {
            return;
        };
        let outcome = match (message.result, message.error) {
            (_, Some(error)) => Err(error),
            (Some(result), None) => Ok(result),
            (None, None) => Ok(Value::Null),
        };
        let _ = pending.reply.send(outcome);
    }

    fn route_output(&self, params: Option<Value>) {
        let Some(Ok(params)) = params.map(serde_json::from_value::<OutputParams>) else {
            tracing::warn!("the server sent an output notification this client cannot read");
            return;
        };
        self.push_output(params.id, params.stream, params.bytes());
    }

    fn push_output(
        &self,
        id: u64,
        stream: bashtool_core::Stream,
        bytes: Result<Vec<u8>, base64::DecodeError>,
    ) {
        let capture = self
            .pending()
            .get(&id)
            .and_then(|pending| pending.output.clone());
        let Some(capture) = capture else {
            return;
        };
        match bytes {
            Ok(bytes) => capture.push(stream, &bytes),
            Err(error) => tracing::warn!(%error, "undecodable output from the server"),
        }
    }

    fn fail_all(&self) {
        self.closed.cancel();
        // Dropping the senders wakes every waiting call with "lost".
        self.pending().clear();
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Closing the server's input (the writer task ends) is what stops
        // its processes; the transport process is killed when dropped.
        self.closed.cancel();
    }
}

/// One request in flight. Dropping it before the answer came tells the
/// server to stop it (a `cancel` message; the link stays open).
pub struct Call {
    connection: Arc<Connection>,
    id: u64,
    receiver: Option<oneshot::Receiver<Result<Value, RpcError>>>,
}

impl Call {
    /// Asks the server to stop this request (its answer still comes).
    pub fn cancel(&self) {
        self.connection.cancel(self.id);
    }

    /// The answer; `None` when the link ended first. Cancel-safe: calling
    /// it again after a dropped `reply()` future keeps waiting.
    pub async fn reply(&mut self) -> Reply {
        let receiver = self.receiver.as_mut()?;
        let outcome = receiver.await.ok();
        self.receiver = None;
        outcome
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if self.receiver.is_some() && self.connection.pending().remove(&self.id).is_some() {
            self.connection.cancel(self.id);
        }
    }
}

async fn write_loop(
    mut writer: Box<dyn AsyncWrite + Send + Unpin>,
    mut queue: mpsc::UnboundedReceiver<String>,
    closed: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            line = queue.recv() => line,
            () = closed.cancelled() => None,
        };
        let Some(line) = line else { break };
        if writer.write_all(line.as_bytes()).await.is_err() {
            break;
        }
        // Batch what is already queued, then flush once.
        while let Ok(line) = queue.try_recv() {
            if writer.write_all(line.as_bytes()).await.is_err() {
                closed.cancel();
                return;
            }
        }
        if writer.flush().await.is_err() {
            break;
        }
    }
    closed.cancel();
    // Dropping the writer closes the server's stdin: its signal to stop.
    let _ = writer.shutdown().await;
}

async fn read_loop(
    connection: std::sync::Weak<Connection>,
    reader: Box<dyn tokio::io::AsyncRead + Send + Unpin>,
) {
    let mut reader = BufReader::with_capacity(256 * 1024, reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        let ended = matches!(reader.read_until(b'\n', &mut line).await, Ok(0) | Err(_));
        let Some(connection) = connection.upgrade() else {
            return;
        };
        if ended {
            connection.fail_all();
            return;
        }
        // The fast path for the bulk of the traffic: `output` lines as
        // `bashtool serve` writes them, decoded without a `Value` tree.
        if line.starts_with(protocol::OUTPUT_LINE_PREFIX.as_bytes())
            && let Ok(notification) = serde_json::from_slice::<OutputNotification<'_>>(&line)
        {
            connection.push_output(
                notification.params.id,
                notification.params.stream,
                notification.params.bytes(),
            );
            continue;
        }
        match serde_json::from_slice::<Message>(&line) {
            Ok(message) if message.jsonrpc == protocol::JSONRPC => connection.route(message),
            _ => {
                tracing::warn!(
                    line = %String::from_utf8_lossy(&line).trim_end(),
                    "ignoring a line that is not a protocol message (does the remote print to stdout at login?)"
                );
                connection.remember_stray(&line);
            }
        }
    }
}
