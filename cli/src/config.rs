//! The optional TOML config file, overridden by flags. `run`, `call` and
//! `check` read it too, so a `check` hook refuses what the server refuses and
//! a terminal run sees the environment the model's commands see. The keys
//! `cwd`, `stateless`, `keep_jobs`, `log_level` and `progress_interval_ms`
//! concern only `bashtool mcp`.
//!
//! Unknown keys are an error, so that a typo (`budget_token = 500`) does not
//! silently leave the default in force.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use bashtool_core::{EnvPolicy, RedactSettings, Shortening, ToolConfig};
#[cfg(target_os = "linux")]
use bashtool_env_local::LocalConfig;
use bashtool_sandbox::SandboxConfig;
use serde::Deserialize;

/// The config file, all keys optional.
///
/// ```toml
/// cwd = "/home/me/project"
/// remote = "ssh devbox bashtool serve"   # run the commands over there
/// stateless = false
/// keep_jobs = false
/// log_level = "info"
/// progress_interval_ms = 250
/// shell = "bash"
/// non_interactive = true
///
/// [tool]
/// name = "bash"
/// shell_telemetry = true
/// max_command_bytes = 262144
/// fields = { commands = true, mode = true, background = true, timeout = true, working_directory = true, environment = true }
///
/// [timeouts]            # seconds
/// default = 30
/// slow = 900
/// max = 1800
/// kill_grace = 2
///
/// [output]
/// budget_tokens = 2000
/// max_line_chars = 800
/// head_percent = 30
/// shortening = "error-aware"   # or "plain"
/// error_patterns = ["FAILED"]
///
/// [policy]
/// enabled = true
/// git_add = true
/// git_push_force = true
/// rm_critical = true
/// deny_patterns = ["terraform destroy"]
///
/// [logs]
/// dir = "/tmp/bashtool-logs"
/// max_files = 200
/// max_bytes = 104857600
///
/// [env]                 # added to every command's environment
/// CARGO_TERM_COLOR = "never"
///
/// [environment]         # which inherited variables commands see
/// ignore_default_excludes = false   # true: pass on *KEY*, *SECRET*, *TOKEN*, *PASSWORD* too
/// include_only = []                 # when set, only these are inherited
/// exclude = ["AWS_*"]               # dropped on top of the defaults
/// keep = ["GITHUB_TOKEN"]           # passed on even if a drop pattern matches
/// set = { CI = "1" }                # added, never dropped
/// [sandbox]
/// mode = "workspace-write"   # or "read-only", "off"
/// writable = ["/home/me/.cache/foo"]
/// network = "on"             # or "off"
/// allowed_domains = ["registries", "github.com"]   # only these, through a proxy
///
/// [limits]                   # per command; flags (`--limit`) win
/// pids = 4096                # or "off" (the default: 4096 where cgroups can be had)
/// memory = "2G"              # or a number of bytes, or "off"
/// cpu = 1.5                  # CPUs, or "off"
///
/// [redact]                   # secrets masked in output
/// mode = "on"                # or "off"
/// env = ["DATABASE_URL"]     # also mask these variables' values
/// ```
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub cwd: Option<PathBuf>,
    /// `--remote`: a command line that starts `bashtool serve` elsewhere.
    pub remote: Option<String>,
    pub stateless: Option<bool>,
    pub keep_jobs: Option<bool>,
    pub log_level: Option<String>,
    pub progress_interval_ms: Option<u64>,
    pub shell: Option<PathBuf>,
    /// Pagers off, prompts fail, editors refuse (env-local's defaults).
    pub non_interactive: Option<bool>,
    #[serde(default)]
    pub tool: Tool,
    #[serde(default)]
    pub timeouts: Timeouts,
    #[serde(default)]
    pub output: Output,
    #[serde(default)]
    pub policy: Policy,
    #[serde(default)]
    pub logs: Logs,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub environment: EnvPolicy,
    /// The OS sandbox; flags (`--sandbox`, `--writable`, `--network`,
    /// `--allow-domain`) win. The relay build reads the same section to
    /// hand it on to the `serve` over there.
    pub sandbox: Option<SandboxConfig>,
    /// Resource limits per command; `--limit` wins.
    pub limits: Option<bashtool_core::LimitSettings>,
    /// Secrets masked in output; flags (`--redact`, `--redact-env`) win.
    #[serde(default)]
    pub redact: RedactSettings,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: Option<String>,
    pub shell_telemetry: Option<bool>,
    pub max_command_bytes: Option<usize>,
    #[serde(default)]
    pub fields: Fields,
}

/// Which optional input fields the model is told about and may use.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Fields {
    pub commands: Option<bool>,
    pub mode: Option<bool>,
    pub background: Option<bool>,
    pub timeout: Option<bool>,
    pub working_directory: Option<bool>,
    pub environment: Option<bool>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    pub default: Option<u64>,
    pub slow: Option<u64>,
    pub max: Option<u64>,
    pub kill_grace: Option<f64>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Output {
    pub budget_tokens: Option<usize>,
    pub max_line_chars: Option<usize>,
    pub head_percent: Option<usize>,
    pub shortening: Option<ShorteningName>,
    #[serde(default)]
    pub error_patterns: Vec<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ShorteningName {
    Plain,
    ErrorAware,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub enabled: Option<bool>,
    pub git_add: Option<bool>,
    pub git_push_force: Option<bool>,
    pub rm_critical: Option<bool>,
    #[serde(default)]
    pub deny_patterns: Vec<String>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Logs {
    pub dir: Option<PathBuf>,
    pub max_files: Option<usize>,
    pub max_bytes: Option<u64>,
}

impl FileConfig {
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        Ok(toml::from_str(text)?)
    }

    /// Reads `path`, or the default location when it exists, or nothing.
    pub fn load(path: Option<&Path>) -> anyhow::Result<(Self, Option<PathBuf>)> {
        let (path, required) = match path {
            Some(path) => (path.to_path_buf(), true),
            None => match default_path() {
                Some(path) => (path, false),
                None => return Ok((Self::default(), None)),
            },
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if !required && error.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Self::default(), None));
            }
            Err(error) => {
                return Err(error).with_context(|| format!("reading {}", path.display()));
            }
        };
        let config = Self::parse(&text).with_context(|| format!("in {}", path.display()))?;
        Ok((config, Some(path)))
    }

    /// Applies the file's tool settings over the defaults (flags come after).
    pub fn apply_to_tool(&self, tool: &mut ToolConfig) -> anyhow::Result<()> {
        let settings = &self.tool;
        if let Some(name) = &settings.name {
            anyhow::ensure!(
                !name.is_empty()
                    && name.len() <= 64
                    && name
                        .chars()
                        .all(|character| character.is_ascii_alphanumeric()
                            || "_-".contains(character)),
                "tool.name must be 1 to 64 letters, digits, _ or -"
            );
            tool.name.clone_from(name);
        }
        tool.shell_telemetry = settings.shell_telemetry.unwrap_or(tool.shell_telemetry);
        if let Some(bytes) = settings.max_command_bytes {
            anyhow::ensure!(
                (1..=bashtool_core::MAX_COMMAND_BYTES).contains(&bytes),
                "tool.max_command_bytes must be 1 to {}",
                bashtool_core::MAX_COMMAND_BYTES
            );
            tool.max_command_bytes = bytes;
        }
        let fields = &settings.fields;
        let enabled = &mut tool.fields;
        enabled.commands = fields.commands.unwrap_or(enabled.commands);
        enabled.mode = fields.mode.unwrap_or(enabled.mode);
        enabled.background = fields.background.unwrap_or(enabled.background);
        enabled.timeout = fields.timeout.unwrap_or(enabled.timeout);
        enabled.working_directory = fields
            .working_directory
            .unwrap_or(enabled.working_directory);
        enabled.environment = fields.environment.unwrap_or(enabled.environment);
        let timeouts = &self.timeouts;
        if let Some(default) = timeouts.default {
            tool.default_timeout = whole_seconds("timeouts.default", default)?;
        }
        if let Some(slow) = timeouts.slow {
            tool.slow_timeout = whole_seconds("timeouts.slow", slow)?;
        }
        if let Some(max) = timeouts.max {
            whole_seconds("timeouts.max", max)?;
            tool.max_timeout_secs = max;
        }
        let output = &self.output;
        if let Some(tokens) = output.budget_tokens {
            anyhow::ensure!(tokens > 0, "output.budget_tokens must be at least 1");
            tool.output.max_output_tokens = tokens;
        }
        if let Some(chars) = output.max_line_chars {
            anyhow::ensure!(chars >= 16, "output.max_line_chars must be at least 16");
            tool.output.max_line_chars = chars;
        }
        if let Some(percent) = output.head_percent {
            anyhow::ensure!(percent <= 100, "output.head_percent must be 0 to 100");
            tool.output.head_percent = percent;
        }
        if let Some(name) = output.shortening {
            tool.output.shortening = match name {
                ShorteningName::Plain => Shortening::Plain,
                ShorteningName::ErrorAware => Shortening::ErrorAware,
            };
        }
        tool.output
            .extra_salient_patterns
            .extend(output.error_patterns.iter().cloned());
        let policy = &self.policy;
        let rules = &mut tool.policy;
        rules.enabled = policy.enabled.unwrap_or(rules.enabled);
        rules.git_add = policy.git_add.unwrap_or(rules.git_add);
        rules.git_push_force = policy.git_push_force.unwrap_or(rules.git_push_force);
        rules.rm_critical = policy.rm_critical.unwrap_or(rules.rm_critical);
        rules
            .deny_patterns
            .extend(policy.deny_patterns.iter().cloned());
        Ok(())
    }

    /// Applies the file's environment settings (flags come after).
    #[cfg(target_os = "linux")]
    pub fn apply_to_local(&self, local: &mut LocalConfig) -> anyhow::Result<()> {
        if let Some(shell) = &self.shell {
            local.shell.clone_from(shell);
        }
        local.non_interactive = self.non_interactive.unwrap_or(local.non_interactive);
        let logs = &self.logs;
        if let Some(directory) = &logs.dir {
            local.log_dir = Some(directory.clone());
        }
        if let Some(files) = logs.max_files {
            anyhow::ensure!(files >= 1, "logs.max_files must be at least 1");
            local.max_log_files = files;
        }
        if let Some(bytes) = logs.max_bytes {
            anyhow::ensure!(bytes >= 4096, "logs.max_bytes must be at least 4096");
            local.max_log_bytes = bytes;
        }
        if let Some(grace) = self.timeouts.kill_grace {
            local.kill_grace = seconds("timeouts.kill_grace", grace, 600.0)?;
        }
        for name in self.env.keys() {
            anyhow::ensure!(
                bashtool_core::is_valid_variable_name(name),
                "[env] {name:?} is not a valid variable name"
            );
        }
        for name in self.environment.set.keys() {
            anyhow::ensure!(
                bashtool_core::is_valid_variable_name(name),
                "[environment] set: {name:?} is not a valid variable name"
            );
        }
        local.env_policy = self.environment.clone();
        local.env.extend(
            self.env
                .iter()
                .map(|(key, value)| (key.clone(), value.clone())),
        );
        Ok(())
    }

    /// The `[sandbox]` section, or the default sandbox without one.
    #[cfg(target_os = "linux")]
    pub fn sandbox(&self) -> anyhow::Result<SandboxConfig> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(SandboxConfig::default());
        };
        sandbox.validate()?;
        Ok(sandbox.clone())
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

fn whole_seconds(name: &str, value: u64) -> anyhow::Result<Duration> {
    anyhow::ensure!(
        (1..=86_400).contains(&value),
        "{name} must be between 1 and 86400 seconds, not {value}"
    );
    Ok(Duration::from_secs(value))
}

/// `$XDG_CONFIG_HOME/bashtool/config.toml`, else `~/.config/bashtool/config.toml`
/// (on Windows without `HOME`: `%APPDATA%\bashtool\config.toml`).
pub fn default_path() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    let base = non_empty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".config")))
        .or_else(|| {
            non_empty("APPDATA")
                .filter(|_| cfg!(windows))
                .map(PathBuf::from)
        })?;
    Some(base.join("bashtool").join("config.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_section() {
        let config = FileConfig::parse(
            r#"
            stateless = true
            [tool]
            name = "shell"
            fields = { commands = false }
            [timeouts]
            default = 10
            kill_grace = 0.5
            [output]
            budget_tokens = 500
            shortening = "plain"
            [policy]
            enabled = false
            deny_patterns = ["terraform destroy"]
            [logs]
            dir = "/tmp/bashtool-test-logs"
            max_files = 3
            [env]
            FOO = "bar"
            [environment]
            exclude = ["AWS_*"]
            set = { CI = "1" }
            "#,
        )
        .expect("valid");
        let mut tool = ToolConfig::default();
        config.apply_to_tool(&mut tool).expect("applies");
        assert_eq!(tool.name, "shell");
        assert!(!tool.fields.commands);
        assert!(tool.fields.mode);
        assert_eq!(tool.default_timeout, Duration::from_secs(10));
        assert_eq!(tool.output.max_output_tokens, 500);
        assert_eq!(tool.output.shortening, Shortening::Plain);
        assert!(!tool.policy.enabled);
        assert_eq!(tool.policy.deny_patterns, ["terraform destroy"]);
        let mut local = LocalConfig::default();
        config.apply_to_local(&mut local).expect("applies");
        assert_eq!(local.kill_grace, Duration::from_millis(500));
        assert_eq!(local.env["FOO"], "bar");
        assert_eq!(local.env_policy.exclude, ["AWS_*"]);
        assert_eq!(local.env_policy.set["CI"], "1");
        assert!(!local.env_policy.inherits("AWS_REGION"));
        assert_eq!(
            local.log_dir.as_deref(),
            Some(Path::new("/tmp/bashtool-test-logs"))
        );
        assert_eq!(local.max_log_files, 3);
        assert_eq!(config.stateless, Some(true));
    }

    #[test]
    fn rejects_unknown_keys() {
        let error = FileConfig::parse("[output]\nbudget_token = 5\n").expect_err("typo");
        assert!(error.to_string().contains("unknown field `budget_token`"));
    }

    #[test]
    fn rejects_bad_variable_names() {
        let config = FileConfig::parse("[env]\n\"A-B\" = \"x\"\n").expect("valid toml");
        let error = config
            .apply_to_local(&mut LocalConfig::default())
            .expect_err("bad name");
        assert!(error.to_string().contains("not a valid variable name"));
    }

    #[test]
    fn parses_the_limits_section_and_refuses_bad_values() {
        let config = FileConfig::parse("[limits]\npids = 64\nmemory = \"512M\"\ncpu = 0.5\n")
            .expect("valid");
        let limits = config.limits.expect("limits");
        assert_eq!(limits.pids, bashtool_core::Limit::Max(64));
        assert_eq!(limits.memory, bashtool_core::Limit::Max(512 << 20));
        assert_eq!(
            limits.cpu.max().map(bashtool_core::CpuLimit::millis),
            Some(500)
        );
        let error = FileConfig::parse("[limits]\npids = 0\n").expect_err("zero");
        assert!(
            error
                .to_string()
                .contains("pids=0: the pids limit is a whole number"),
            "{error}"
        );
        let error = FileConfig::parse("[limits]\ndisk = \"1G\"\n").expect_err("unknown");
        assert!(
            error.to_string().contains("unknown field `disk`"),
            "{error}"
        );
    }

    #[test]
    fn parses_the_redact_section() {
        let config = FileConfig::parse("[redact]\nmode = \"off\"\nenv = [\"DATABASE_URL\"]\n")
            .expect("valid");
        assert_eq!(config.redact.mode, bashtool_core::RedactMode::Off);
        assert_eq!(config.redact.env, ["DATABASE_URL"]);
        let error = FileConfig::parse("[redact]\nmode = \"maybe\"\n").expect_err("bad mode");
        assert!(
            error.to_string().contains("unknown variant `maybe`"),
            "{error}"
        );
        let error = FileConfig::parse("[redact]\nenvs = []\n").expect_err("typo");
        assert!(
            error.to_string().contains("unknown field `envs`"),
            "{error}"
        );
    }

    #[test]
    fn parses_the_sandbox_section() {
        let config = FileConfig::parse(
            "[sandbox]\nmode = \"read-only\"\nwritable = [\"/tmp\"]\nnetwork = \"off\"\n",
        )
        .expect("valid");
        let sandbox = config.sandbox().expect("applies");
        assert_eq!(sandbox.mode, bashtool_sandbox::SandboxMode::ReadOnly);
        assert_eq!(sandbox.network, bashtool_sandbox::NetworkMode::Off);
        assert_eq!(sandbox.writable, [PathBuf::from("/tmp")]);
        let error = FileConfig::parse("[sandbox]\nmode = \"strict\"\n").expect_err("bad mode");
        assert!(
            error.to_string().contains("unknown variant `strict`"),
            "{error}"
        );
    }
}
