//! A minimal MCP client over stdio (the rmcp client, as in `cli/tests/mcp.rs`)
//! that can drive any shell server: it finds the server's shell tool and its
//! argument shape with `tools/list` instead of assuming ours.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Map, Value, json};

/// Longest a start or a single call may take: a server that hangs must cost
/// its row, not the whole suite.
const DEADLINE: Duration = Duration::from_secs(30);

/// How to start one server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Name in the table.
    pub label: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// A running server with the tool call that runs `echo hi` on it.
pub struct McpServer {
    client: RunningService<RoleClient, ()>,
    pid: Option<u32>,
    call: EchoCall,
    /// Keeps the server's cwd and state directory alive while it runs.
    _dir: tempfile::TempDir,
}

/// The `tools/call` that runs `echo hi`, for a given server.
#[derive(Debug, Clone)]
pub struct EchoCall {
    tool: String,
    arguments: Map<String, Value>,
}

impl EchoCall {
    pub fn tool(&self) -> &str {
        &self.tool
    }

    pub fn arguments(&self) -> &Map<String, Value> {
        &self.arguments
    }

    /// Picks the tool with a `command` argument (`bash` if there is one) and
    /// shapes the command as that argument's schema asks: a shell string
    /// (`"echo hi"`) or an argv array (`["echo", "hi"]`).
    fn for_tools(tools: &[Tool]) -> anyhow::Result<Self> {
        let command_schema = |tool: &Tool| {
            tool.input_schema
                .get("properties")
                .and_then(|properties| properties.get("command"))
                .cloned()
        };
        let tool = tools
            .iter()
            .filter(|tool| command_schema(tool).is_some())
            .min_by_key(|tool| tool.name != "bash")
            .with_context(|| {
                format!(
                    "no tool with a `command` argument among {:?}",
                    tools.iter().map(|tool| &tool.name).collect::<Vec<_>>()
                )
            })?;
        let wants_array = command_schema(tool)
            .and_then(|schema| schema.get("type").cloned())
            .is_some_and(|kind| kind == "array");
        let command = if wants_array {
            json!(["echo", "hi"])
        } else {
            json!("echo hi")
        };
        let mut arguments = Map::new();
        arguments.insert("command".into(), command);
        Ok(Self {
            tool: tool.name.to_string(),
            arguments,
        })
    }

    /// One round trip; an error answer or one without `hi` is an error, so
    /// that a server which fails fast cannot look fast.
    pub async fn run(&self, peer: &Peer<RoleClient>) -> anyhow::Result<()> {
        let params =
            CallToolRequestParams::new(self.tool.clone()).with_arguments(self.arguments.clone());
        let result = tokio::time::timeout(DEADLINE, peer.call_tool(params))
            .await
            .context("no answer in time")??;
        let text: String = result
            .content
            .iter()
            .filter_map(|content| content.as_text().map(|text| text.text.as_str()))
            .collect();
        if result.is_error == Some(true) || !text.contains("hi") {
            bail!("`echo hi` failed: {text}");
        }
        Ok(())
    }
}

/// What every server in the comparison runs with, whichever client starts
/// it: `dir` as its cwd, config and state home (so that no user setting
/// changes what it does), and the spec's environment. The driver scripts
/// pass their own environment and cwd on to the server, so this is set on
/// them.
pub fn isolate(command: &mut tokio::process::Command, spec: &ServerSpec, dir: &Path) {
    command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG")
        .envs(spec.env.iter().map(|(key, value)| (key, value)));
}

impl McpServer {
    /// Starts the server in a fresh temporary directory (its cwd, config and
    /// state home, so that no user setting changes what it does), initializes
    /// and lists its tools.
    pub async fn start(spec: &ServerSpec) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut command = tokio::process::Command::new(&spec.program);
        command.args(&spec.args);
        isolate(&mut command, spec, dir.path());
        // Servers log to stderr (mcp-shell-server on every request): keep it
        // out of the table.
        let (transport, _stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", spec.program.display()))?;
        let pid = transport.id();
        let client = tokio::time::timeout(DEADLINE, ().serve(transport))
            .await
            .context("no initialize answer in time")?
            .context("initialize")?;
        let tools = tokio::time::timeout(DEADLINE, client.list_all_tools())
            .await
            .context("no tools/list answer in time")??;
        let call = EchoCall::for_tools(&tools)?;
        Ok(Self {
            client,
            pid,
            call,
            _dir: dir,
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub fn peer(&self) -> Peer<RoleClient> {
        self.client.peer().clone()
    }

    pub fn echo_call(&self) -> EchoCall {
        self.call.clone()
    }

    pub async fn echo(&self) -> anyhow::Result<()> {
        self.call.run(self.client.peer()).await
    }

    /// One `tools/call` of the shell tool with `command` (a server of
    /// ours: the argument is a shell string); an error answer is an error.
    pub async fn run_command(&self, command: &str) -> anyhow::Result<()> {
        let mut arguments = Map::new();
        arguments.insert("command".into(), json!(command));
        let params = CallToolRequestParams::new(self.call.tool.clone()).with_arguments(arguments);
        let result = tokio::time::timeout(DEADLINE, self.client.peer().call_tool(params))
            .await
            .context("no answer in time")??;
        if result.is_error == Some(true) {
            let text: String = result
                .content
                .iter()
                .filter_map(|content| content.as_text().map(|text| text.text.as_str()))
                .collect();
            bail!("`{command}` failed: {text}");
        }
        Ok(())
    }

    /// Closes stdin (servers exit on EOF); the transport kills what is left.
    pub async fn stop(self) {
        let _ = tokio::time::timeout(DEADLINE, self.client.cancel()).await;
    }
}
