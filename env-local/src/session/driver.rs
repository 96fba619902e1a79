//! The bash side of a session: the driver script the shell sources at
//! startup, and the lines Rust writes to the shell's stdin.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::MARKER_VARIABLE;

/// The shell side of a session: `init.sh`, sourced when a shell starts,
/// defines `__bt_post` and `__bt_save` and re-arms the EXIT trap.
///
/// For each call Rust writes the command to a file and a call script:
///
/// ```text
/// __bt_id=7 __bt_back=; [__bt_back=$PWD && builtin cd -- 'DIR' &&] \
///   BASHTOOL_RUN_ID='m' VAR='x' source 'CMD' </dev/null >|'OUT' 2>|'ERR' 3>&-; \
///   __bt_post $?
/// ```
///
/// and one short line on the shell's stdin, [`RUN_CALL`]. The command is
/// `source`d at top level, not in a function, so that `declare` makes
/// globals as at a prompt; no fork; `return` works. It has its own
/// descriptors, which bash
/// restores when `source` returns, so `exec >/dev/null` or `exec 3>&-` in a
/// command cannot take the shell's own along. fd 3 is the control pipe to
/// Rust: statuses never travel on the command's output.
///
/// Everything here must survive the user's `set -euo pipefail`, `set -x`,
/// and functions or aliases with ordinary names: builtins are called through
/// `builtin`, nothing may fail unguarded, and nothing forks.
pub(crate) const SCRIPTS: [(&str, &str); 1] = [("init.sh", include_str!("scripts/init.sh"))];

/// A line that writes a snapshot now and acknowledges it with a `W` record.
pub(crate) const SAVE_NOW: &str = "__bt_save; builtin printf 'W\\0' >&3\n";

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

/// The lines that bring a new shell up: defaults, the snapshot to restore
/// (if any), the session directory and snapshot number, and `init.sh`.
pub(crate) fn startup_lines(dir: &Path, snapshot: Option<&Path>, sequence: u64) -> String {
    let mut lines = "builtin shopt -s expand_aliases\n".to_owned();
    if let Some(snapshot) = snapshot {
        let _ = writeln!(
            lines,
            "builtin source {} </dev/null >/dev/null 2>&1 3>&-",
            quote_path(snapshot)
        );
    }
    let _ = writeln!(
        lines,
        "__bt_dir={} __bt_seq={sequence}\nbuiltin . \"$__bt_dir/init.sh\"",
        quote_path(dir)
    );
    lines
}

/// The one line written to the shell's stdin per call: it sources the call
/// script (bash reads a script on a pipe one byte per `read(2)`, so the long
/// line goes through a file instead).
pub(crate) const RUN_CALL: &str = "builtin . \"$__bt_dir/call.sh\"\n";

/// Name of the call script in the session directory.
pub(crate) const CALL_SCRIPT: &str = "call.sh";

/// What one call asks of the shell.
pub(crate) struct CallLine<'a> {
    pub id: u64,
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
/// stderr (per-call FIFOs) and without the control fd.
pub(crate) fn call_line(call: &CallLine<'_>) -> String {
    let mut line = format!("__bt_id={} __bt_back=; ", call.id);
    if let Some(cwd) = call.cwd {
        let _ = write!(
            line,
            "__bt_back=$PWD && builtin cd -- {} 2>/dev/null && ",
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
        "source {} </dev/null >|{} 2>|{} 3>&-; __bt_post $?",
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
    fn call_line_sources_the_command_with_its_own_descriptors() {
        let env = BTreeMap::from([("A".to_owned(), "x y".to_owned())]);
        let line = call_line(&CallLine {
            id: 7,
            command_file: Path::new("/s/command.sh"),
            stdout_fifo: Path::new("/s/out.7"),
            stderr_fifo: Path::new("/s/err.7"),
            cwd: Some(Path::new("/w d")),
            env: &env,
            marker: "m-7",
        });
        assert_eq!(
            line,
            "__bt_id=7 __bt_back=; __bt_back=$PWD && builtin cd -- '/w d' 2>/dev/null && \
             BASHTOOL_RUN_ID='m-7' A='x y' source '/s/command.sh' </dev/null >|'/s/out.7' \
             2>|'/s/err.7' 3>&-; __bt_post $?\n"
        );
    }
}
