//! Flags shared by the subcommands that run commands, and their merge
//! over the config file and the defaults.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use bashtool_core::{Shortening, ToolConfig};
#[cfg(target_os = "linux")]
use bashtool_env_local::LocalConfig;
use clap::Args;

use crate::config::FileConfig;
#[cfg(target_os = "linux")]
use crate::config::seconds;

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
    /// Use plain head/tail shortening (the first 30% and the last 70% of the budget) instead of the error-aware one
    #[arg(long)]
    pub plain_shortening: bool,
    /// Seconds between SIGTERM and SIGKILL when a command is stopped [default: 2]
    #[arg(long, value_name = "SECONDS")]
    pub kill_grace: Option<f64>,
    /// Run in the persistent session NAME: cwd, variables, functions and aliases carry over to the next `bashtool run`, `call` or `mcp` given `--session NAME`
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// TOML config file [default: $XDG_CONFIG_HOME/bashtool/config.toml, if it exists]
    #[arg(long, value_name = "FILE", env = "BASHTOOL_CONFIG")]
    pub config: Option<PathBuf>,
    /// Pass inherited variables matching PATTERN to commands even if they look like secrets (glob, repeatable)
    #[arg(long = "keep-env", value_name = "PATTERN")]
    pub keep_env: Vec<String>,
    /// Withhold inherited variables matching PATTERN from commands (glob, repeatable) [default: *KEY*, *SECRET*, *TOKEN*, *PASSWORD*]
    #[arg(long = "drop-env", value_name = "PATTERN")]
    pub drop_env: Vec<String>,
    #[command(flatten)]
    pub sandbox: crate::sandbox::SandboxArgs,
    #[command(flatten)]
    pub limits: crate::limits::LimitArgs,
    #[command(flatten)]
    pub redact: crate::redact::RedactArgs,
}

impl ToolArgs {
    /// `--cwd`, else `configured`, relative to the current directory; the
    /// current directory when neither is given. Not checked: only a
    /// directory where commands run here must exist.
    pub fn requested_directory(&self, configured: Option<&Path>) -> anyhow::Result<PathBuf> {
        let current = std::env::current_dir().context("reading the current directory")?;
        Ok(match self.cwd.as_deref().or(configured) {
            Some(directory) => current.join(directory),
            None => current,
        })
    }

    /// Where local commands of `run`, `call` and `serve` start: `--cwd`,
    /// which must exist, else the current directory.
    #[cfg(target_os = "linux")]
    fn working_directory(&self) -> anyhow::Result<PathBuf> {
        let directory = self.requested_directory(None)?;
        anyhow::ensure!(
            directory.is_dir(),
            "--cwd {} is not an existing directory",
            directory.display()
        );
        Ok(directory)
    }

    /// The config file named by `--config`, or the default one if it exists.
    pub fn file(&self) -> anyhow::Result<FileConfig> {
        Ok(FileConfig::load(self.config.as_deref())?.0)
    }

    /// The tool's and the environment's settings when commands run here,
    /// in [`Self::working_directory`].
    #[cfg(target_os = "linux")]
    pub fn local_settings(&self, file: &FileConfig) -> anyhow::Result<(ToolConfig, LocalConfig)> {
        let directory = self.working_directory()?;
        let mut tool = self.tool_config(file, Some(directory.clone()))?;
        let mut local = self.local_config(&mut tool, file, directory)?;
        crate::limits::check_enforceable(&local.limits)?;
        tool.redactor = crate::redact::apply(&self.redact_settings(file)?, &mut local);
        Ok((tool, local))
    }

    /// `--redact` and `--redact-env` over the file's `[redact]`, checked.
    pub fn redact_settings(
        &self,
        file: &FileConfig,
    ) -> anyhow::Result<bashtool_core::RedactSettings> {
        self.redact.settings(&file.redact)
    }

    /// The environment policy of the file and the flags, for a client
    /// whose commands run elsewhere: which of its own variables hold
    /// secrets.
    pub fn env_policy(&self, file: &FileConfig) -> bashtool_core::EnvPolicy {
        let mut policy = file.environment.clone();
        policy.keep.extend(self.keep_env.iter().cloned());
        policy.exclude.extend(self.drop_env.iter().cloned());
        policy
    }

    /// The tool's settings: defaults, then the file, then the flags. The
    /// model is told that commands start in `working_directory`.
    pub fn tool_config(
        &self,
        file: &FileConfig,
        working_directory: Option<PathBuf>,
    ) -> anyhow::Result<ToolConfig> {
        let mut config = ToolConfig {
            working_directory,
            ..ToolConfig::default()
        };
        file.apply_to_tool(&mut config)?;
        if self.no_policy {
            config.policy.enabled = false;
        }
        if let Some(tokens) = self.budget_tokens {
            anyhow::ensure!(tokens > 0, "--budget-tokens must be at least 1");
            config.output.max_output_tokens = tokens;
        }
        if self.plain_shortening {
            config.output.shortening = Shortening::Plain;
        }
        Ok(config)
    }

    /// The settings of a local environment whose commands start in
    /// `working_directory`: defaults, then the file, then the flags; tells
    /// `tool` whether the environment withholds variables.
    #[cfg(target_os = "linux")]
    pub fn local_config(
        &self,
        tool: &mut ToolConfig,
        file: &FileConfig,
        working_directory: PathBuf,
    ) -> anyhow::Result<LocalConfig> {
        let mut local = self.local_config_unconfined(tool, file, working_directory)?;
        local.confinement = self.sandbox_config(file)?.confinement();
        Ok(local)
    }

    /// The sandbox settings: the file's `[sandbox]`, then the flags,
    /// checked here.
    #[cfg(target_os = "linux")]
    pub fn sandbox_config(
        &self,
        file: &FileConfig,
    ) -> anyhow::Result<bashtool_sandbox::SandboxConfig> {
        let mut sandbox = file.sandbox()?;
        self.sandbox.apply(&mut sandbox)?;
        Ok(sandbox)
    }

    /// The sandbox a remote `bashtool serve` is asked for (see
    /// [`crate::sandbox::SandboxArgs::remote_request`]).
    pub fn remote_sandbox(&self, file: &FileConfig) -> Option<bashtool_env_remote::SandboxRequest> {
        self.sandbox.remote_request(file.sandbox.as_ref())
    }

    /// [`Self::local_config`] without the sandbox (its settings are not
    /// read): for a client whose commands run elsewhere.
    #[cfg(target_os = "linux")]
    pub fn local_config_unconfined(
        &self,
        tool: &mut ToolConfig,
        file: &FileConfig,
        working_directory: PathBuf,
    ) -> anyhow::Result<LocalConfig> {
        let state = bashtool_env_local::default_state_dir()?;
        let mut local = LocalConfig {
            working_directory,
            // Jobs started here outlive a `run` or `call` (servers decide
            // with --keep-jobs): other `bashtool` processes find them in
            // the records.
            job_records: Some(state),
            keep_jobs_on_drop: true,
            ..LocalConfig::default()
        };
        file.apply_to_local(&mut local)?;
        if let Some(grace) = self.kill_grace {
            local.kill_grace = seconds("--kill-grace", grace, 600.0)?;
        }
        self.apply_env_flags(&mut local, tool);
        local.confinement = None;
        local.limits = self.limit_settings(file)?;
        Ok(local)
    }

    /// The resource limits: the file's `[limits]`, then `--limit`.
    pub fn limit_settings(
        &self,
        file: &FileConfig,
    ) -> anyhow::Result<bashtool_core::LimitSettings> {
        self.limits.over(file.limits)
    }

    /// The flags of `bashtool serve` that set up the environment the way
    /// these flags ask and `initialize` has no field for: what
    /// `--remote-shell` starts its `serve` with. The sandbox, the allowed
    /// domains, the limits and the masking travel in `initialize`, for
    /// `--remote` and `--remote-shell` alike, and are not repeated here.
    pub fn serve_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(grace) = self.kill_grace {
            args.extend(["--kill-grace".to_owned(), grace.to_string()]);
        }
        for pattern in &self.keep_env {
            args.extend(["--keep-env".to_owned(), pattern.clone()]);
        }
        for pattern in &self.drop_env {
            args.extend(["--drop-env".to_owned(), pattern.clone()]);
        }
        args
    }

    /// `--keep-env` and `--drop-env` over the file's `[environment]`.
    #[cfg(target_os = "linux")]
    fn apply_env_flags(&self, local: &mut LocalConfig, tool: &mut ToolConfig) {
        let policy = &mut local.env_policy;
        policy.keep.extend(self.keep_env.iter().cloned());
        policy.exclude.extend(self.drop_env.iter().cloned());
        tool.withholds_env = policy.drops_any();
    }
}

/// The `--remote` and `--remote-shell` flags of `run`, `call`, `mcp` and
/// `jobs` (the `environment` and `remote` modules say what they do).
#[derive(Debug, Clone, Default, Args)]
pub struct RemoteArgs {
    /// Run commands in a remote environment: COMMAND LINE runs with `sh -c` here and must start `bashtool serve` there, e.g. 'ssh devbox bashtool serve' or 'docker exec -i box bashtool serve' (--cwd and --session then name a directory and a session over there, and the sandbox flags apply there)
    #[arg(long, value_name = "COMMAND LINE", conflicts_with = "remote_shell")]
    pub remote: Option<String>,
    /// Run commands where COMMAND LINE opens a POSIX shell, with nothing installed there: e.g. 'ssh devbox', 'docker exec -i box sh' or 'kubectl exec -i pod -- sh'. bashtool starts its own `bashtool serve` there, uploading a Linux build first when none of this version is there (progress on stderr). --cwd and --session name a directory and a session over there; the sandbox flags, --allow-domain, --limit, --redact, --kill-grace, --keep-env and --drop-env apply there
    #[arg(long, value_name = "COMMAND LINE")]
    pub remote_shell: Option<String>,
    /// With --remote-shell: the Linux build of bashtool to upload (a static one runs anywhere: x86_64-unknown-linux-musl) [default: this bashtool, on Linux]
    #[arg(long, value_name = "PATH", requires = "remote_shell")]
    pub serve_binary: Option<PathBuf>,
}

impl RemoteArgs {
    /// True when the commands run elsewhere (`--remote` or
    /// `--remote-shell`).
    #[cfg(target_os = "linux")]
    pub fn is_remote(&self) -> bool {
        self.remote.is_some() || self.remote_shell.is_some()
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::ToolArgs;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        tool: ToolArgs,
    }

    fn tool(args: &[&str]) -> ToolArgs {
        Flags::try_parse_from(std::iter::once("bashtool").chain(args.iter().copied()))
            .expect("valid flags")
            .tool
    }

    /// The sandbox, the domains, the limits and the masking travel in
    /// `initialize` (for --remote and --remote-shell alike): a `serve`
    /// started by --remote-shell gets none of them as flags, so nothing is
    /// applied twice; what the handshake does not carry is passed.
    #[test]
    fn serve_args_carry_only_what_initialize_does_not() {
        let args = tool(&[
            "--sandbox",
            "off",
            "--writable",
            "/data",
            "--allow-domain",
            "example.com",
            "--limit",
            "pids=64",
            "--redact",
            "off",
            "--redact-env",
            "MY_*",
            "--kill-grace",
            "5",
            "--keep-env",
            "GITHUB_TOKEN",
            "--drop-env",
            "AWS_*",
        ]);
        assert_eq!(
            args.serve_args(),
            [
                "--kill-grace",
                "5",
                "--keep-env",
                "GITHUB_TOKEN",
                "--drop-env",
                "AWS_*"
            ]
        );
        let request = args
            .sandbox
            .remote_request(None)
            .expect("a sandbox request");
        assert_eq!(request.mode.as_deref(), Some("off"));
        assert_eq!(request.writable, [std::path::PathBuf::from("/data")]);
    }
}
