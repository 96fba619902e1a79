//! Stand-ins for the interactive editors (`vi`, `vim`, `nvim`, `nano`,
//! `emacs`). Run by name without a terminal, an editor waits forever on the
//! empty stdin; each stand-in fails at once with advice instead, and lets
//! batch and informational flags (`vim -es`, `emacs --batch`, `--version`)
//! through to the real program.
//!
//! The stand-ins are small `sh` scripts in a directory of bashtool's state
//! put first in `PATH`, so every program the command starts finds them:
//! bash, `sh -c`, `xargs`, `find -exec`, make recipes. They used to be bash
//! functions exported in the environment (`BASH_FUNC_vim%%`), which every
//! bash parses at start: 0.11 ms of CPU per `bash -c true` (measured, 0.79
//! → 0.90 ms), a tenth of a stateless call. The functions remain the
//! fallback when there is no state directory to keep the scripts in; they
//! guard bash only.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The editors guarded, with the `case` patterns of the arguments that run
/// each without a terminal (ex mode, information).
const EDITORS: &[(&str, &str)] = &[
    ("vi", VIM_BATCH),
    ("vim", VIM_BATCH),
    (
        "nvim",
        "*\" -es \"*|*\" -Es \"*|*\" --headless \"*|*\" --version \"*|*\" --help \"*|*\" -h \"*",
    ),
    (
        "nano",
        "*\" --version \"*|*\" -V \"*|*\" --help \"*|*\" -h \"*",
    ),
    (
        "emacs",
        "*\" --batch \"*|*\" -batch \"*|*\" --script \"*|*\" --version \"*|*\" --help \"*",
    ),
];

const VIM_BATCH: &str = "*\" -es \"*|*\" -Es \"*|*\" --version \"*|*\" --help \"*|*\" -h \"*";

/// Name of the stand-ins' directory in the state directory.
pub(crate) const DIRECTORY_NAME: &str = "editor-guards";

/// `PATH` when the environment has none: bash's own default, without `.`.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin";

/// What the stand-in for `name` prints before it fails.
pub(crate) fn refusal(name: &str) -> String {
    format!(
        "{name}: an interactive editor cannot run here (no terminal, stdin is empty); \
         edit files with sed -i, or write them with a heredoc: cat <<'EOF' > file"
    )
}

/// Puts the stand-ins in front of `env`'s `PATH` (or, without a state
/// directory, adds the exported bash functions).
pub(crate) fn guard(env: &mut BTreeMap<OsString, OsString>) {
    match directory() {
        Some(dir) => {
            let mut path = dir.as_os_str().to_owned();
            path.push(":");
            match env.get(std::ffi::OsStr::new("PATH")) {
                Some(rest) => path.push(rest),
                None => path.push(DEFAULT_PATH),
            }
            env.insert(OsString::from("PATH"), path);
        }
        None => {
            for (name, batch) in EDITORS {
                env.insert(
                    OsString::from(format!("BASH_FUNC_{name}%%")),
                    OsString::from(function_body(name, batch)),
                );
            }
        }
    }
}

/// The stand-ins' directory, written once per process; `None` when it
/// cannot be had (no state directory, a read-only home).
pub(crate) fn directory() -> Option<&'static Path> {
    static DIRECTORY: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIRECTORY
        .get_or_init(|| {
            let state = crate::default_state_dir().ok()?;
            let dir = state.join(DIRECTORY_NAME);
            write_directory(&state, &dir).ok()?;
            Some(dir)
        })
        .as_deref()
}

/// Creates (or checks) the private directory and writes each stand-in whose
/// content differs, through a temporary file and a rename, so that another
/// bashtool process never runs a half-written one.
fn write_directory(state: &Path, dir: &Path) -> std::io::Result<()> {
    crate::ensure_private_dir(state)?;
    crate::ensure_private_dir(dir)?;
    for (name, batch) in EDITORS {
        let script = stand_in_script(dir, name, batch);
        let path = dir.join(name);
        let current = std::fs::read(&path).ok();
        let mode = std::fs::symlink_metadata(&path)
            .ok()
            .map(|metadata| metadata.permissions().mode() & 0o7777);
        if current.as_deref() == Some(script.as_bytes()) && mode == Some(0o700) {
            continue;
        }
        let temporary = dir.join(format!(".{name}.{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temporary)?;
        let written = file
            .write_all(script.as_bytes())
            .and_then(|()| file.sync_data());
        drop(file);
        if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, &path)) {
            let _ = std::fs::remove_file(&temporary);
            return Err(error);
        }
    }
    Ok(())
}

/// `text` as one `sh` word in single quotes.
fn sh_quote(text: &[u8]) -> Vec<u8> {
    let mut quoted = Vec::with_capacity(text.len() + 2);
    quoted.push(b'\'');
    for &byte in text {
        if byte == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(byte);
        }
    }
    quoted.push(b'\'');
    quoted
}

/// The stand-in for `name`: refuse unless a batch flag is given, then run
/// the first `name` in `PATH` that is not this directory's.
fn stand_in_script(dir: &Path, name: &str, batch: &str) -> String {
    let dir = String::from_utf8(sh_quote(dir.as_os_str().as_bytes()))
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
    let refusal = String::from_utf8_lossy(&sh_quote(refusal(name).as_bytes())).into_owned();
    format!(
        "#!/bin/sh\n\
         # Written by bashtool: `{name}` without a terminal would wait forever on\n\
         # an empty stdin. Batch and informational flags reach the real one.\n\
         case \" $* \" in\n\
         \x20 {batch}) ;;\n\
         \x20 *) printf '%s\\n' {refusal} >&2; exit 1 ;;\n\
         esac\n\
         guards={dir}\n\
         set -f\n\
         IFS=:\n\
         for dir in $PATH; do\n\
         \x20 [ \"$dir\" = \"$guards\" ] && continue\n\
         \x20 [ -f \"${{dir:-.}}/{name}\" ] && [ -x \"${{dir:-.}}/{name}\" ] && exec \"${{dir:-.}}/{name}\" \"$@\"\n\
         done\n\
         printf '%s\\n' '{name}: command not found' >&2\n\
         exit 127\n"
    )
}

/// The exported-function fallback of the stand-in for `name` (bash only).
fn function_body(name: &str, batch: &str) -> String {
    let refusal = refusal(name).replace('\'', "'\\''");
    format!(
        "() {{ case \" $* \" in {batch}) command {name} \"$@\";; *) echo '{refusal}' >&2; return 1;; esac; }}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_function_fallback_fails_with_the_same_advice() {
        assert_eq!(
            function_body("nano", "*\" -V \"*"),
            "() { case \" $* \" in *\" -V \"*) command nano \"$@\";; *) echo 'nano: an interactive \
             editor cannot run here (no terminal, stdin is empty); edit files with sed -i, or \
             write them with a heredoc: cat <<'\\''EOF'\\'' > file' >&2; return 1;; esac; }"
        );
    }

    #[test]
    fn a_stand_in_skips_its_own_directory() {
        let script = stand_in_script(Path::new("/s/it's"), "vim", VIM_BATCH);
        assert!(script.starts_with("#!/bin/sh\n"), "{script}");
        assert!(script.contains("guards='/s/it'\\''s'\n"), "{script}");
        assert!(script.contains("exec \"${dir:-.}/vim\" \"$@\""), "{script}");
    }
}
