//! A plain HTTP server of the test's that records what reached it.

use std::io::{Read, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Answers one request per connection: `200` with the body `answer` gives
/// for the request's path, `404` when it gives none. Records each
/// request's first line.
pub struct RecordingServer {
    /// Its port.
    pub port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl RecordingServer {
    /// Starts it on `address` (`127.0.0.1:0`: a free port of loopback).
    pub fn start(address: &str, answer: impl Fn(&str) -> Option<String> + Send + 'static) -> Self {
        let listener = TcpListener::bind(address).expect("bind");
        let port = listener.local_addr().expect("address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let line = request_line(&mut stream);
                let body = line.split(' ').nth(1).and_then(&answer);
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
                let (status, body) = match body {
                    Some(body) => ("200 OK", body),
                    None => ("404 Not Found", "nothing here\n".to_owned()),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { port, requests }
    }

    /// The request lines that arrived, in order.
    pub fn requests(&self) -> Vec<String> {
        self.recorded().clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.recorded().len()
    }

    /// The paths asked for, in order.
    pub fn paths(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .filter_map(|line| line.split(' ').nth(1).map(str::to_owned))
            .collect()
    }

    fn recorded(&self) -> MutexGuard<'_, Vec<String>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The first line of the request's head, read up to its end (byte by
/// byte: nothing of the body is consumed).
fn request_line(stream: &mut impl Read) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 65_536 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}
