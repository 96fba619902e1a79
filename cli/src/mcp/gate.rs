//! The stdio gate between the client and rmcp.
//!
//! rmcp silently drops a line that is not JSON (to avoid error storms with
//! peers that echo). JSON-RPC asks for a `-32700 Parse error` reply, and a
//! client that sent a broken request would otherwise wait for an answer that
//! never comes, so the gate reads stdin itself: a line that is not JSON gets
//! that error; every other line goes on to rmcp unchanged. The gate also
//! records the ids of the session tool's `tools/call` requests in arrival
//! order for the session queue ([`super::order`]), since it is the only place
//! that sees that order. Calls of other tools (`bash_jobs`) and of unknown
//! tools never wait in that queue, so they are not recorded: an entry no
//! handler claims would hold up the next call.
//!
//! Lines are read with a hard cap ([`MAX_LINE_BYTES`], shared with `bashtool
//! serve` through [`super::stdio::read_line`]) that rmcp is told to accept
//! too, so every line either reaches rmcp or gets an error here; the rest
//! of an oversized line is skipped without being kept in memory.
//!
//! Everything written to stdout, rmcp's messages and the gate's errors, goes
//! through one writer task as whole lines, so the two never interleave.

use rmcp::RoleServer;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader, DuplexStream,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::order::ArrivalOrder;
pub use super::stdio::MAX_LINE_BYTES;
use super::stdio::{self, Line};

/// The transport rmcp serves on.
pub type Transport = AsyncRwTransport<RoleServer, DuplexStream, DuplexStream>;

/// Which calls wait their turn in the session: those of `tool`.
#[derive(Clone)]
pub struct SessionCalls {
    pub order: ArrivalOrder,
    pub tool: String,
}
/// Bytes buffered between the gate and rmcp.
const PIPE_BYTES: usize = 1024 * 1024;

/// The reader and writer to hand rmcp, connected through the gate to
/// `input` and `output`, and a token cancelled at the end of `input`.
///
/// rmcp lets running handlers finish for up to 5 s after its input ends;
/// the token lets the server stop their commands at once instead.
pub fn spawn<I, O>(
    input: I,
    output: O,
    session: Option<SessionCalls>,
) -> (Transport, CancellationToken)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let ((rmcp_reader, rmcp_writer), closed) = pipes(input, output, session);
    let transport =
        AsyncRwTransport::new_server(rmcp_reader, rmcp_writer).with_max_line_length(MAX_LINE_BYTES);
    (transport, closed)
}

/// The gate's two tasks, with the pipes rmcp reads from and writes to.
fn pipes<I, O>(
    input: I,
    output: O,
    session: Option<SessionCalls>,
) -> ((DuplexStream, DuplexStream), CancellationToken)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_reader) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_writer, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (errors, error_lines) = mpsc::unbounded_channel();
    let closed = CancellationToken::new();
    let input_done = closed.clone();
    tokio::spawn(async move {
        read_input(input, to_rmcp, errors, session).await;
        input_done.cancel();
    });
    tokio::spawn(write_output(from_rmcp, error_lines, output));
    ((rmcp_reader, rmcp_writer), closed)
}

/// The key that identifies a request id in the session queue.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

fn parse_error(detail: &str) -> String {
    error_answer(&Value::Null, detail)
}

fn error_answer(id: &Value, detail: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32700, "message": format!("Parse error: {detail}")},
    })
    .to_string()
}

/// The error for a request rmcp cannot read. rmcp answers those without
/// their id, and a client matching answers by id would wait forever, so the
/// gate answers them itself, with the id.
fn invalid_request(message: &Value) -> Option<String> {
    let id = message.get("id")?;
    message.get("method")?;
    // From the parsed value by reference: `from_value` takes it by value,
    // and a clone copied every string of every message.
    let problem =
        <rmcp::model::ClientJsonRpcMessage as serde::Deserialize>::deserialize(message).err()?;
    tracing::warn!(%problem, "invalid request");
    Some(
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32600, "message": format!("Invalid request: {problem}")},
        })
        .to_string(),
    )
}

async fn read_input<I: AsyncRead + Unpin>(
    input: I,
    mut to_rmcp: DuplexStream,
    errors: mpsc::UnboundedSender<String>,
    session: Option<SessionCalls>,
) {
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        match stdio::read_line(&mut reader, &mut line).await {
            Ok(Line::End) => break,
            Ok(Line::Complete) => {}
            Ok(Line::Oversized { size, id }) => {
                tracing::warn!(size, "message over the size limit; answered with an error");
                let _ = errors.send(error_answer(&id, &stdio::oversized_message(size)));
                continue;
            }
            Err(error) => {
                tracing::error!(%error, "reading stdin");
                break;
            }
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_slice(text) {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(%error, "not JSON; answered with a parse error");
                let _ = errors.send(parse_error(&error.to_string()));
                continue;
            }
        };
        if let Some(error) = invalid_request(&message) {
            let _ = errors.send(error);
            continue;
        }
        if let Some(session) = &session
            && message.get("method").and_then(Value::as_str) == Some("tools/call")
            && message.pointer("/params/name").and_then(Value::as_str) == Some(&session.tool)
            && let Some(id) = message.get("id")
        {
            session.order.record(id_key(id));
        }
        let mut forward = text.to_vec();
        forward.push(b'\n');
        if to_rmcp.write_all(&forward).await.is_err() {
            break;
        }
    }
    // Dropping `to_rmcp` is rmcp's end of input.
}

async fn write_output<O: AsyncWrite + Unpin>(
    from_rmcp: DuplexStream,
    mut error_lines: mpsc::UnboundedReceiver<String>,
    mut output: O,
) {
    let mut reader = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    let mut errors_open = true;
    loop {
        tokio::select! {
            read = reader.read_until(b'\n', &mut line) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                    break;
                }
                line.clear();
            }
            error = error_lines.recv(), if errors_open => {
                let Some(mut error) = error else {
                    errors_open = false;
                    continue;
                };
                error.push('\n');
                if output.write_all(error.as_bytes()).await.is_err()
                    || output.flush().await.is_err()
                {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":"ls"}}}"#;
    const JOBS: &str = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"bash_jobs","arguments":{"action":"list"}}}"#;
    const OTHER: &str = r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#;
    const BROKEN: &str = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"nope"}"#;

    #[tokio::test]
    async fn answers_non_json_and_forwards_the_rest_in_order() {
        let (mut client_in, server_in) = tokio::io::duplex(4096);
        let (server_out, mut client_out) = tokio::io::duplex(4096);
        let order = ArrivalOrder::default();
        let session = SessionCalls {
            order: order.clone(),
            tool: "bash".to_owned(),
        };
        let ((mut rmcp_reader, rmcp_writer), closed) = pipes(server_in, server_out, Some(session));
        client_in
            .write_all(format!("not json\n\n{CALL}\n{BROKEN}\n{JOBS}\n{OTHER}\n").as_bytes())
            .await
            .expect("written");
        drop(client_in);
        let mut forwarded = String::new();
        rmcp_reader
            .read_to_string(&mut forwarded)
            .await
            .expect("read");
        assert_eq!(forwarded, format!("{CALL}\n{JOBS}\n{OTHER}\n"));
        closed.cancelled().await;
        drop(rmcp_writer);
        let mut answered = String::new();
        client_out
            .read_to_string(&mut answered)
            .await
            .expect("read");
        let answers: Vec<Value> = answered
            .lines()
            .map(|line| serde_json::from_str(line).expect("json"))
            .collect();
        assert_eq!(answers.len(), 2);
        assert_eq!(answers[0]["error"]["code"], -32700);
        assert_eq!(answers[0]["id"], Value::Null);
        assert_eq!(answers[1]["error"]["code"], -32600);
        assert_eq!(answers[1]["id"], 8);
        // Only the bash call waits in the session: the `bash_jobs` call and
        // the unknown tool's call hold up nothing (issue 18, item 7).
        let turn = order.turn("7").await;
        drop(turn);
        tokio::time::pause();
        let started = tokio::time::Instant::now();
        let _next = order.turn("10").await;
        assert_eq!(started.elapsed(), std::time::Duration::ZERO);
    }
}
