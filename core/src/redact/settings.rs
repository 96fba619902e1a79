//! Whether output is masked and which variables' values: the settings as
//! the CLI's flags (`--redact on|off`, `--redact-env PATTERN`), its config
//! file (`[redact]`) and the remote protocol's `initialize` carry them.

use serde::{Deserialize, Serialize};

use super::redactor::Redactor;
use crate::env_policy::{EnvPolicy, matches_any};
use crate::error::Error;

/// Masking on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RedactMode {
    /// Secrets are masked (the default).
    #[default]
    On,
    /// Output is passed on as the command wrote it.
    Off,
}

/// What is masked: with mode `on`, the well-known credential shapes and the
/// values of the variables that the environment policy's drop patterns
/// name (withheld from commands, or passed on by `keep`) or that match
/// `env`.
///
/// ```
/// use bashtool_core::{EnvPolicy, RedactSettings};
/// let settings = RedactSettings { env: vec!["DB_URL".into()], ..RedactSettings::default() };
/// let redactor = settings
///     .redactor([("GITHUB_TOKEN", "t0ken-value-123"), ("DB_URL", "postgres://db/x"), ("HOME", "/home/me")], &EnvPolicy::default())
///     .expect("valid patterns")
///     .expect("on");
/// assert_eq!(redactor.names().collect::<Vec<_>>(), ["DB_URL", "GITHUB_TOKEN"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedactSettings {
    /// `on` or `off`.
    pub mode: RedactMode,
    /// Patterns of variable names whose values are masked too (globs over
    /// whole names, ignoring case, like the environment policy's).
    pub env: Vec<String>,
}

impl RedactSettings {
    /// Settings with masking off.
    pub fn off() -> Self {
        Self {
            mode: RedactMode::Off,
            env: Vec::new(),
        }
    }

    /// True when masking is on.
    pub fn is_on(&self) -> bool {
        self.mode == RedactMode::On
    }

    /// Refuses a pattern that cannot name a variable: empty, or with
    /// characters other than letters, digits, `_`, `*` and `?`.
    pub fn validate(&self) -> Result<(), Error> {
        for pattern in &self.env {
            let valid = !pattern.is_empty()
                && pattern
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'*' | b'?'));
            if !valid {
                return Err(Error::InvalidRedactPattern {
                    pattern: pattern.clone(),
                });
            }
        }
        Ok(())
    }

    /// Whether the value of a variable named `name` is masked.
    pub fn masks(&self, name: &str, policy: &EnvPolicy) -> bool {
        policy.marks_secret(name) || matches_any(&self.env, name)
    }

    /// The redactor for these settings over `variables` (the process's
    /// environment, and variables set for commands), `None` when masking
    /// is off. An invalid pattern is an error and nothing is built.
    pub fn redactor<'a>(
        &self,
        variables: impl IntoIterator<Item = (&'a str, &'a str)>,
        policy: &EnvPolicy,
    ) -> Result<Option<Redactor>, Error> {
        self.validate()?;
        if !self.is_on() {
            return Ok(None);
        }
        Ok(Some(Redactor::new(
            variables
                .into_iter()
                .filter(|(name, _)| self.masks(name, policy)),
        )))
    }
}
