//! What an interactive command is launched with: `bash -c <command>` and
//! the environment of a terminal.
//!
//! The environment is the non-interactive one ([`NON_INTERACTIVE_ENV`])
//! with two changes:
//! - `TERM=xterm-256color`, what the terminal emulator behind the job
//!   understands, so full-screen programs draw;
//! - the stand-ins for `vi`, `vim`, `nvim`, `nano` and `emacs` are left
//!   out of `PATH`: with a terminal, an editor the command runs by name
//!   works, and the stand-ins would refuse it.
//!
//! Everything else stays: pagers print (`PAGER=cat`) and `EDITOR` fails
//! at once unless the command asks for a pager or an editor itself, so a
//! program never opens one behind the model's back; `GIT_TERMINAL_PROMPT=0`
//! and `DEBIAN_FRONTEND=noninteractive` keep tools from asking what they
//! would not ask without a terminal.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use crate::config::{LocalConfig, NON_INTERACTIVE_ENV};
use bashtool_process::Launch;
use bashtool_process::{MARKER_VARIABLE, RunMarker};

/// The terminal type interactive commands see.
pub const INTERACTIVE_TERM: &str = "xterm-256color";

/// The variables every interactive command gets (see the module docs).
pub fn interactive_env() -> Vec<(&'static str, &'static str)> {
    NON_INTERACTIVE_ENV
        .iter()
        .map(|&(name, value)| {
            if name == "TERM" {
                (name, INTERACTIVE_TERM)
            } else {
                (name, value)
            }
        })
        .collect()
}

/// The launch of `command` as an interactive job, before the wrappers:
/// `<shell> <shell_args> <command>` in `cwd`, with our environment, the
/// interactive defaults (when `config.non_interactive`), the configured and
/// per-call variables, and the run `marker` (later ones win).
pub fn interactive_launch(
    config: &LocalConfig,
    command: &str,
    cwd: &Path,
    call_env: &BTreeMap<String, String>,
    marker: &RunMarker,
) -> Launch {
    let mut argv: Vec<OsString> = vec![config.shell.as_os_str().to_owned()];
    argv.extend(config.shell_args.iter().map(OsString::from));
    argv.push(OsString::from(command));
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os()
        .filter(|(name, _)| config.env_policy.inherits(&name.to_string_lossy()))
        .collect();
    if config.non_interactive {
        for (name, value) in interactive_env() {
            env.insert(OsString::from(name), OsString::from(value));
        }
    } else {
        env.insert(OsString::from("TERM"), OsString::from(INTERACTIVE_TERM));
    }
    for variables in [&config.env_policy.set, &config.env, call_env] {
        for (name, value) in variables {
            env.insert(OsString::from(name), OsString::from(value));
        }
    }
    env.insert(
        OsString::from(MARKER_VARIABLE),
        OsString::from(marker.value()),
    );
    Launch {
        argv,
        env: env.into_iter().collect(),
        cwd: cwd.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_type_and_no_editor_stand_ins() {
        let env = interactive_env();
        assert!(env.contains(&("TERM", INTERACTIVE_TERM)));
        assert!(env.contains(&("PAGER", "cat")));
        assert!(!env.iter().any(|(name, _)| name.starts_with("BASH_FUNC_")));
        assert!(!env.iter().any(|(name, _)| *name == "PATH"));
        assert_eq!(env.len(), NON_INTERACTIVE_ENV.len());
    }

    #[test]
    fn the_launch_carries_the_marker_and_the_call_variables() {
        let marker = RunMarker::from_value("m-1".to_owned());
        let config = LocalConfig::default();
        let call_env = BTreeMap::from([("TERM".to_owned(), "vt100".to_owned())]);
        let launch = interactive_launch(&config, "echo hi", Path::new("/tmp"), &call_env, &marker);
        assert_eq!(
            launch.argv,
            ["bash", "-c", "--", "echo hi"].map(OsString::from)
        );
        let lookup = |name: &str| {
            launch
                .env
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        };
        assert_eq!(lookup(MARKER_VARIABLE), Some(OsString::from("m-1")));
        assert_eq!(lookup("TERM"), Some(OsString::from("vt100")));
        assert_eq!(lookup("BASH_FUNC_vi%%"), None);
        assert_eq!(launch.cwd, Path::new("/tmp"));
    }
}
