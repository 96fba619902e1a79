//! The domain proxy of a sandbox whose network is limited to allowed
//! domains (`--allow-domain`).
//!
//! The realm's network namespace has only a loopback: nothing inside can
//! reach the host or the internet, whatever it tries (`--noproxy`, a raw
//! socket, a hard-coded address, DNS to a public resolver). Its init made
//! a listening socket on the namespace's `127.0.0.1:3128` and handed it to
//! us (`realm.rs`); a socket stays in the namespace it was made in, so this
//! proxy, running in bashtool outside the sandbox, accepts the commands'
//! connections on it and makes its own to the allowed hosts from the
//! host's network. No process or thread of ours is inside.
//!
//! One port speaks three protocols, told apart by the first byte: SOCKS5
//! (`0x05`, `CONNECT` only, names resolved here: `socks5h`), HTTP
//! `CONNECT host:port` (tunnels: https, git over https), and absolute-form
//! plain HTTP (`GET http://host/path`: apt, plain-http indexes), forwarded
//! one request per connection with the `Host` header taken from the URL.
//! The host is checked against the list *before* any DNS query (a refused
//! name is never looked up, so it cannot carry data out either); a name is
//! resolved here and the address actually connected to is checked: a
//! loopback, private, link-local address, one of the host's own or on
//! the networks of its interfaces is reached only when the host was allowed by its exact name or address.
//!
//! Bounded: a client has 10 s to send its request head (64 KiB at most),
//! a name 10 s to resolve, a connection 10 s to open; at most 256
//! connections at once per sandbox. It runs on a thread of its own with a
//! current-thread runtime and ends when the sandbox is dropped.

mod address;
mod record;
mod wire;

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, oneshot};

use crate::domains::{AllowList, Decision, Host};
use crate::error::Error;
use record::{Reason, Record};
use wire::{HttpRequest, Parsed, Target, socks_reply};

/// The port of the proxy on the sandbox's own `127.0.0.1` (squid's port;
/// the same in every sandbox, so a session's saved variables stay right).
pub const PROXY_PORT: u16 = 3128;
/// Time a client has to send its whole request (shorter in this crate's
/// tests, which wait for it).
const HEAD_TIMEOUT: Duration = Duration::from_secs(if cfg!(test) { 2 } else { 10 });
/// Time a name has to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a connection to one address has to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Addresses of one name tried at most.
const MAX_ADDRESSES: usize = 8;
/// Connections open at once per sandbox; more are closed at once.
const MAX_CONNECTIONS: usize = 256;
/// Buffer of each direction of a connection.
const BUFFER: usize = 64 * 1024;
/// A request that arrives in more pieces than this is refused.
const MAX_READS: usize = 1024;

/// How names are resolved: the system's resolver, or in tests a table.
#[derive(Debug, Clone)]
pub enum Resolver {
    /// `getaddrinfo`, on the runtime's blocking threads.
    System,
    /// A fixed table (tests: a name that resolves to loopback).
    #[cfg(test)]
    Table(Vec<(String, Vec<IpAddr>)>),
}

/// A running proxy; dropping it stops it and closes its connections.
#[derive(Debug)]
pub struct Proxy {
    record: Arc<Record>,
    /// Dropped with the proxy: the server's loop ends.
    _stop: oneshot::Sender<()>,
}

/// What every connection's task shares.
#[derive(Debug)]
struct Shared {
    allowed: AllowList,
    record: Arc<Record>,
    resolver: Resolver,
}

impl Proxy {
    /// Serves `listener` (a listening TCP socket, wherever it lives) for
    /// the hosts `allowed` lets through.
    pub fn start(listener: OwnedFd, allowed: AllowList) -> Result<Self, Error> {
        Self::start_with(listener, allowed, Resolver::System)
    }

    /// As [`Proxy::start`], resolving names with `resolver`.
    pub fn start_with(
        listener: OwnedFd,
        allowed: AllowList,
        resolver: Resolver,
    ) -> Result<Self, Error> {
        let setup = |step: &str| {
            let step = step.to_owned();
            move |source| Error::Setup { step, source }
        };
        let listener = std::net::TcpListener::from(listener);
        listener
            .set_nonblocking(true)
            .map_err(setup("making the proxy's socket non-blocking"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(8)
            .thread_name("bashtool-dns")
            .build()
            .map_err(setup("starting the proxy's runtime"))?;
        let record = Arc::new(Record::default());
        let shared = Arc::new(Shared {
            allowed,
            record: Arc::clone(&record),
            resolver,
        });
        let (stop, stopped) = oneshot::channel();
        std::thread::Builder::new()
            .name("bashtool-proxy".to_owned())
            .spawn(move || {
                runtime.block_on(serve(listener, shared, stopped));
                // Name lookups still running end on their own.
                runtime.shutdown_background();
            })
            .map_err(setup("starting the proxy's thread"))?;
        Ok(Self {
            record,
            _stop: stop,
        })
    }

    /// Notes for what the proxy refused since the last time they were
    /// taken (one per host).
    pub fn take_notes(&self) -> Vec<String> {
        self.record.take_notes()
    }
}

/// The variables that point the commands' tools at the proxy: the usual
/// ones in both cases (curl, wget, pip, uv, npm, cargo, git, go, apt),
/// npm's, yarn's, pip's and cargo's own, and Node's switch to honour them.
/// `NO_PROXY` keeps the sandbox's own loopback direct, except names the
/// list allows exactly (then `localhost` means the host's, through the
/// proxy).
pub fn variables(allowed: &AllowList) -> Vec<(OsString, OsString)> {
    let http = format!("http://127.0.0.1:{PROXY_PORT}");
    let socks = format!("socks5h://127.0.0.1:{PROXY_PORT}");
    let direct: Vec<&str> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .filter(|name| !allowed.names_exactly(name))
        .collect();
    let no_proxy = direct.join(",");
    let mut variables: Vec<(String, String)> = Vec::new();
    for (name, value) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
        ("NO_PROXY", &no_proxy),
    ] {
        variables.push((name.to_owned(), value.clone()));
        variables.push((name.to_ascii_lowercase(), value.clone()));
    }
    for (name, value) in [
        ("npm_config_proxy", &http),
        ("npm_config_https_proxy", &http),
        ("npm_config_noproxy", &no_proxy),
        ("YARN_HTTP_PROXY", &http),
        ("YARN_HTTPS_PROXY", &http),
        ("PIP_PROXY", &http),
        ("CARGO_HTTP_PROXY", &http),
        ("NODE_USE_ENV_PROXY", &"1".to_owned()),
    ] {
        variables.push((name.to_owned(), value.clone()));
    }
    variables
        .into_iter()
        .map(|(name, value)| (OsString::from(name), OsString::from(value)))
        .collect()
}

/// Accepts until stopped; each connection is a task.
async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((client, _)) => {
                // Full: the client is closed at once (it sees a reset, not
                // a hang).
                if let Ok(slot) = Arc::clone(&slots).try_acquire_owned() {
                    let shared = Arc::clone(&shared);
                    tokio::spawn(async move {
                        handle(client, &shared).await;
                        drop(slot);
                    });
                }
            }
            // Out of descriptors, say: wait a little rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// How a client asked, which decides how it is answered.
#[derive(Debug)]
enum Kind {
    Connect,
    Forward(Vec<u8>),
    Socks,
}

/// A request read whole: what, where, and the bytes the client sent after
/// it (to go to the host once connected).
#[derive(Debug)]
struct Request {
    kind: Kind,
    target: Target,
    leftover: Vec<u8>,
}

/// Serves one client: reads its request, decides, connects, relays.
async fn handle(mut client: TcpStream, shared: &Shared) {
    let _ = client.set_nodelay(true);
    let request = match tokio::time::timeout(HEAD_TIMEOUT, read_request(&mut client)).await {
        Ok(Ok(request)) => request,
        Ok(Err(answer)) => {
            let _ = client.write_all(&answer).await;
            return;
        }
        Err(_) => {
            let _ = client
                .write_all(&wire::http_answer(
                    408,
                    "Request Timeout",
                    &format!(
                        "bashtool's sandbox proxy: the request did not arrive within {} s\n",
                        HEAD_TIMEOUT.as_secs()
                    ),
                ))
                .await;
            return;
        }
    };
    let Some(upstream) = open(&request, shared, &mut client).await else {
        return;
    };
    relay(client, upstream, request).await;
}

/// Connects to the request's host if it is allowed; otherwise answers the
/// client (and notes a refusal) and returns `None`.
async fn open(request: &Request, shared: &Shared, client: &mut TcpStream) -> Option<TcpStream> {
    let Target { host, port } = &request.target;
    let port = *port;
    let answer = |status: u16, reason: &str, socks: u8, text: String| match request.kind {
        Kind::Socks => wire::socks_answer(socks).to_vec(),
        _ => wire::http_answer(status, reason, &format!("{text}\n")),
    };
    let Some(parsed) = Host::parse(host) else {
        let text = format!(
            "bashtool's sandbox proxy: `{}` is not a host name",
            host.escape_debug()
        );
        let _ = client
            .write_all(&answer(
                400,
                "Bad Request",
                socks_reply::GENERAL_FAILURE,
                text,
            ))
            .await;
        return None;
    };
    let literal = matches!(parsed, Host::Address(_));
    let name = parsed.to_string();
    let refuse = |reason: Reason| {
        let text = record::explain(&name, &port.to_string(), literal, &reason);
        shared.record.refused(&name, port, literal, reason);
        answer(403, "Forbidden", socks_reply::NOT_ALLOWED, text)
    };
    let private = match shared.allowed.decide(&parsed) {
        Decision::NotListed => {
            let _ = client.write_all(&refuse(Reason::NotListed)).await;
            return None;
        }
        Decision::Allowed { private } => private,
    };
    let addresses = match &parsed {
        Host::Address(address) => vec![*address],
        Host::Name(name) => match resolve(&shared.resolver, name, port).await {
            Ok(addresses) if !addresses.is_empty() => addresses,
            Ok(_) | Err(_) => {
                let text = format!("bashtool's sandbox proxy: `{name}` could not be resolved");
                let _ = client
                    .write_all(&answer(
                        502,
                        "Bad Gateway",
                        socks_reply::HOST_UNREACHABLE,
                        text,
                    ))
                    .await;
                return None;
            }
        },
    };
    // DNS rebinding: the check is on the address connected to, after the
    // lookup, never on the name alone.
    let candidates: Vec<IpAddr> = if private {
        addresses.clone()
    } else {
        let own = address::own_networks();
        addresses
            .iter()
            .copied()
            .filter(|address| address::is_public(*address, &own))
            .collect()
    };
    if candidates.is_empty() {
        let _ = client
            .write_all(&refuse(Reason::Private(addresses[0])))
            .await;
        return None;
    }
    let mut last_error = String::from("no address");
    for address in candidates.into_iter().take(MAX_ADDRESSES) {
        let attempt = tokio::time::timeout(
            CONNECT_TIMEOUT,
            TcpStream::connect(SocketAddr::new(address, port)),
        )
        .await;
        match attempt {
            Ok(Ok(upstream)) => {
                let _ = upstream.set_nodelay(true);
                return Some(upstream);
            }
            Ok(Err(error)) => last_error = error.to_string(),
            Err(_) => "timed out".clone_into(&mut last_error),
        }
    }
    let text = format!(
        "bashtool's sandbox proxy: connecting to `{name}` port {port} failed: {last_error}"
    );
    let _ = client
        .write_all(&answer(
            502,
            "Bad Gateway",
            socks_reply::CONNECTION_REFUSED,
            text,
        ))
        .await;
    None
}

/// Says yes to the client, sends what it sent ahead, and copies both ways
/// until both sides are done.
async fn relay(mut client: TcpStream, mut upstream: TcpStream, request: Request) {
    let opened = match &request.kind {
        Kind::Connect => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\nProxy-Agent: bashtool\r\n\r\n")
                .await
        }
        Kind::Socks => {
            client
                .write_all(&wire::socks_answer(socks_reply::SUCCEEDED))
                .await
        }
        Kind::Forward(head) => upstream.write_all(head).await,
    };
    if opened.is_err() {
        return;
    }
    if !request.leftover.is_empty() && upstream.write_all(&request.leftover).await.is_err() {
        return;
    }
    let _ =
        tokio::io::copy_bidirectional_with_sizes(&mut client, &mut upstream, BUFFER, BUFFER).await;
}

/// The addresses of `name`.
async fn resolve(resolver: &Resolver, name: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
    match resolver {
        Resolver::System => {
            let lookup = tokio::net::lookup_host((name, port));
            let found = tokio::time::timeout(RESOLVE_TIMEOUT, lookup)
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
            let mut addresses: Vec<IpAddr> = Vec::new();
            for address in found {
                if !addresses.contains(&address.ip()) {
                    addresses.push(address.ip());
                }
            }
            Ok(addresses)
        }
        #[cfg(test)]
        Resolver::Table(table) => Ok(table
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, addresses)| addresses.clone())
            .unwrap_or_default()),
    }
}

/// Reads the client's request: SOCKS5 (its first byte is 5), or HTTP.
/// `Err`: the answer that refuses it (empty: just close).
async fn read_request(client: &mut TcpStream) -> Result<Request, Vec<u8>> {
    let mut buffer = Vec::with_capacity(1024);
    let mut reads = 0;
    read_more(client, &mut buffer, &mut reads).await?;
    match buffer[0] {
        5 => read_socks(client, buffer, &mut reads).await,
        // SOCKS4: "request rejected".
        4 => Err(vec![0, 0x5b, 0, 0, 0, 0, 0, 0]),
        _ => loop {
            match wire::parse_http(&buffer) {
                Parsed::Incomplete => read_more(client, &mut buffer, &mut reads).await?,
                Parsed::Done(request, used) => {
                    let (kind, target) = match request {
                        HttpRequest::Connect(target) => (Kind::Connect, target),
                        HttpRequest::Forward { target, head } => (Kind::Forward(head), target),
                    };
                    return Ok(Request {
                        kind,
                        target,
                        leftover: buffer.split_off(used),
                    });
                }
                Parsed::Bad(why) => {
                    return Err(wire::http_answer(
                        400,
                        "Bad Request",
                        &format!("bashtool's sandbox proxy: {why}\n"),
                    ));
                }
            }
        },
    }
}

/// SOCKS5: the greeting (only "no authentication"), then the request.
async fn read_socks(
    client: &mut TcpStream,
    mut buffer: Vec<u8>,
    reads: &mut usize,
) -> Result<Request, Vec<u8>> {
    loop {
        match wire::parse_socks_greeting(&buffer) {
            Parsed::Incomplete => read_more(client, &mut buffer, reads).await?,
            Parsed::Done(true, used) => {
                buffer.drain(..used);
                break;
            }
            Parsed::Done(false, _) => return Err(vec![5, 0xff]),
            Parsed::Bad(_) => return Err(Vec::new()),
        }
    }
    client.write_all(&[5, 0]).await.map_err(|_| Vec::new())?;
    loop {
        match wire::parse_socks_request(&buffer) {
            Parsed::Incomplete => read_more(client, &mut buffer, reads).await?,
            Parsed::Done(Ok(target), used) => {
                return Ok(Request {
                    kind: Kind::Socks,
                    target,
                    leftover: buffer.split_off(used),
                });
            }
            Parsed::Done(Err(code), _) => return Err(wire::socks_answer(code).to_vec()),
            Parsed::Bad(_) => return Err(Vec::new()),
        }
    }
}

/// Appends what the client sends next; `Err` (close) at its end, on an
/// error, or when a request dribbles in too many pieces.
async fn read_more(
    client: &mut TcpStream,
    buffer: &mut Vec<u8>,
    reads: &mut usize,
) -> Result<(), Vec<u8>> {
    *reads += 1;
    if *reads > MAX_READS {
        return Err(Vec::new());
    }
    let mut chunk = [0u8; 4096];
    match client.read(&mut chunk).await {
        Ok(0) | Err(_) => Err(Vec::new()),
        Ok(count) => {
            buffer.extend_from_slice(&chunk[..count]);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
