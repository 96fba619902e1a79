//! The bash side of a session: the driver script the shell sources at
//! startup, and the lines Rust writes to the shell's stdin.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::MARKER_VARIABLE;

/// The shell side of a session: `init.sh`, run by `bash -c` when a shell
/// starts (after the snapshot, if any, is restored). It is one loop that
/// reads requests from the driver FIFO and writes records to the control
/// FIFO (see its header for why each part is built as it is).
///
/// For each call Rust writes the command to a file, a call script
/// ([`call_script`]) and two lines to the driver FIFO ([`call_request`]):
/// `c<save>`, read before the command, and `<id> <nonce>`, read after it.
/// The command is `source`d at top level, not in a function, so that
/// `declare` makes globals as at a prompt; no fork; `return` works. It has
/// its own stdin, stdout and stderr, which bash restores when `source`
/// returns, so `exec >/dev/null` in a command cannot take the shell's own
/// along.
///
/// Everything here must survive the user's `set -euo pipefail`, `set -x`,
/// `IFS`, and functions or aliases with any name: the driver is parsed
/// before any alias exists, builtins are called through `builtin` (freed
/// of a function of that name before each use), nothing may fail
/// unguarded, and nothing forks.
const INIT_SCRIPT: &str = include_str!("scripts/init.sh");

/// Name of the driver script in the session directory.
pub(crate) const INIT_NAME: &str = "init.sh";

/// `init.sh` for the session directory `dir`: its paths are written into
/// the script, not kept in variables a command could change.
pub(crate) fn init_script(dir: &Path) -> String {
    INIT_SCRIPT.replace("@DIR@", &quote_path(dir))
}

/// The request that writes a snapshot now and acknowledges it with a `W`
/// record.
pub(crate) const SAVE_NOW: &str = "w\n";

/// The request that ends the shell; its EXIT trap saves the state.
pub(crate) const EXIT_NOW: &str = "x\n";

/// `text` as one bash word in single quotes (`'` becomes `'\''`). Any byte
/// but NUL is safe inside, newlines included.
pub(crate) fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for character in text.chars() {
        if character == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(character);
        }
    }
    quoted.push('\'');
    quoted
}

fn quote_path(path: &Path) -> String {
    quote(&path.to_string_lossy())
}

/// The `-c` script that brings a new shell up: the snapshot to restore (if
/// any) and its number, then `init.sh`, which never returns.
pub(crate) fn startup_script(dir: &Path, snapshot: Option<&Path>, sequence: u64) -> String {
    let restore = snapshot.map(quote_path).unwrap_or_default();
    format!(
        "__bt_seq={sequence} __bt_restore={restore}; builtin . {}",
        quote_path(&dir.join(INIT_NAME))
    )
}

/// The two driver lines of call `id`: `c<save>` (the shell sources the
/// call script; with `c1` it then saves a snapshot, and first frees
/// `builtin` and `.` of functions: only a command that may define names is
/// sent with `c1`, see `state::state_effect`) and `<id> <nonce>`, which
/// the shell reads only once the command is over, so the command cannot
/// see the nonce that makes its status record count.
pub(crate) fn call_request(id: u64, save: bool, nonce: &str) -> String {
    // A fixed width: the shell reads the second line with one `read -N`.
    debug_assert_eq!(nonce.len(), NONCE_DIGITS);
    format!("c{}\n{id:020} {nonce}\n", u8::from(save))
}

/// Hex digits of a call's nonce (64 random bits).
pub(crate) const NONCE_DIGITS: usize = 16;

/// Name of the call script in the session directory.
pub(crate) const CALL_SCRIPT: &str = "call.sh";

/// What one call asks of the shell.
pub(crate) struct CallLine<'a> {
    pub command_file: &'a Path,
    pub stdout_fifo: &'a Path,
    pub stderr_fifo: &'a Path,
    /// Run in this directory and go back afterwards.
    pub cwd: Option<&'a Path>,
    /// Variables for this call only (bash's temporary environment of the
    /// `source` command: exported to its processes, gone afterwards).
    pub env: &'a BTreeMap<String, String>,
    /// Value of [`MARKER_VARIABLE`]: every process of the call inherits it,
    /// so that those which left the shell's session (`setsid`) are found.
    pub marker: &'a str,
}

/// The call script of one call. The command is `source`d at top level with
/// its own stdin (`/dev/null`: a command that reads gets EOF), stdout and
/// stderr (per-call FIFOs). The shell parses it with the user's aliases on,
/// so every command word is quoted (`\builtin`: no alias applies). The
/// command runs through `.`, not `builtin source`: with `builtin`, bash
/// drops the per-call variables after the command's first command.
pub(crate) fn call_script(call: &CallLine<'_>) -> String {
    let mut line = String::new();
    if let Some(cwd) = call.cwd {
        let _ = write!(
            line,
            "__bt_back=$PWD && \\builtin cd -- {} 2>/dev/null && ",
            quote_path(cwd)
        );
    }
    let _ = write!(line, "{MARKER_VARIABLE}={} ", quote(call.marker));
    for (name, value) in call.env {
        if bashtool_core::is_valid_variable_name(name) {
            let _ = write!(line, "{name}={} ", quote(value));
        }
    }
    let _ = writeln!(
        line,
        "\\. {} </dev/null >|{} 2>|{}",
        quote_path(call.command_file),
        quote_path(call.stdout_fifo),
        quote_path(call.stderr_fifo),
    );
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_single_quotes_and_keeps_newlines() {
        assert_eq!(quote("it's\nok"), "'it'\\''s\nok'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn call_script_sources_the_command_with_its_own_descriptors() {
        let env = BTreeMap::from([("A".to_owned(), "x y".to_owned())]);
        let line = call_script(&CallLine {
            command_file: Path::new("/s/command.sh"),
            stdout_fifo: Path::new("/s/out.7"),
            stderr_fifo: Path::new("/s/err.7"),
            cwd: Some(Path::new("/w d")),
            env: &env,
            marker: "m-7",
        });
        assert_eq!(
            line,
            "__bt_back=$PWD && \\builtin cd -- '/w d' 2>/dev/null && \
             BASHTOOL_RUN_ID='m-7' A='x y' \\. '/s/command.sh' </dev/null \
             >|'/s/out.7' 2>|'/s/err.7'\n"
        );
    }

    #[test]
    fn startup_script_restores_then_runs_the_driver() {
        assert_eq!(
            startup_script(Path::new("/s"), Some(Path::new("/s/restore.sh")), 4),
            "__bt_seq=4 __bt_restore='/s/restore.sh'; builtin . '/s/init.sh'"
        );
        assert_eq!(
            startup_script(Path::new("/s"), None, 0),
            "__bt_seq=0 __bt_restore=; builtin . '/s/init.sh'"
        );
        assert_eq!(
            call_request(7, false, "0123456789abcdef"),
            "c0\n00000000000000000007 0123456789abcdef\n"
        );
        // The shell reads the second line as exactly 38 bytes.
        assert_eq!(
            call_request(u64::MAX, true, "0123456789abcdef").len(),
            3 + 38
        );
    }
}
