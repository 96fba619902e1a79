//! `bashtool check`: the safety policy alone, for hooks of other agents.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;
use bashtool_core::{PolicyConfig, check_policy};
use clap::Args;
use serde_json::json;

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
    let verdict = check_policy(&script, &PolicyConfig::default());
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
