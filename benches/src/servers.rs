//! Where the MCP servers under test are: `bashtool` next to this binary, the
//! comparators in the cache `benches/run` installs them into.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::mcp_client::ServerSpec;

/// The directory of this binary: `target/dist`, where `benches/run`
/// builds `bashtool` too.
fn exe_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    exe.parent()
        .map(PathBuf::from)
        .context("the bench binary has no directory")
}

/// The `bashtool` binary `benches/run` built next to this one.
pub fn bashtool_binary() -> anyhow::Result<PathBuf> {
    let program = exe_dir()?.join("bashtool");
    anyhow::ensure!(
        program.is_file(),
        "{} not found: build it with `cargo build --profile dist -p bashtool-cli`",
        program.display()
    );
    Ok(program)
}

/// `bashtool mcp`, in its default (session) mode or `--stateless`.
pub fn bashtool(stateless: bool) -> anyhow::Result<ServerSpec> {
    let program = bashtool_binary()?;
    let mut args = vec!["mcp".to_owned()];
    if stateless {
        args.push("--stateless".into());
    }
    Ok(ServerSpec {
        label: if stateless {
            "bashtool --stateless".into()
        } else {
            "bashtool (session)".into()
        },
        program,
        args,
        env: Vec::new(),
    })
}

/// The cache of installed comparators: `$BASHTOOL_BENCH_DEPS`, else
/// `target/bench-deps` (this binary is in `target/dist`).
pub fn deps_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("BASHTOOL_BENCH_DEPS") {
        return Ok(dir.into());
    }
    let exe_dir = exe_dir()?;
    Ok(exe_dir.parent().unwrap_or(&exe_dir).join("bench-deps"))
}

/// A comparator: its spec, or why it is not available.
pub type Comparator = (String, anyhow::Result<ServerSpec>);

/// The other MCP shell servers, as `benches/run` installs them.
pub fn comparators() -> Vec<Comparator> {
    let deps = match deps_dir() {
        Ok(deps) => deps,
        Err(error) => {
            return vec![("comparators".into(), Err(error))];
        }
    };
    let installed =
        |label: &str, version: Option<String>, program: PathBuf, env: Vec<(String, String)>| {
            // The installed version, as the package manager recorded it: what
            // the servers report over MCP is not always theirs (mcp-shell-server
            // reports its MCP SDK's).
            let label = match version {
                Some(version) => format!("{label} {version}"),
                None => label.to_owned(),
            };
            let spec = if program.is_file() {
                Ok(ServerSpec {
                    label: label.clone(),
                    program,
                    args: Vec::new(),
                    env,
                })
            } else {
                Err(anyhow::anyhow!(
                    "not installed ({} missing; `benches/run` installs it)",
                    program.display()
                ))
            };
            (label, spec)
        };
    vec![
        // npm: one tool `run_command {command: "echo hi"}`, run through a shell.
        installed(
            "mcp-server-commands (npm)",
            npm_version(&deps.join("npm"), "mcp-server-commands"),
            deps.join("npm/node_modules/.bin/mcp-server-commands"),
            Vec::new(),
        ),
        // PyPI: one tool `shell_execute {command: ["echo", "hi"]}`; it runs
        // only the executables listed in ALLOW_COMMANDS.
        installed(
            "mcp-shell-server (PyPI)",
            pip_version(&deps.join("venv"), "mcp_shell_server"),
            deps.join("venv/bin/mcp-shell-server"),
            vec![("ALLOW_COMMANDS".into(), "echo".into())],
        ),
    ]
}

/// `version` from the package's `package.json` under the npm prefix
/// `prefix` (where `npm install --prefix` put it).
pub fn npm_version(prefix: &Path, package: &str) -> Option<String> {
    let manifest = prefix
        .join("node_modules")
        .join(package)
        .join("package.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).ok()?).ok()?;
    Some(manifest.get("version")?.as_str()?.to_owned())
}

/// The version in the name of the package's `<name>-<version>.dist-info`
/// directory in the venv `venv` (`package` spelled as in that name: `_`
/// for `-`).
pub fn pip_version(venv: &Path, package: &str) -> Option<String> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.flatten().find_map(|python| {
        std::fs::read_dir(python.path().join("site-packages"))
            .ok()?
            .flatten()
            .find_map(|entry| {
                entry
                    .file_name()
                    .to_str()?
                    .strip_prefix(package)?
                    .strip_prefix('-')?
                    .strip_suffix(".dist-info")
                    .map(str::to_owned)
            })
    })
}
