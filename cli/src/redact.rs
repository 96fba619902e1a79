//! Secrets masked in output: `--redact on|off` and `--redact-env PATTERN`
//! (on `run`, `call`, `mcp` and `serve`), the config file's `[redact]`,
//! and the redactor they give: the credential shapes and the values of the
//! variables that hold secrets in this process's environment (by the
//! environment policy's drop patterns and `--redact-env`), and of those set
//! for commands (`[env]`, `--env`, `[environment] set`).
//!
//! Background jobs write their output through a masking filter: this
//! binary again, started as `bashtool __redact-filter` (see
//! [`FILTER_ARGUMENT`]), so the file on disk never holds a secret.

use std::sync::Arc;

use anyhow::Context as _;
use bashtool_core::{EnvPolicy, RedactMode, RedactSettings, Redactor};
#[cfg(target_os = "linux")]
use bashtool_env_local::LocalConfig;
use clap::Args;

/// The first argument that makes this binary the job output filter. Not a
/// subcommand: nobody types it, and it must work whatever the flags.
#[cfg(target_os = "linux")]
pub const FILTER_ARGUMENT: &str = "__redact-filter";

/// `--redact` and `--redact-env`.
#[derive(Debug, Clone, Default, Args)]
pub struct RedactArgs {
    /// Mask secrets in what the model sees, progress, logs and job outputs: on, or off [default: on]
    #[arg(long, value_name = "on|off", value_parser = parse_mode)]
    pub redact: Option<RedactMode>,
    /// Also mask the values of the variables matching PATTERN (glob over names, repeatable); variables that --drop-env and the defaults withhold are masked anyway
    #[arg(long = "redact-env", value_name = "PATTERN")]
    pub redact_env: Vec<String>,
}

fn parse_mode(text: &str) -> Result<RedactMode, String> {
    match text {
        "on" => Ok(RedactMode::On),
        "off" => Ok(RedactMode::Off),
        other => Err(format!("expected on or off, not {other:?}")),
    }
}

impl RedactArgs {
    /// The file's `[redact]` with the flags over it; patterns checked, each
    /// refused with where it came from.
    pub fn settings(&self, file: &RedactSettings) -> anyhow::Result<RedactSettings> {
        file.validate()
            .context("in the config file's [redact] env")?;
        let flags = RedactSettings {
            mode: self.redact.unwrap_or(file.mode),
            env: self.redact_env.clone(),
        };
        flags.validate().context("--redact-env")?;
        let mut settings = file.clone();
        settings.mode = flags.mode;
        settings.env.extend(flags.env);
        Ok(settings)
    }
}

/// The redactor of `settings` for commands that run here: over this
/// process's environment and the variables `local` sets, by its policy.
/// When masking is on, background jobs get the masking filter too.
#[cfg(target_os = "linux")]
pub fn apply(settings: &RedactSettings, local: &mut LocalConfig) -> Option<Arc<Redactor>> {
    let redactor = redactor(settings, &local.env_policy, &local.env);
    local.redact_filter = redactor.as_ref().and_then(|_| filter_program());
    redactor
}

/// The redactor of `settings` over this process's environment and
/// `extra` variables set for commands, by `policy`; `None` when off.
/// Values that are not UTF-8 cannot appear in cleaned output as they are,
/// and are left out.
pub fn redactor(
    settings: &RedactSettings,
    policy: &EnvPolicy,
    extra: &std::collections::BTreeMap<String, String>,
) -> Option<Arc<Redactor>> {
    let inherited: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect();
    let variables = inherited
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .chain(
            policy
                .set
                .iter()
                .chain(extra)
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );
    // The settings were validated where they were read.
    settings
        .redactor(variables, policy)
        .ok()
        .flatten()
        .map(Arc::new)
}

/// `bashtool __redact-filter`: the program line env-local starts between a
/// background job and its output file. `None` when this binary cannot be
/// found (the file is then written unmasked; reads are still masked).
#[cfg(target_os = "linux")]
fn filter_program() -> Option<Vec<std::ffi::OsString>> {
    let program = std::env::current_exe().ok()?;
    Some(vec![
        program.into_os_string(),
        std::ffi::OsString::from(FILTER_ARGUMENT),
    ])
}

/// The filter's main: the secrets line, then the job's output on stdin,
/// masked to stdout. Linux's: the relay build starts no job here.
#[cfg(target_os = "linux")]
pub fn run_filter() -> std::process::ExitCode {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    match bashtool_env_local::run_redact_filter(stdin, stdout) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file_and_bad_patterns_name_their_source() {
        let file = RedactSettings {
            mode: RedactMode::Off,
            env: vec!["A_*".into()],
        };
        let args = RedactArgs {
            redact: Some(RedactMode::On),
            redact_env: vec!["B".into()],
        };
        let settings = args.settings(&file).expect("valid");
        assert_eq!(settings.mode, RedactMode::On);
        assert_eq!(settings.env, ["A_*", "B"]);
        let bad = RedactArgs {
            redact: None,
            redact_env: vec![String::new()],
        };
        assert_eq!(
            format!(
                "{:#}",
                bad.settings(&RedactSettings::default())
                    .expect_err("refused")
            ),
            "--redact-env: \"\" is not a pattern of variable names: use letters, digits, _ and the wildcards * and ?"
        );
        let bad_file = RedactSettings {
            env: vec!["A=B".into()],
            ..RedactSettings::default()
        };
        assert!(
            format!(
                "{:#}",
                RedactArgs::default()
                    .settings(&bad_file)
                    .expect_err("refused")
            )
            .starts_with("in the config file's [redact] env: \"A=B\"")
        );
        assert_eq!(
            parse_mode("maybe"),
            Err("expected on or off, not \"maybe\"".to_owned())
        );
    }
}
