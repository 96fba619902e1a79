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
/// For each call Rust writes the command to a file and, to the driver FIFO
/// ([`call_request`]), the request line, read before the command, and the
/// stamp `<id> <nonce>`, read after it. A call with a working directory or
/// variables of its own also gets a call script ([`call_script`]).
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
    INIT_SCRIPT
        .replace("@DIR@", &quote_path(dir))
        .replace("@REQUEST_WIDTH@", &REQUEST_WIDTH.to_string())
        .replace("@STAMP_WIDTH@", &STAMP_WIDTH.to_string())
        .replace("@MARKER_VARIABLE@", MARKER_VARIABLE)
}

/// Bytes of a request line: the shell reads it with one `read -N`. Room
/// for the longest one (a kind, two 20-digit pipe numbers, a 40-byte
/// marker) and at least one space of padding.
const REQUEST_WIDTH: usize = 96;

/// `words`, space-separated and padded with spaces to [`REQUEST_WIDTH`],
/// newline last. The shell takes each word up to the next space, so the
/// last one needs the padding's first space.
fn request_line(words: &[&str]) -> String {
    let mut line = words.join(" ");
    assert!(
        line.len() < REQUEST_WIDTH - 1 && !words.iter().any(|word| word.contains([' ', '\n'])),
        "a request line is at most {} bytes of words without spaces: {line:?}",
        REQUEST_WIDTH - 2
    );
    line.extend(std::iter::repeat_n(' ', REQUEST_WIDTH - 1 - line.len()));
    line.push('\n');
    line
}

/// The request that writes a snapshot now and acknowledges it with a `W`
/// record.
pub(crate) fn save_now() -> String {
    request_line(&["w"])
}

/// The request that ends the shell; its EXIT trap saves the state.
pub(crate) fn exit_now() -> String {
    request_line(&["x"])
}

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

/// How a call's command is run.
pub(crate) struct CallRequest<'a> {
    pub id: u64,
    /// Save a snapshot afterwards, first freeing `builtin` and `.` of
    /// functions: only a command that may define names is sent so (see
    /// `state::state_effect`).
    pub save: bool,
    /// Through the call script (a working directory or variables of the
    /// call's own) instead of the driver's own call line.
    pub through_script: bool,
    /// Numbers of the stdout and stderr FIFOs (`out.<n>`, `err.<n>`).
    pub pipes: (u64, u64),
    /// Value of [`MARKER_VARIABLE`] for the call's processes.
    pub marker: &'a str,
    pub nonce: &'a str,
}

/// What the driver reads for a call: the request line (`c<save>`, or
/// `C<save>` through the call script, the pipes and the marker), then the
/// stamp `<id> <nonce>`, which the shell reads only once the command is
/// over, so the command cannot see the nonce that makes its status record
/// count.
pub(crate) fn call_request(call: &CallRequest<'_>) -> String {
    debug_assert_eq!(call.nonce.len(), NONCE_DIGITS);
    let kind = format!(
        "{}{}",
        if call.through_script { 'C' } else { 'c' },
        u8::from(call.save)
    );
    let mut request = request_line(&[
        &kind,
        &call.pipes.0.to_string(),
        &call.pipes.1.to_string(),
        call.marker,
    ]);
    let _ = write!(request, "{:020} {}", call.id, call.nonce);
    debug_assert_eq!(request.len(), REQUEST_WIDTH + STAMP_WIDTH);
    request
}

/// Hex digits of a call's nonce (64 random bits).
pub(crate) const NONCE_DIGITS: usize = 16;

/// Bytes of a call's stamp, `<id> <nonce>`: the id in 20 digits (the most
/// a `u64` has), a space, the nonce, no newline. The shell reads it with
/// one `read -N` and writes it into the status record as it is.
pub(crate) const STAMP_WIDTH: usize = 20 + 1 + NONCE_DIGITS;

/// Name of the command file in the session directory (the name is also in
/// `init.sh`).
pub(crate) const COMMAND_FILE: &str = "command.sh";

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
    }

    #[test]
    fn a_call_request_is_a_fixed_width_line_then_the_id_and_nonce() {
        let request = call_request(&CallRequest {
            id: 7,
            save: false,
            through_script: false,
            pipes: (3, 4),
            marker: "m-7",
            nonce: "0123456789abcdef",
        });
        let (first, second) = request.split_at(REQUEST_WIDTH);
        assert_eq!(first.trim_end(), "c0 3 4 m-7");
        assert!(first.ends_with(" \n"));
        assert_eq!(second, "00000000000000000007 0123456789abcdef");
        // The longest: two 20-digit numbers and a 40-byte marker still
        // leave a space of padding; the shell reads the stamp as exactly
        // 37 bytes.
        let longest = call_request(&CallRequest {
            id: u64::MAX,
            save: true,
            through_script: true,
            pipes: (u64::MAX, u64::MAX),
            marker: &"m".repeat(40),
            nonce: "0123456789abcdef",
        });
        assert_eq!(longest.len(), REQUEST_WIDTH + 37);
        assert!(longest.starts_with("C1 18446744073709551615 "));
        assert_eq!(save_now().len(), REQUEST_WIDTH);
        assert_eq!(exit_now().trim_end(), "x");
    }

    #[test]
    fn init_script_gets_its_directory_width_and_marker_name() {
        let script = init_script(Path::new("/s d"));
        assert!(!script.contains('@'), "a placeholder is left");
        assert!(script.contains(&format!(
            "read -r -N {REQUEST_WIDTH} __bt_request <'/s d'/driver"
        )));
        assert!(script.contains(&format!(
            "{MARKER_VARIABLE}=$__bt_marker \\. '/s d'/{COMMAND_FILE} "
        )));
    }
}
