//! The servers' logs (`mcp`, `serve`): never on stdout, which carries only
//! the protocol.

use anyhow::Context as _;
use tracing_subscriber::EnvFilter;

/// What is logged: `--log-level`, else `$RUST_LOG`, else the config
/// file's `log_level`, else warnings and errors.
pub fn filter(flag: Option<&str>, configured: Option<&str>) -> String {
    flag.map(str::to_owned)
        .or_else(|| {
            std::env::var("RUST_LOG")
                .ok()
                .filter(|value| !value.is_empty())
        })
        .or_else(|| configured.map(str::to_owned))
        .unwrap_or_else(|| "warn".to_owned())
}

/// `filter` parsed: a level (`info`) or a `RUST_LOG` filter.
pub fn parse(filter: &str) -> anyhow::Result<EnvFilter> {
    EnvFilter::try_new(filter)
        .with_context(|| format!("--log-level {filter:?} is not a level or a RUST_LOG filter"))
}

/// Logs to stderr, in colour when it is a terminal and `NO_COLOR` is unset.
pub fn to_stderr(filter: EnvFilter) -> anyhow::Result<()> {
    let ansi = std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_ansi(ansi)
        .try_init()
        .map_err(|error| anyhow::anyhow!("{error}"))
}

/// Logs to `log` (`serve`: the original stderr, moved off fd 2), plain.
#[cfg(target_os = "linux")]
pub fn to_file(filter: EnvFilter, log: std::fs::File) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(log))
        .with_env_filter(filter)
        .with_ansi(false)
        .try_init()
        .map_err(|error| anyhow::anyhow!("{error}"))
}
