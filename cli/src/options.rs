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
    /// Output budget for the model, in tokens (× 4 chars)
    #[arg(long, value_name = "TOKENS", default_value_t = bashtool_core::MAX_OUTPUT_TOKENS)]
    pub budget_tokens: usize,
    /// Use the seed's plain head/tail shortening instead of the error-aware one
    #[arg(long)]
    pub plain_shortening: bool,
    /// Seconds between SIGTERM and SIGKILL when a command is stopped
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub kill_grace: f64,
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
        config.output.max_output_tokens = self.budget_tokens;
        if self.plain_shortening {
            config.output.shortening = Shortening::Plain;
        }
        Ok(config)
    }

    pub fn local_config(&self, tool: &ToolConfig) -> anyhow::Result<LocalConfig> {
        anyhow::ensure!(
            self.kill_grace.is_finite() && (0.0..=600.0).contains(&self.kill_grace),
            "--kill-grace must be between 0 and 600 seconds"
        );
        Ok(LocalConfig {
            working_directory: self.working_directory()?,
            kill_grace: Duration::from_secs_f64(self.kill_grace),
            output: tool.output.clone(),
            ..LocalConfig::default()
        })
    }
}
