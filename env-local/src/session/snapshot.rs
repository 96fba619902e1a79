//! The shell's state on disk. After every command the driver writes a
//! script that restores it (`declare -p`, `declare -f`, `alias -p`, cwd,
//! umask, options) into one of two slots, alternately, ending with a
//! `# bashtool snapshot complete <n>` line. A slot cut short by a kill lacks
//! that line, so the other slot, one command older, is used instead.

use std::path::{Path, PathBuf};

const COMPLETE: &str = "# bashtool snapshot complete ";

/// Variables `declare -p` lists that must not be restored: bash's own
/// (call stacks, counters, readonly ones) and the per-call marker. A
/// snapshot written by the EXIT trap in the middle of a command sees the
/// call stack of that moment; assigning it to a fresh shell would leave
/// stale entries on bash's stacks.
const NOT_RESTORED: &[&str] = &[
    "BASH_ARGC",
    "BASH_ARGV",
    "BASH_ARGV0",
    "BASH_COMMAND",
    "BASH_EXECUTION_STRING",
    "BASH_LINENO",
    "BASH_REMATCH",
    "BASH_SOURCE",
    "BASH_SUBSHELL",
    "BASH_VERSINFO",
    "BASH_VERSION",
    "BASHOPTS",
    "BASHPID",
    "BASHTOOL_RUN_ID",
    "DIRSTACK",
    "EPOCHREALTIME",
    "EPOCHSECONDS",
    "EUID",
    "FUNCNAME",
    "GROUPS",
    "HISTCMD",
    "LINENO",
    "PIPESTATUS",
    "PPID",
    "RANDOM",
    "SECONDS",
    "SHELLOPTS",
    "SRANDOM",
    "UID",
    "_",
];

/// The snapshot as it may be restored: without the `declare` lines of
/// [`NOT_RESTORED`] variables, and without anything that would poison the
/// driver of the new shell (see [`poisons_the_driver`]). A shell that a
/// command poisoned is replaced by one started from this, so the poison
/// must not come back with the state.
pub(crate) fn restorable(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut skipping_function = false;
    for line in text.split_inclusive('\n') {
        if skipping_function {
            // `declare -f` ends every function with `}` alone on a line.
            skipping_function = line.trim_end_matches('\n') != "}";
            continue;
        }
        if let Some(name) = line.strip_suffix(" () \n") {
            if is_driver_name(name) {
                skipping_function = true;
                continue;
            }
        } else if declares_unrestorable(line) || poisons_the_driver(line) {
            continue;
        }
        kept.push_str(line);
    }
    kept
}

/// Names a function or alias must not have in a restored shell: `builtin`
/// and `.` (the builtins the driver calls by name) and the driver's own
/// `__bt_` names.
fn is_driver_name(name: &str) -> bool {
    name == "builtin" || name == "." || name.starts_with("__bt_")
}

/// A line that would break the driver if restored: an alias named
/// [`is_driver_name`], a driver variable (`__bt_…`, set afresh by each
/// shell; only the text of the user's EXIT trap is kept, unless readonly),
/// or a readonly `POSIXLY_CORRECT` (the driver sets and unsets it).
fn poisons_the_driver(line: &str) -> bool {
    if let Some(rest) = line.strip_prefix("alias ") {
        return is_driver_name(rest.split('=').next().unwrap_or_default());
    }
    let Some((flags, name)) = declared(line) else {
        return false;
    };
    let readonly = flags.contains('r');
    if name == "__bt_user_exit" {
        return readonly;
    }
    name.starts_with("__bt_") || (readonly && name == "POSIXLY_CORRECT")
}

/// The flags and name of a `declare -<flags> <name>[=…]` line.
fn declared(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("declare -")?;
    let (flags, rest) = rest.split_once(' ')?;
    Some((flags, rest.split(['=', '\n']).next().unwrap_or_default()))
}

fn declares_unrestorable(line: &str) -> bool {
    declared(line).is_some_and(|(_, name)| NOT_RESTORED.contains(&name))
}

/// The two slot files in `state_dir`.
pub(crate) fn slots(state_dir: &Path) -> [PathBuf; 2] {
    [state_dir.join("snapshot.0"), state_dir.join("snapshot.1")]
}

/// The sequence number of a complete snapshot file, `None` if it is missing
/// or was cut short.
pub(crate) fn sequence(path: &Path) -> Option<u64> {
    let text = std::fs::read(path).ok()?;
    let text = text.strip_suffix(b"\n")?;
    let start = text
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |position| position + 1);
    std::str::from_utf8(&text[start..])
        .ok()?
        .strip_prefix(COMPLETE)?
        .parse()
        .ok()
}

/// The newest complete snapshot among `candidates`, with its sequence number.
pub(crate) fn newest(candidates: &[PathBuf]) -> Option<(PathBuf, u64)> {
    candidates
        .iter()
        .filter_map(|path| sequence(path).map(|sequence| (path.clone(), sequence)))
        .max_by_key(|(_, sequence)| *sequence)
}

/// Copies `from` to `to` atomically (a private temp file next to it, then
/// rename), so that a reader never sees half a snapshot. The snapshot holds
/// every exported variable (API keys): it is 0600 in a 0700 directory.
pub(crate) fn persist(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let parent = match to.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    crate::state_dir::ensure_private_dir(parent)?;
    let bytes = std::fs::read(from)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".snapshot-")
        .tempfile_in(parent)?;
    temp.write_all(&bytes)?;
    temp.persist(to).map_err(|error| error.error)?;
    Ok(())
}

/// True when a snapshot at `path` may be sourced: a regular file (not a
/// symlink) owned by us that nobody else can write, in a directory that is
/// ours and private. A snapshot is run as code at start: one planted by
/// another user must never be.
pub(crate) fn trusted(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let own = nix::unistd::geteuid().as_raw();
    let parent_ok = path
        .parent()
        .is_some_and(|parent| crate::state_dir::verify_private(parent).is_ok());
    parent_ok
        && std::fs::symlink_metadata(path).is_ok_and(|metadata| {
            metadata.file_type().is_file() && metadata.uid() == own && metadata.mode() & 0o022 == 0
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_bash_internals_and_keeps_user_variables() {
        let text = "declare -a BASH_SOURCE=([0]=\"x\")\ndeclare -x BASHTOOL_RUN_ID=\"m\"\n\
                    declare -- x=\"1\"\ndeclare -ar BASH_VERSINFO=()\ndeclare -- _\nf () \n{ \n    :\n}\n";
        assert_eq!(
            restorable(text),
            "declare -- x=\"1\"\nf () \n{ \n    :\n}\n"
        );
    }

    #[test]
    fn drops_what_would_poison_the_driver() {
        let text = "declare -r __bt_id=\"3\"\ndeclare -- __bt_seq=\"9\"\n\
                    declare -- __bt_user_exit=\"echo bye\"\ndeclare -r POSIXLY_CORRECT\n\
                    declare -r kept=\"1\"\nbuiltin () \n{ \n    echo hijacked\n}\n\
                    __bt_save () \n{ \n    :\n}\nsource () \n{ \n    echo mine\n}\n\
                    alias builtin='echo x'\nalias ll='ls -l'\n";
        assert_eq!(
            restorable(text),
            "declare -- __bt_user_exit=\"echo bye\"\ndeclare -r kept=\"1\"\n\
             source () \n{ \n    echo mine\n}\nalias ll='ls -l'\n"
        );
    }

    #[test]
    fn picks_the_newest_complete_slot() {
        let dir = tempfile::tempdir().expect("temp dir");
        let [first, second] = slots(dir.path());
        std::fs::write(&first, "x=1\n# bashtool snapshot complete 4\n").expect("write");
        std::fs::write(&second, "x=2\n# bashtool snap").expect("write");
        assert_eq!(
            newest(&[first.clone(), second.clone()]),
            Some((first.clone(), 4))
        );
        std::fs::write(&second, "x=2\n# bashtool snapshot complete 5\n").expect("write");
        assert_eq!(newest(&[first, second.clone()]), Some((second, 5)));
    }
}
