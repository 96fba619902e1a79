//! `RemoteExec` against a scripted server on an in-memory pipe: the
//! multiplexing, a lost link, cancel and drop, the version check.

use std::sync::Mutex as StdMutex;

use bashtool_core::Stream;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::sync::mpsc;

use super::*;
use crate::protocol::{Message, OutputParams};
use crate::transport::Link;

/// Hands the server end of each new in-memory link to the test.
#[derive(Debug)]
struct Pipes {
    servers: StdMutex<mpsc::UnboundedSender<DuplexStream>>,
}

#[async_trait::async_trait]
impl Transport for Pipes {
    async fn connect(&self) -> Result<Link, Error> {
        let (client, server) = tokio::io::duplex(1 << 20);
        let _ = self
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(server);
        let (reader, writer) = tokio::io::split(client);
        Ok(Link {
            reader: Box::new(reader),
            writer: Box::new(writer),
            process: None,
        })
    }

    fn describe(&self) -> String {
        "test pipe".to_owned()
    }
}

/// The test's side of one link: reads requests, writes lines.
struct FakeServer {
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    writer: tokio::io::WriteHalf<DuplexStream>,
}

impl FakeServer {
    fn new(stream: DuplexStream) -> Self {
        let (reader, writer) = tokio::io::split(stream);
        Self {
            lines: BufReader::new(reader).lines(),
            writer,
        }
    }

    async fn next(&mut self) -> Message {
        let line = self
            .lines
            .next_line()
            .await
            .expect("read")
            .expect("a message");
        serde_json::from_str(&line).expect("json")
    }

    async fn send(&mut self, message: Message) {
        self.writer
            .write_all(message.to_line().as_bytes())
            .await
            .expect("write");
    }

    async fn answer(&mut self, id: Value, result: Value) {
        self.send(Message::response(id, Ok(result))).await;
    }

    /// Answers `initialize` with `protocol`.
    async fn handshake(&mut self, protocol: &str) {
        let message = self.next().await;
        assert_eq!(message.method.as_deref(), Some(method::INITIALIZE));
        let result = json!({
            "protocol": protocol, "server": "fake",
            "capabilities": {"sessions": true, "jobs": true, "sandbox_modes": ["off"], "interactive": false},
            "environment": {"name": "local", "sandbox": null, "tools": ["rg"]},
        });
        self.answer(message.id.expect("id"), result).await;
    }
}

fn remote() -> (RemoteExec, mpsc::UnboundedReceiver<DuplexStream>) {
    let (sender, servers) = mpsc::unbounded_channel();
    let transport = Pipes {
        servers: StdMutex::new(sender),
    };
    (
        RemoteExec::new(Arc::new(transport), RemoteConfig::default()),
        servers,
    )
}

fn finished(exit_code: i32) -> Value {
    serde_json::to_value(SpawnResult {
        exit_code: Some(exit_code),
        ..SpawnResult::default()
    })
    .expect("json")
}

fn output(id: &Value, stream: Stream, bytes: &[u8]) -> Message {
    let params = OutputParams::encode(id.as_u64().expect("numeric id"), stream, bytes);
    Message::notification(method::OUTPUT, serde_json::to_value(params).expect("json"))
}

fn text(result: &CommandResult) -> Vec<String> {
    let (lines, _) = result.output.retained();
    lines.into_iter().map(|line| line.text.clone()).collect()
}

#[tokio::test]
async fn concurrent_calls_get_their_own_output_and_answers() {
    let (exec, mut servers) = remote();
    let first = exec.spawn("first", SpawnOptions::default());
    let second = exec.spawn("second", SpawnOptions::default());
    let serve = async {
        let mut server = FakeServer::new(servers.recv().await.expect("a link"));
        server.handshake("bashtool-serve/1").await;
        let mut requests = Vec::new();
        for _ in 0..2 {
            let message = server.next().await;
            let params: SpawnParams =
                serde_json::from_value(message.params.expect("params")).expect("spawn");
            requests.push((params.command, message.id.expect("id")));
        }
        requests.sort_by(|left, right| left.0.cmp(&right.0));
        let (first_id, second_id) = (requests[0].1.clone(), requests[1].1.clone());
        // Answered in the other order, output interleaved.
        server
            .send(output(&second_id, Stream::Stdout, b"two\n"))
            .await;
        server
            .send(output(&first_id, Stream::Stderr, b"one\xff\n"))
            .await;
        server.answer(second_id, finished(2)).await;
        server.answer(first_id, finished(1)).await;
        server
    };
    let (first, second, _server) = tokio::join!(first, second, serve);
    let (first, second) = (first.expect("first"), second.expect("second"));
    assert_eq!(
        (first.exit_code, text(&first)),
        (Some(1), vec!["one\u{FFFD}".to_owned()])
    );
    assert_eq!(
        (second.exit_code, text(&second)),
        (Some(2), vec!["two".to_owned()])
    );
    assert_eq!(exec.environment().name, "remote: test pipe");
    assert_eq!(exec.environment().tools, ["rg"]);
}

#[tokio::test]
async fn a_lost_link_ends_the_call_with_a_note_and_the_next_call_reconnects() {
    let (exec, mut servers) = remote();
    let call = exec.spawn("sleep 300", SpawnOptions::default());
    let serve = async {
        let mut server = FakeServer::new(servers.recv().await.expect("a link"));
        server.handshake("bashtool-serve/1").await;
        let message = server.next().await;
        server
            .send(output(
                &message.id.expect("id"),
                Stream::Stdout,
                b"partial\n",
            ))
            .await;
        drop(server);
    };
    let (result, ()) = tokio::join!(call, serve);
    let result = result.expect("a result, not an error");
    assert_eq!(result.exit_code, None);
    assert_eq!(text(&result), ["partial"]);
    assert_eq!(
        result.notes,
        [
            "the connection to the remote environment `test pipe` was lost; the server stops the processes it started when its connection closes; the next call reconnects (while the command ran; its output so far is above)"
        ]
    );
    let again = exec.spawn("true", SpawnOptions::default());
    let serve = async {
        let mut server = FakeServer::new(servers.recv().await.expect("a second link"));
        server.handshake("bashtool-serve/1").await;
        let message = server.next().await;
        server.answer(message.id.expect("id"), finished(0)).await;
        server
    };
    let (again, _server) = tokio::join!(again, serve);
    assert_eq!(again.expect("reconnected").exit_code, Some(0));
}

#[tokio::test]
async fn cancel_and_drop_send_a_cancel_message() {
    let (exec, mut servers) = remote();
    let cancel = CancellationToken::new();
    let call = exec.spawn("sleep 300", SpawnOptions::default().cancel(cancel.clone()));
    let serve = async {
        let mut server = FakeServer::new(servers.recv().await.expect("a link"));
        server.handshake("bashtool-serve/1").await;
        let request = server.next().await;
        let id = request.id.expect("id");
        cancel.cancel();
        let message = server.next().await;
        assert_eq!(message.method.as_deref(), Some(method::CANCEL));
        assert_eq!(message.params, Some(json!({"id": id})));
        let mut answer = finished(0);
        answer["exit_code"] = Value::Null;
        answer["cancelled"] = Value::Bool(true);
        server.answer(id, answer).await;
        server
    };
    let (result, mut server) = tokio::join!(call, serve);
    assert!(result.expect("result").cancelled);

    let dropped = exec.spawn("sleep 300", SpawnOptions::default());
    let request = tokio::select! {
        request = server.next() => request,
        _ = dropped => panic!("the call ended by itself"),
    };
    // The select dropped the call's future.
    let message = server.next().await;
    assert_eq!(message.method.as_deref(), Some(method::CANCEL));
    assert_eq!(message.params, Some(json!({"id": request.id.expect("id")})));
}

#[tokio::test]
async fn another_major_version_is_refused_naming_both() {
    let (exec, mut servers) = remote();
    let connect = exec.connect();
    let serve = async {
        let mut server = FakeServer::new(servers.recv().await.expect("a link"));
        server.handshake("bashtool-serve/2").await;
        server
    };
    let (outcome, _server) = tokio::join!(connect, serve);
    assert_eq!(
        outcome.expect_err("refused").to_string(),
        "the remote environment `test pipe` refused the connection: protocol mismatch: the client speaks bashtool-serve/1 and the server speaks bashtool-serve/2; install the same bashtool version on both sides"
    );
}

#[tokio::test]
async fn a_server_that_ignores_the_allowed_domains_is_refused() {
    let (sender, mut servers) = mpsc::unbounded_channel();
    let transport = Pipes {
        servers: StdMutex::new(sender),
    };
    let config = RemoteConfig {
        allowed_domains: vec!["pypi.org".to_owned()],
        ..RemoteConfig::default()
    };
    let exec = RemoteExec::new(Arc::new(transport), config);
    let connect = exec.connect();
    // An older server: no allow-list in what it reports (no sandbox).
    let serve = async {
        let mut server = FakeServer::new(servers.recv().await.expect("a link"));
        server.handshake("bashtool-serve/1").await;
        server
    };
    let (outcome, _server) = tokio::join!(connect, serve);
    assert_eq!(
        outcome.expect_err("refused").to_string(),
        "the remote environment `test pipe` refused the connection: the client asked to limit the network to allowed domains (--allow-domain), but the server did not report an allow-list (a `bashtool serve` too old to know them?); nothing was run"
    );
}
