//! Flags shared by the subcommands that run commands.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use bashtool_core::{Shortening, ToolConfig};
use bashtool_env_local::LocalConfig;
use clap::Args;

/// How the tool and its environment are set up.
#[derive(Debug, Clone, Args)]
pub struct ToolArgs {
    /// Directory commands run in [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Turn the safety policy off (it blocks git add -A, git push --force, rm -rf ~ ...)
    #[arg(long)]
    pub no_policy: bool,
    /// Output budget for the model, in tokens (× 4 chars) [default: 2000]
    #[arg(long, value_name = "TOKENS")]
    pub budget_tokens: Option<usize>,
    /// Use the seed's plain head/tail shortening instead of the error-aware one
    #[arg(long)]
    pub plain_shortening: bool,
    /// Seconds between SIGTERM and SIGKILL when a command is stopped [default: 2]
    #[arg(long, value_name = "SECONDS")]
    pub kill_grace: Option<f64>,
    /// Run in the persistent session NAME: cwd, variables, functions and aliases carry over to the next `bashtool --session NAME` call
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    #[command(flatten)]
    pub sandbox: crate::sandbox::SandboxArgs,
}

impl ToolArgs {
    pub fn working_directory(&self) -> anyhow::Result<PathBuf> {
        let current = std::env::current_dir().context("reading the current directory")?;
        let directory = match &self.cwd {
            Some(directory) => current.join(directory),
            None => current,
        };
        anyhow::ensure!(
            directory.is_dir(),
            "--cwd {} is not an existing directory",
            directory.display()
        );
        Ok(directory)
    }

    pub fn tool_config(&self) -> anyhow::Result<ToolConfig> {
        let mut config = ToolConfig {
            working_directory: Some(self.working_directory()?),
            ..ToolConfig::default()
        };
        config.policy.enabled = !self.no_policy;
        if let Some(tokens) = self.budget_tokens {
            anyhow::ensure!(tokens > 0, "--budget-tokens must be at least 1");
            config.output.max_output_tokens = tokens;
        }
        if self.plain_shortening {
            config.output.shortening = Shortening::Plain;
        }
        Ok(config)
    }

    pub fn local_config(&self, tool: &ToolConfig) -> anyhow::Result<LocalConfig> {
        let mut local = LocalConfig {
            working_directory: self.working_directory()?,
            output: tool.output.clone(),
            ..LocalConfig::default()
        };
        if let Some(grace) = self.kill_grace {
            local.kill_grace = seconds("--kill-grace", grace, 600.0)?;
        }
        self.sandbox.apply(&mut local.sandbox)?;
        Ok(local)
    }
}

/// A duration given in seconds on the command line or in the config file.
pub fn seconds(name: &str, value: f64, max: f64) -> anyhow::Result<Duration> {
    anyhow::ensure!(
        value.is_finite() && (0.0..=max).contains(&value),
        "{name} must be between 0 and {max} seconds, not {value}"
    );
    Ok(Duration::from_secs_f64(value))
}
