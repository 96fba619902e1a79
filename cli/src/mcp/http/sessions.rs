//! One handler, and one shell, per HTTP MCP session.
//!
//! rmcp's streamable-HTTP service asks a factory for a handler whenever a
//! client sends `initialize`; the handler lives as long as that MCP session
//! (until `DELETE /mcp`, the idle timeout, or the server stops). Each gets
//! its own [`BashServer`] over its own persistent shell, as one stdio
//! connection does, so two clients never see each other's `cd`.
//!
//! When rmcp drops a session's handler, its shell is shut down and its
//! calls and jobs stopped, in a task the registry tracks; at server stop,
//! every session still open is shut down the same way and waited for.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio_util::task::TaskTracker;

use crate::environment::Exec;
use crate::mcp::backend::Backend;
use crate::mcp::options::Settings;
use crate::mcp::server::BashServer;

/// The open sessions of one HTTP server. Cheap to clone.
#[derive(Clone)]
pub struct Sessions {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    grace: Duration,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Open>>,
    closing: TaskTracker,
}

/// What must be shut down when a session ends.
struct Open {
    server: BashServer,
    environment: Exec,
}

impl Open {
    async fn close(self, grace: Duration, keep_jobs: bool) {
        self.server.shut_down(grace, keep_jobs).await;
        if let Err(error) = self.environment.close(grace).await {
            tracing::warn!(%error, "a session's shell did not shut down cleanly");
        }
    }
}

impl Sessions {
    pub fn new(settings: Settings, grace: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                settings,
                grace,
                next_id: AtomicU64::new(1),
                open: Mutex::new(HashMap::new()),
                closing: TaskTracker::new(),
            }),
        }
    }

    /// A handler for a new MCP session (rmcp's service factory). Locally
    /// cheap: the shell starts with the first call; a remote one connects
    /// (one round trip, plus the handshake). A session whose environment
    /// cannot be opened (a sandbox the kernel cannot enforce, a remote that
    /// refuses) still answers, its instructions and every call saying why;
    /// a remote one is tried again by each call.
    pub fn open(&self) -> SessionServer {
        let inner = &self.inner;
        let settings = &inner.settings;
        // A remote session connects now, as a stdio server does at start,
        // so that the model is told what the environment over there is.
        // rmcp asks for the handler synchronously, on a worker of the
        // multi-threaded runtime, which may block in place.
        let (environment, problem) = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current()
                .block_on(settings.environment.open_or_explain(&settings.tool))
        });
        let mut backend = Backend::new(settings, &environment);
        if let Some(problem) = &problem {
            backend.explain_problem(problem, settings.environment.remote.is_some());
        }
        let server = BashServer::new(backend, settings.progress_interval);
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                id,
                Open {
                    server: server.clone(),
                    environment,
                },
            );
        tracing::debug!(id, "MCP session opened");
        SessionServer {
            server,
            _life: Arc::new(Life {
                id,
                sessions: Arc::downgrade(inner),
            }),
        }
    }

    /// Shuts every open session down (their calls stopped, their shells
    /// ended, their jobs stopped unless kept) and waits up to the grace for
    /// that and for the sessions that ended before.
    pub async fn shut_down_all(&self) {
        let inner = &self.inner;
        let open: Vec<Open> = inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, open)| open)
            .collect();
        for session in open {
            inner
                .closing
                .spawn(session.close(inner.grace, inner.settings.environment.keep_jobs));
        }
        inner.closing.close();
        if tokio::time::timeout(inner.grace, inner.closing.wait())
            .await
            .is_err()
        {
            tracing::warn!("sessions still shutting down after {:?}", inner.grace);
        }
    }
}

/// Ends its session when rmcp drops the session's handler.
struct Life {
    id: u64,
    sessions: Weak<Inner>,
}

impl Drop for Life {
    fn drop(&mut self) {
        let Some(inner) = self.sessions.upgrade() else {
            return;
        };
        let open = inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        // Outside a runtime (the process is exiting) the shell's own drop
        // stops it.
        if let Some(open) = open
            && tokio::runtime::Handle::try_current().is_ok()
        {
            tracing::debug!(id = self.id, "MCP session ended");
            inner
                .closing
                .spawn(open.close(inner.grace, inner.settings.environment.keep_jobs));
        }
    }
}

/// The handler of one HTTP MCP session: the stdio server's, plus its life.
#[derive(Clone)]
pub struct SessionServer {
    server: BashServer,
    _life: Arc<Life>,
}

impl ServerHandler for SessionServer {
    fn get_info(&self) -> ServerConfig {
        self.server.get_info()
    }

    /// Only the versions that open a session with `initialize`: from
    /// 2026-07-28 on, MCP over HTTP has no sessions, and every request would
    /// get a fresh shell without the client being told.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .filter(|version| version.has_initialize())
                .cloned()
                .collect(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.server.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.server.call_tool(request, context).await
    }
}
