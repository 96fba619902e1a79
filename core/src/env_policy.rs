//! Which inherited environment variables a command sees.
//!
//! An agent's client (an editor, a desktop app) starts the tool with its own
//! environment, which often holds `ANTHROPIC_API_KEY` or `GITHUB_TOKEN`; a
//! command the model writes should not see those unless someone chose so.
//! The policy filters what is *inherited*; variables set on purpose (the
//! policy's `set`, the environment's configured variables, a call's
//! `environment` field) are never dropped. Modelled on Codex's
//! `shell_environment_policy`.
//!
//! ```
//! use bashtool_core::EnvPolicy;
//! let policy = EnvPolicy::default();
//! assert!(!policy.inherits("ANTHROPIC_API_KEY"));
//! assert!(policy.inherits("PATH"));
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

/// Name patterns dropped by default: anything that looks like a secret.
pub const DEFAULT_EXCLUDES: [&str; 4] = ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"];

/// The environment policy; the TOML section `[environment]` of the CLI's
/// config file deserializes into it.
///
/// A variable inherited from the tool's own environment is passed on when
/// it matches `include_only` (if that list is not empty), and then either
/// matches `keep`, or matches neither `exclude` nor, unless
/// `ignore_default_excludes`, the [`DEFAULT_EXCLUDES`]. Patterns match whole
/// names, ignoring case; `*` stands for any run of characters, `?` for one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvPolicy {
    /// Pass on every inherited variable that `exclude` does not name.
    pub ignore_default_excludes: bool,
    /// When not empty, only inherited variables matching one of these.
    pub include_only: Vec<String>,
    /// Inherited variables to drop, on top of the defaults.
    pub exclude: Vec<String>,
    /// Inherited variables passed on even when a drop pattern matches.
    pub keep: Vec<String>,
    /// Variables added to every command (never dropped).
    pub set: BTreeMap<String, String>,
}

impl EnvPolicy {
    /// Whether an inherited variable named `name` is passed on.
    pub fn inherits(&self, name: &str) -> bool {
        if !self.include_only.is_empty() && !matches_any(&self.include_only, name) {
            return false;
        }
        if matches_any(&self.keep, name) {
            return true;
        }
        if matches_any(&self.exclude, name) {
            return false;
        }
        self.ignore_default_excludes || !matches_any(&DEFAULT_EXCLUDES, name)
    }

    /// Whether the policy may drop any inherited variable at all (the tool's
    /// description says so only then).
    pub fn drops_any(&self) -> bool {
        !self.ignore_default_excludes || !self.exclude.is_empty() || !self.include_only.is_empty()
    }

    /// Whether a variable named `name` holds a secret by this policy's
    /// drop patterns (`exclude`, and the defaults unless ignored): its
    /// value is masked in output even where `keep` passes it on, since
    /// `keep` lets commands use a secret, not the model read it.
    /// `include_only` does not count: it narrows what commands see without
    /// saying that the rest is secret.
    pub fn marks_secret(&self, name: &str) -> bool {
        matches_any(&self.exclude, name)
            || (!self.ignore_default_excludes && matches_any(&DEFAULT_EXCLUDES, name))
    }

    /// The names in `names` this policy drops.
    pub fn dropped<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        names
            .into_iter()
            .filter(|name| !self.inherits(name))
            .collect()
    }
}

pub(crate) fn matches_any<S: AsRef<str>>(patterns: &[S], name: &str) -> bool {
    patterns
        .iter()
        .any(|pattern| glob_matches(pattern.as_ref(), name))
}

/// Whole-name glob match, ignoring ASCII case: `*` any run, `?` one char.
fn glob_matches(pattern: &str, name: &str) -> bool {
    if pattern.is_ascii() && name.is_ascii() {
        // Names and patterns are ASCII in practice: compare bytes, with no
        // allocation. This runs for every inherited variable and pattern on
        // every spawn.
        if let Some(inner) = pattern
            .strip_prefix('*')
            .and_then(|rest| rest.strip_suffix('*'))
            .filter(|inner| !inner.contains(['*', '?']))
        {
            // `*WORD*`, the shape of the default patterns: a substring.
            return inner.is_empty()
                || name
                    .as_bytes()
                    .windows(inner.len())
                    .any(|window| window.eq_ignore_ascii_case(inner.as_bytes()));
        }
        return glob_matches_by(pattern.as_bytes(), name.as_bytes(), b'*', |wanted, byte| {
            wanted == b'?' || wanted.eq_ignore_ascii_case(&byte)
        });
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    glob_matches_by(&pattern, &name, '*', |wanted, character| {
        wanted == '?' || wanted.eq_ignore_ascii_case(&character)
    })
}

/// The matcher of [`glob_matches`] over bytes or chars. Iterative, with one
/// backtrack point: linear in practice, never exponential on patterns with
/// many stars.
fn glob_matches_by<T: Copy + PartialEq>(
    pattern: &[T],
    name: &[T],
    star_symbol: T,
    matches: impl Fn(T, T) -> bool,
) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && matches(pattern[p], name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == star_symbol {
            star = Some((p, n));
            p += 1;
        } else if let Some((star_p, star_n)) = star {
            p = star_p + 1;
            n = star_n + 1;
            star = Some((star_p, star_n + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|item| *item == star_symbol)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_names_that_look_like_secrets_by_default() {
        let policy = EnvPolicy::default();
        let names = [
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "DB_PASSWORD",
            "PATH",
            "HOME",
            "LANG",
            "SSH_AUTH_SOCK",
        ];
        assert_eq!(
            policy.dropped(names),
            [
                "ANTHROPIC_API_KEY",
                "GITHUB_TOKEN",
                "aws_secret_access_key",
                "DB_PASSWORD"
            ]
        );
        assert!(policy.drops_any());
    }

    #[test]
    fn keep_include_only_exclude_and_the_default_switch() {
        let policy = EnvPolicy {
            keep: vec!["GITHUB_TOKEN".into()],
            exclude: vec!["AWS_*".into()],
            ..EnvPolicy::default()
        };
        assert_eq!(
            policy.dropped(["GITHUB_TOKEN", "AWS_REGION", "OPENAI_API_KEY", "PATH"]),
            ["AWS_REGION", "OPENAI_API_KEY"]
        );
        let only = EnvPolicy {
            include_only: vec!["PATH".into(), "HOME".into(), "GH_TOKEN".into()],
            ..EnvPolicy::default()
        };
        // An explicit include does not override the secret defaults: `keep` does.
        assert_eq!(
            only.dropped(["PATH", "HOME", "USER", "GH_TOKEN"]),
            ["USER", "GH_TOKEN"]
        );
        let all = EnvPolicy {
            ignore_default_excludes: true,
            ..EnvPolicy::default()
        };
        assert!(all.inherits("ANTHROPIC_API_KEY"));
        assert!(!all.drops_any());
    }

    #[test]
    fn secrets_are_named_by_the_drop_patterns_even_when_kept() {
        let policy = EnvPolicy {
            keep: vec!["GITHUB_TOKEN".into()],
            exclude: vec!["AWS_*".into()],
            include_only: vec!["PATH".into()],
            ..EnvPolicy::default()
        };
        assert!(policy.marks_secret("GITHUB_TOKEN"));
        assert!(policy.marks_secret("AWS_REGION"));
        assert!(!policy.marks_secret("HOME"));
        let all = EnvPolicy {
            ignore_default_excludes: true,
            ..EnvPolicy::default()
        };
        assert!(!all.marks_secret("GITHUB_TOKEN"));
    }

    #[test]
    fn globs_match_whole_names_ignoring_case() {
        assert!(glob_matches("*key*", "MONKEY_BUSINESS"));
        assert!(glob_matches("*KEY*", "key"));
        assert!(!glob_matches("*KEY*", "KE"));
        assert!(glob_matches("**", "x"));
        assert!(glob_matches("*K?Y*", "MONKEY"));
        assert!(glob_matches("A?C", "abc"));
        assert!(!glob_matches("A?C", "abbc"));
        assert!(glob_matches("*", ""));
        assert!(!glob_matches("KEY", "KEYS"));
        assert!(glob_matches("*a*b*c*d*e*", "xaxbxcxdxex"));
        assert!(!glob_matches(&"*a".repeat(30), &"a".repeat(29)));
        // Outside ASCII, `?` is one character, not one byte.
        assert!(glob_matches("CAF?", "café"));
        assert!(glob_matches("*É*", "xÉx"));
        // Case is ignored for ASCII letters only.
        assert!(!glob_matches("*É*", "xéx"));
    }

    #[test]
    fn parses_the_toml_shape() {
        let policy: EnvPolicy = serde_json::from_value(serde_json::json!({
            "exclude": ["AWS_*"],
            "set": {"CI": "1"}
        }))
        .expect("valid");
        assert_eq!(policy.exclude, ["AWS_*"]);
        assert_eq!(policy.set["CI"], "1");
        assert!(serde_json::from_value::<EnvPolicy>(serde_json::json!({"exlude": []})).is_err());
    }
}
