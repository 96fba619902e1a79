//! The MCP clients item 7 drives every server with: the rmcp client in this
//! process, and the official Python and TypeScript SDK clients, as the
//! scripts in `benches/clients/` run with the SDKs `benches/run` installs
//! into `<target>/bench-deps` (`client-venv`: `pip install mcp`;
//! `client-venv-1`: `pip install 'mcp<2'`, the 1.x line; `client-npm`:
//! `npm install @modelcontextprotocol/sdk`). Those are kept apart from the
//! comparators' own installs: `mcp-shell-server` pins `mcp < 2` and
//! `mcp-server-commands` pins its SDK, and a new user gets the newest of
//! each.

use std::path::{Path, PathBuf};

use crate::servers;

/// The driver scripts, in the source tree this suite was built from.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/clients");

/// How to start a driver script: the program and the arguments before the
/// script's own.
#[derive(Debug, Clone)]
pub struct Launcher {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// A client: its name with versions, and how to start it.
#[derive(Debug, Clone)]
pub struct Client {
    pub label: String,
    /// `Ok(None)` for rmcp (in this process), the script's launcher, or why
    /// the client is not available.
    pub launcher: Result<Option<Launcher>, String>,
}

/// The version of rmcp this suite was built with, from the workspace's
/// lock file.
fn rmcp_version() -> Option<String> {
    let lock = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"));
    lock.split("[[package]]").find_map(|block| {
        let mut lines = block.lines().map(str::trim);
        lines.find(|line| *line == "name = \"rmcp\"")?;
        let version = lines.find_map(|line| line.strip_prefix("version = "))?;
        Some(version.trim_matches('"').to_owned())
    })
}

/// `version = 3.11.7` from a venv's `pyvenv.cfg`.
fn venv_python_version(venv: &Path) -> Option<String> {
    let config = std::fs::read_to_string(venv.join("pyvenv.cfg")).ok()?;
    config.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "version").then(|| value.trim().to_owned())
    })
}

/// `node --version` without its `v`.
fn node_version(node: &Path) -> Option<String> {
    let output = std::process::Command::new(node)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().trim_start_matches('v').to_owned())
}

/// The first `name` on `PATH` that is a file.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

fn unknown(version: Option<String>) -> String {
    version.unwrap_or_else(|| "?".into())
}

fn rmcp() -> Client {
    Client {
        label: format!("rmcp {} (Rust)", unknown(rmcp_version())),
        launcher: Ok(None),
    }
}

/// The Python SDK client in the venv `deps/<venv>`; `line` says which
/// release line it is when that matters (`""` for the newest).
fn python(deps: &Path, venv: &str, line: &str) -> Client {
    let venv = deps.join(venv);
    let mcp = servers::pip_version(&venv, "mcp");
    let label = format!(
        "Python SDK{line} (mcp {}, jsonschema {}, Python {})",
        unknown(mcp.clone()),
        unknown(servers::pip_version(&venv, "jsonschema")),
        unknown(venv_python_version(&venv))
    );
    let program = venv.join("bin/python3");
    let launcher = if mcp.is_some() && program.is_file() {
        Ok(Some(Launcher {
            program,
            args: vec![format!("{SCRIPTS}/mcp_client.py")],
        }))
    } else {
        Err(format!(
            "not installed (`mcp` missing in {}; `benches/run` installs it)",
            venv.display()
        ))
    };
    Client { label, launcher }
}

fn typescript(deps: &Path) -> Client {
    let prefix = deps.join("client-npm");
    let sdk = servers::npm_version(&prefix, "@modelcontextprotocol/sdk");
    let node = on_path("node");
    let label = format!(
        "TypeScript SDK (@modelcontextprotocol/sdk {}, Node {})",
        unknown(sdk.clone()),
        unknown(node.as_deref().and_then(node_version))
    );
    let launcher = match (node, sdk) {
        (Some(node), Some(_)) => Ok(Some(Launcher {
            program: node,
            args: vec![
                format!("{SCRIPTS}/mcp_client.mjs"),
                "--npm-prefix".into(),
                prefix.display().to_string(),
            ],
        })),
        (None, _) => Err("not available: `node` is not on PATH".into()),
        (Some(_), None) => Err(format!(
            "not installed (@modelcontextprotocol/sdk missing in {}; `benches/run` installs it)",
            prefix.display()
        )),
    };
    Client { label, launcher }
}

/// The clients, rmcp first.
pub fn all() -> Vec<Client> {
    match servers::deps_dir() {
        Ok(deps) => vec![
            rmcp(),
            python(&deps, "client-venv", ""),
            // The 1.x line is still what many installs have (frameworks and
            // servers pin `mcp < 2`), and it costs clients differently: see
            // the validation time in its rows.
            python(&deps, "client-venv-1", ", 1.x line"),
            typescript(&deps),
        ],
        Err(error) => {
            let missing = |label: &str| Client {
                label: label.to_owned(),
                launcher: Err(format!("{error:#}")),
            };
            vec![
                rmcp(),
                missing("Python SDK"),
                missing("Python SDK, 1.x line"),
                missing("TypeScript SDK"),
            ]
        }
    }
}

/// `rmcp 3.9.0 (Rust); Python SDK (mcp 2.3.0, …); TypeScript SDK (…)`,
/// with `not installed` where a client is missing.
pub fn versions_line() -> String {
    all()
        .iter()
        .map(|client| match &client.launcher {
            Ok(_) => client.label.clone(),
            Err(_) => format!("{}: not installed", client.label),
        })
        .collect::<Vec<_>>()
        .join("; ")
}
