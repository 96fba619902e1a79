//! A plain HTTP server of the test's on the host's loopback that records
//! the request line of every connection, so that a test decides from its
//! own records what reached it (through the sandbox's proxy or not).

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The server: answers `200 pong` to the paths `serves` accepts, `404` to
/// the others, one request per connection.
pub struct HttpProbe {
    /// Its port on 127.0.0.1.
    pub port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl HttpProbe {
    /// Starts it on a free port of 127.0.0.1; `serves` is given each
    /// request's path.
    pub fn start(serves: fn(&str) -> bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 65_536 {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let found = line.split(' ').nth(1).is_some_and(serves);
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
                let (status, body) = if found {
                    ("200 OK", "pong\n")
                } else {
                    ("404 Not Found", "no\n")
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { port, requests }
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.requests().len()
    }

    /// The paths asked for, in order.
    pub fn paths(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter_map(|line| line.split(' ').nth(1).map(str::to_owned))
            .collect()
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
