//! `--session NAME`: where a named session keeps its state (cwd,
//! variables, functions, aliases, options) between separate `bashtool`
//! processes and servers.

use std::path::PathBuf;

use anyhow::Context as _;

/// Longest session name.
const MAX_NAME_CHARS: usize = 64;

/// Where the state of session `name` is kept:
/// `$BASHTOOL_STATE_DIR/sessions/<name>.sh`, else under `$XDG_STATE_HOME/bashtool`,
/// else `~/.local/state/bashtool`.
pub fn snapshot_path(name: &str) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        !name.is_empty()
            && name.chars().count() <= MAX_NAME_CHARS
            && !name.starts_with('.')
            && name
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "._-".contains(character)),
        "--session {name:?}: use 1 to {MAX_NAME_CHARS} letters, digits, '.', '_' or '-'"
    );
    // No fallback to a shared directory: a snapshot is sourced at start, so
    // one planted by another user would run as us.
    let sessions = bashtool_env_local::default_state_dir()?.join("sessions");
    bashtool_env_local::ensure_private_dir(&sessions)
        .with_context(|| format!("preparing {}", sessions.display()))?;
    Ok(sessions.join(format!("{name}.sh")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_file_names() {
        assert!(snapshot_path("demo-1.x_y").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "sp ace"] {
            assert!(snapshot_path(bad).is_err(), "{bad}");
        }
        assert!(
            snapshot_path("demo")
                .expect("path")
                .ends_with("sessions/demo.sh")
        );
    }
}
