//! What a peer without the token can hold: nothing for long, and never
//! the whole server.
//!
//! - Every request's headers must arrive within the header timeout
//!   (hyper's, which also closes a connection left idle between
//!   requests), so a partial request holds its descriptor for seconds,
//!   not forever.
//! - At most `max_connections` are open at once. When the server is full,
//!   the oldest connection that has not yet presented the token is closed
//!   to make room: a flood of partial requests cannot lock out a client
//!   that has it. Only when every open connection has presented the token
//!   is a new one turned away, with `503` and at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How long a request's headers may take to arrive, by default.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How many connections may be open at once, by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The limits of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub header_timeout: Duration,
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

impl Limits {
    /// From `--http-header-timeout` and `--http-max-connections`, checked.
    pub fn from_flags(
        header_timeout_secs: Option<u64>,
        max_connections: Option<usize>,
    ) -> anyhow::Result<Self> {
        let mut limits = Self::default();
        if let Some(seconds) = header_timeout_secs {
            anyhow::ensure!(
                (1..=3600).contains(&seconds),
                "--http-header-timeout {seconds}: must be from 1 to 3600 seconds"
            );
            limits.header_timeout = Duration::from_secs(seconds);
        }
        if let Some(count) = max_connections {
            anyhow::ensure!(
                (1..=100_000).contains(&count),
                "--http-max-connections {count}: must be from 1 to 100000"
            );
            limits.max_connections = count;
        }
        Ok(limits)
    }
}

/// The open connections of one server. Cheap to clone.
#[derive(Clone)]
pub struct Connections {
    inner: Arc<Mutex<Registry>>,
    max: usize,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    /// By id, which is also the order they were accepted in.
    open: BTreeMap<u64, Open>,
}

struct Open {
    trusted: Arc<AtomicBool>,
    close: CancellationToken,
}

/// One admitted connection; it leaves the count when dropped.
pub struct Slot {
    id: u64,
    trusted: Arc<AtomicBool>,
    close: CancellationToken,
    connections: Connections,
}

/// Marks a connection as having presented the token; held by its request
/// handler.
#[derive(Clone)]
pub struct Trust(Arc<AtomicBool>);

impl Trust {
    /// A request on the connection presented the token: it is never closed
    /// to make room.
    pub fn grant(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Slot {
    /// What the connection's request handler marks it trusted with.
    pub fn trust(&self) -> Trust {
        Trust(Arc::clone(&self.trusted))
    }

    /// Cancelled when the connection is closed to make room.
    pub fn closed(&self) -> &CancellationToken {
        &self.close
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().open.remove(&self.id);
    }
}

impl Connections {
    pub fn new(max: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Registry::default())),
            max: max.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        // Every change is a single map operation: a poisoned map is whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a new connection, closing the oldest one without the token
    /// if the server is full; `None` when every open connection has
    /// presented the token (turn the new one away).
    pub fn admit(&self) -> Option<Slot> {
        let mut registry = self.lock();
        if registry.open.len() >= self.max {
            let oldest_untrusted = registry
                .open
                .iter()
                .find(|(_, open)| !open.trusted.load(Ordering::Relaxed))
                .map(|(id, _)| *id)?;
            if let Some(evicted) = registry.open.remove(&oldest_untrusted) {
                tracing::debug!(
                    connection = oldest_untrusted,
                    "closing a connection without the token to make room"
                );
                evicted.close.cancel();
            }
        }
        let id = registry.next_id;
        registry.next_id += 1;
        let trusted = Arc::new(AtomicBool::new(false));
        let close = CancellationToken::new();
        registry.open.insert(
            id,
            Open {
                trusted: Arc::clone(&trusted),
                close: close.clone(),
            },
        );
        drop(registry);
        Some(Slot {
            id,
            trusted,
            close,
            connections: self.clone(),
        })
    }

    /// How many connections are open.
    #[cfg(test)]
    fn count(&self) -> usize {
        self.lock().open.len()
    }
}

/// What a connection turned away gets before it is closed.
pub const FULL_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: text/plain; charset=utf-8\r\n\
connection: close\r\n\
retry-after: 1\r\n\
content-length: 73\r\n\
\r\n\
service unavailable: this server has as many connections as it takes now\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_room_by_closing_the_oldest_connection_without_the_token() {
        let connections = Connections::new(3);
        let first = connections.admit().expect("room");
        let second = connections.admit().expect("room");
        let third = connections.admit().expect("room");
        first.trust().grant();
        let fourth = connections.admit().expect("room made");
        assert!(!first.closed().is_cancelled());
        assert!(second.closed().is_cancelled());
        assert!(!third.closed().is_cancelled());
        assert_eq!(connections.count(), 3);
        // The closed one leaving later changes nothing.
        drop(second);
        assert_eq!(connections.count(), 3);
        third.trust().grant();
        fourth.trust().grant();
        assert!(connections.admit().is_none(), "all have the token");
        drop(fourth);
        assert!(connections.admit().is_some());
    }

    #[test]
    fn checks_the_flags() {
        assert_eq!(
            Limits::from_flags(None, None).expect("defaults"),
            Limits::default()
        );
        assert_eq!(
            Limits::from_flags(Some(2), Some(50)).expect("given"),
            Limits {
                header_timeout: Duration::from_secs(2),
                max_connections: 50
            }
        );
        assert_eq!(
            Limits::from_flags(Some(0), None)
                .expect_err("zero")
                .to_string(),
            "--http-header-timeout 0: must be from 1 to 3600 seconds"
        );
        assert_eq!(
            Limits::from_flags(None, Some(0))
                .expect_err("zero")
                .to_string(),
            "--http-max-connections 0: must be from 1 to 100000"
        );
    }

    #[test]
    fn the_full_response_is_well_formed() {
        let text = std::str::from_utf8(FULL_RESPONSE).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        assert!(head.contains(&format!("content-length: {}", body.len())));
    }
}
