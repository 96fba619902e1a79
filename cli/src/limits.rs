//! `--limit`, shared by `run`, `call`, `mcp`, `serve` and `sandbox`: the
//! resource limits per command (see `docs/limits.md`), over the config
//! file's `[limits]`.

use bashtool_core::LimitSettings;
use clap::Args;

/// `--limit NAME=VALUE`.
#[derive(Debug, Clone, Default, Args)]
pub struct LimitArgs {
    /// Resource limit per command: pids=N (processes and threads), memory=SIZE (bytes, or with K, M, G, T: powers of 1024, e.g. 512M, 1.5G), cpu=CPUS (e.g. 0.5, 2); each may be off. Repeatable or comma-separated [default: pids=4096 where cgroups can be had]
    #[arg(long = "limit", value_name = "NAME=VALUE", value_parser = parse_limit)]
    pub limit: Vec<String>,
}

/// Checks one `--limit` value as clap reads it, so a bad one is a usage
/// error before anything runs.
fn parse_limit(text: &str) -> Result<String, String> {
    LimitSettings::parse_items([text])
        .map(|_| text.to_owned())
        .map_err(|error| error.to_string())
}

impl LimitArgs {
    /// The flags over `file` (the config file's `[limits]`, or none): each
    /// limit given on the command line replaces the file's.
    pub fn over(&self, file: Option<LimitSettings>) -> anyhow::Result<LimitSettings> {
        let flags = LimitSettings::parse_items(self.limit.iter().map(String::as_str))
            .map_err(|error| anyhow::anyhow!("--limit {error}"))?;
        Ok(file.unwrap_or_default().overridden_by(flags))
    }
}

/// `settings` as `--limit` would give them, for messages: `pids=64,
/// memory=512 MiB`.
#[cfg(target_os = "linux")]
pub fn describe(settings: &LimitSettings) -> String {
    let given: Vec<String> = bashtool_core::LimitKind::ALL
        .into_iter()
        .filter_map(|kind| Some(format!("{kind}={}", settings.text(kind)?)))
        .collect();
    given.join(", ")
}

/// Limits asked for that this machine cannot enforce: an error now,
/// naming what is missing, and nothing runs. Linux's: the relay build
/// enforces nothing itself (the `serve` over there checks its own).
#[cfg(target_os = "linux")]
pub fn check_enforceable(settings: &LimitSettings) -> anyhow::Result<()> {
    if settings.required().is_empty() {
        return Ok(());
    }
    bashtool_env_local::limits_info(settings)
        .map(|_| ())
        .map_err(|error| anyhow::anyhow!("--limit {}: {error}", describe(settings)))
}
