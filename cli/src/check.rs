//! `bashtool check`: the safety policy alone, for hooks of other agents.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;
use bashtool_core::{PolicyConfig, ToolConfig, check_policy};
use clap::Args;
use serde_json::json;

use crate::config::FileConfig;

/// Check a command against the safety policy without running it
///
/// Exit status: 0 allowed, 1 blocked, 2 usage error.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool check 'git add -A'\n  echo 'rm -rf ~' | bashtool check --json\n\n\
As a Claude Code PreToolUse hook on Bash:\n  jq -r .tool_input.command | bashtool check >&2 || exit 2"
)]
pub struct CheckArgs {
    /// Print {"allowed", "rule", "message"} as JSON
    #[arg(long)]
    pub json: bool,
    /// TOML config file whose [policy] applies, as in `bashtool mcp` [default: $XDG_CONFIG_HOME/bashtool/config.toml, if it exists]
    #[arg(long, value_name = "FILE", env = "BASHTOOL_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// Also refuse commands that contain PATTERN (repeatable)
    #[arg(long = "deny", value_name = "PATTERN")]
    pub deny: Vec<String>,
    /// The script to check [default: read from stdin]
    pub script: Option<String>,
}

pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let script = if let Some(script) = &args.script {
        script.clone()
    } else {
        let mut script = String::new();
        std::io::stdin()
            .read_to_string(&mut script)
            .context("reading the script from stdin (it must be UTF-8)")?;
        script
    };
    let (file, _) = FileConfig::load(args.config.as_deref())?;
    let mut tool = ToolConfig::default();
    file.apply_to_tool(&mut tool)?;
    let mut rules: PolicyConfig = tool.policy;
    rules.deny_patterns.extend(args.deny.iter().cloned());
    let verdict = check_policy(&script, &rules);
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let value = match &verdict {
            Ok(()) => json!({"allowed": true, "rule": null, "message": null}),
            Err(violation) => {
                json!({"allowed": false, "rule": violation.rule, "message": violation.message})
            }
        };
        writeln!(stdout, "{value}")?;
    } else {
        match &verdict {
            Ok(()) => writeln!(stdout, "allowed")?,
            Err(violation) => writeln!(stdout, "{}", violation.message)?,
        }
    }
    Ok(if verdict.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
