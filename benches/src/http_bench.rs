//! Item 11: an MCP round trip of `echo hi` over streamable HTTP
//! (`bashtool mcp --http`, loopback, bearer token, one MCP session) against
//! the same round trip over stdio (`bashtool mcp`), taking turns call by
//! call in the same run. Both servers keep a persistent shell.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::effort::Effort;
use crate::servers::bashtool_binary;
use crate::stats::{human, measure_interleaved, spread};
use crate::table::Row;

/// Longest a start or a single call may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// `bashtool mcp` with its cwd, config home and state in `dir`.
fn server_command(program: &Path, dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .arg("mcp")
        .args(args)
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG")
        .kill_on_drop(true);
    command
}

/// One `echo hi` round trip; an error or a missing `hi` is an error.
async fn echo(peer: &Peer<RoleClient>) {
    let params = CallToolRequestParams::new("bash").with_arguments(
        json!({"command": "echo hi"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let result = tokio::time::timeout(DEADLINE, peer.call_tool(params))
        .await
        .expect("an answer in time")
        .expect("a tool result");
    let text: String = result
        .content
        .iter()
        .filter_map(|content| content.as_text().map(|text| text.text.as_str()))
        .collect();
    assert!(
        result.is_error != Some(true) && text.contains("hi"),
        "`echo hi` failed: {text}"
    );
}

/// The HTTP server, started on a free loopback port; its URL and token are
/// read from its stderr.
async fn start_http(
    program: &Path,
    dir: &Path,
) -> anyhow::Result<(tokio::process::Child, RunningService<RoleClient, ()>)> {
    let mut child = server_command(program, dir, &["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting bashtool mcp --http")?;
    let mut lines = BufReader::new(child.stderr.take().context("no stderr")?).lines();
    let (mut url, mut token) = (None, None);
    while url.is_none() || token.is_none() {
        let line = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .context("the HTTP server did not announce itself in time")??
            .context("the HTTP server exited")?;
        if let Some(rest) = line.strip_prefix("bashtool: MCP over HTTP at ") {
            url = Some(rest.to_owned());
        } else if let Some((_, value)) = line
            .strip_prefix("bashtool: bearer token (also in ")
            .and_then(|rest| rest.split_once("): "))
        {
            token = Some(value.to_owned());
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.unwrap_or_default())
            .auth_header(token.unwrap_or_default()),
    );
    let client = tokio::time::timeout(DEADLINE, ().serve(transport))
        .await
        .context("no initialize answer over HTTP in time")??;
    Ok((child, client))
}

pub async fn run(effort: Effort) -> anyhow::Result<Vec<Row>> {
    let program = bashtool_binary()?;
    let dir = tempfile::tempdir()?;
    let (_http_server, http) = start_http(&program, dir.path()).await?;
    let (transport, _stderr) =
        TokioChildProcess::builder(server_command(&program, dir.path(), &[]))
            .stderr(Stdio::null())
            .spawn()
            .context("starting bashtool mcp")?;
    let stdio = tokio::time::timeout(DEADLINE, ().serve(transport))
        .await
        .context("no initialize answer over stdio in time")??;
    let (over_http, over_stdio) = measure_interleaved(
        20,
        effort.runs(500),
        || echo(http.peer()),
        || echo(stdio.peer()),
    )
    .await;
    let _ = tokio::time::timeout(DEADLINE, http.cancel()).await;
    let _ = tokio::time::timeout(DEADLINE, stdio.cancel()).await;
    Ok(vec![Row {
        number: "11",
        what:
            "MCP round trip of `echo hi` over streamable HTTP (loopback, bearer token, one session)"
                .into(),
        ours: spread(&over_http),
        baseline: format!("same call over stdio: {}", spread(&over_stdio)),
        ratio: format!(
            "{:.2}× (+{} per call)",
            over_http.median().as_secs_f64() / over_stdio.median().as_secs_f64(),
            human(over_http.median().saturating_sub(over_stdio.median()))
        ),
        target: "report",
        met: None,
    }])
}
