//! `bashtool mcp --http ADDR:PORT`: MCP over streamable HTTP, at `/mcp`,
//! for clients that cannot spawn a stdio process (a web client, an agent
//! host talking to a container).
//!
//! rmcp's streamable-HTTP service speaks the protocol; hyper carries it
//! (HTTP/1.1, no TLS: put a reverse proxy in front for other machines).
//! Every connection is admitted within [`limits`] (a header timeout and a
//! cap on open connections), and every request passes [`guard::Guard`]
//! (path, `Host`, `Origin`, bearer token). Each MCP session gets its own
//! handler and shell ([`sessions`]); cancel and progress work as over
//! stdio because the handler is the stdio one.

mod guard;
mod limits;
mod sessions;
mod token;

use std::convert::Infallible;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

pub use guard::PATH;
use guard::{Guard, Refusal};
pub use limits::Limits;
use limits::{Connections, FULL_RESPONSE};
use sessions::Sessions;

use super::options::{HttpSettings, Settings};
use crate::signals::StopSignals;

/// The HTTP body every response carries.
type Body = BoxBody<Bytes, Infallible>;

/// Serves until SIGTERM, SIGINT or SIGHUP, then shuts every session down.
#[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
pub async fn serve(mut settings: Settings, http: HttpSettings) -> anyhow::Result<ExitCode> {
    let HttpSettings {
        address,
        token_file,
        limits,
    } = http;
    let grace = settings.shutdown_grace();
    // Installed before the address is announced: a client that signals the
    // server as soon as it knows it gets the clean shutdown.
    let signals = StopSignals::install()?;
    // A bad token file is refused before anything listens.
    let given_token = token_file.as_deref().map(token::read).transpose()?;
    if settings.environment.remote.is_some() {
        // As over stdio: a wrong line (or an upload that cannot be made)
        // fails now, before anything listens or a token is made, not at
        // the first client's initialize.
        let first = settings.environment.open(&settings.tool).await?;
        first.close(grace).await?;
    }
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("--http {address}: cannot listen there"))?;
    let bound = listener.local_addr()?;
    let loopback = bound.ip().is_loopback();
    if !loopback {
        eprintln!(
            "bashtool: warning: listening on {bound}, which other machines can reach: anyone \
             with the token can run commands as you, and the connection is plain HTTP (put a \
             TLS proxy in front)"
        );
    }
    let (token, generated) = if let Some(token) = given_token {
        (token, None)
    } else {
        #[cfg(target_os = "linux")]
        let state = bashtool_env_local::default_state_dir()?;
        #[cfg(not(target_os = "linux"))]
        let state = crate::relay::default_state_dir()?;
        let (token, path) = token::generate(&state, bound.port())?;
        (token, Some(path))
    };
    eprintln!("bashtool: MCP over HTTP at http://{bound}{PATH}");
    if let Some(path) = &generated {
        // Printed once, here; never logged.
        eprintln!(
            "bashtool: bearer token (also in {}): {token}",
            path.display()
        );
    }
    #[cfg(target_os = "linux")]
    crate::environment::tie_to_this_process(&mut settings.environment.local);
    let sessions = Sessions::new(settings, grace);
    let stop = CancellationToken::new();
    let manager = Arc::new(LocalSessionManager::default());
    let service = {
        let sessions = sessions.clone();
        StreamableHttpService::new(
            move || Ok(sessions.open()),
            Arc::clone(&manager),
            StreamableHttpServerConfig::default()
                .with_cancellation_token(stop.child_token())
                // The guard checks Host and Origin, knowing the bound address.
                .disable_allowed_hosts()
                .with_max_request_body_bytes(super::gate::MAX_LINE_BYTES),
        )
    };
    let guard = Guard::new(token, loopback);
    let outcome = accept_until_signal(&listener, &service, &manager, &guard, limits, signals).await;
    stop.cancel();
    sessions.shut_down_all().await;
    if let Some(path) = generated {
        remove_token_file(&path);
    }
    outcome.map(|()| ExitCode::SUCCESS)
}

type McpService = StreamableHttpService<sessions::SessionServer, LocalSessionManager>;

async fn accept_until_signal(
    listener: &TcpListener,
    service: &McpService,
    manager: &Arc<LocalSessionManager>,
    guard: &Guard,
    limits: Limits,
    mut signals: StopSignals,
) -> anyhow::Result<()> {
    let connections = Connections::new(limits.max_connections);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            signal = signals.next() => { tracing::info!("{signal}: stopping"); return Ok(()) }
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: the next may work.
                tracing::warn!(%error, "accepting a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(slot) = connections.admit() else {
            tracing::warn!(
                %peer,
                max = limits.max_connections,
                "turned a connection away: every open connection has the token"
            );
            turn_away(&stream);
            continue;
        };
        let service = service.clone();
        let manager = Arc::clone(manager);
        let guard = guard.clone();
        let trust = slot.trust();
        let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
            let mut service = service.clone();
            let manager = Arc::clone(&manager);
            let verdict = guard.check(request.uri().path(), request.headers());
            if verdict.is_ok() {
                trust.grant();
            }
            async move {
                match verdict {
                    Ok(()) if request.method() == Method::DELETE => {
                        Ok(end_session(request, &mut service, &manager).await)
                    }
                    Ok(()) => service.call(request).await,
                    Err(refusal) => {
                        tracing::info!(%peer, ?refusal, "request refused");
                        Ok(refused(refusal))
                    }
                }
            }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            // The header timeout needs a timer; it also bounds how long a
            // connection may sit idle between requests.
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .serve_connection(TokioIo::new(stream), handler);
        tokio::spawn(async move {
            tokio::select! {
                outcome = connection => {
                    if let Err(error) = outcome {
                        tracing::debug!(%peer, %error, "connection ended");
                    }
                }
                () = slot.closed().cancelled() => {
                    tracing::debug!(%peer, "connection closed to make room");
                }
            }
            drop(slot);
        });
    }
}

/// `DELETE /mcp`: ends the session named by `Mcp-Session-Id` with `204 No
/// Content` (rmcp answers `202 Accepted`, which clients such as the
/// Python SDK take for a failure), or answers `404 Not Found` for an id
/// that names no open session, as for any other request with one.
async fn end_session(
    request: Request<Incoming>,
    service: &mut McpService,
    manager: &LocalSessionManager,
) -> Response<Body> {
    let id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(Arc::<str>::from);
    if let Some(id) = &id
        && !manager.has_session(id).await.unwrap_or(false)
    {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: no MCP session has this Mcp-Session-Id (it ended, or never began)",
        );
    }
    let Ok(response) = service.call(request).await;
    if response.status() == StatusCode::ACCEPTED {
        let mut ended = Response::new(Full::new(Bytes::new()).boxed());
        *ended.status_mut() = StatusCode::NO_CONTENT;
        return ended;
    }
    response
}

/// A plain-text answer with `status`.
fn plain(status: StatusCode, message: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{message}\n"))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Answers `503` if the socket takes it at once (never waiting on a peer
/// that does not read), then closes the connection.
fn turn_away(stream: &TcpStream) {
    let _ = stream.try_write(FULL_RESPONSE);
}

fn refused(refusal: Refusal) -> Response<Body> {
    let (status, message) = match refusal {
        Refusal::NotFound => (
            StatusCode::NOT_FOUND,
            format!("not found: the MCP endpoint is {PATH}"),
        ),
        Refusal::Forbidden(message) => (StatusCode::FORBIDDEN, format!("forbidden: {message}")),
        Refusal::Unauthorized(message) => {
            (StatusCode::UNAUTHORIZED, format!("unauthorized: {message}"))
        }
    };
    let mut response = Response::new(Full::new(Bytes::from(message + "\n")).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    // A refused peer does not keep the connection (and its slot).
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"bashtool\""),
        );
    }
    response
}

/// The generated token dies with its server.
fn remove_token_file(path: &Path) {
    if let Err(error) = std::fs::remove_file(path)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(%error, path = %path.display(), "could not remove the token file");
    }
}
