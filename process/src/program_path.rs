//! Where a program named without a slash (`bash`) is, looked up in our
//! `PATH` once and remembered, so that the child execs it directly instead
//! of trying each `PATH` entry in turn (measured here: eight failed
//! `execve`s before `/usr/bin/bash` on every call).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// `PATH` when it is not set, as glibc's `execvp` uses.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// The `PATH` the programs were found with, and where each was.
static FOUND: Mutex<Option<(OsString, HashMap<OsString, PathBuf>)>> = Mutex::new(None);

/// Where `execvp` would find `program` with our `PATH`, if that does not
/// depend on the child's directory. `None`: let the child search (a name
/// with a slash, a relative `PATH` entry, or nothing found).
pub fn resolve(program: &OsStr) -> Option<PathBuf> {
    if program.is_empty() || program.as_bytes().contains(&b'/') {
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    let mut found = FOUND.lock().unwrap_or_else(PoisonError::into_inner);
    if found.as_ref().is_none_or(|(seen, _)| *seen != path) {
        *found = Some((path.clone(), HashMap::new()));
    }
    let (_, known) = found.as_mut()?;
    if let Some(location) = known.get(program) {
        return Some(location.clone());
    }
    let location = search(&path, program)?;
    known.insert(program.to_owned(), location.clone());
    Some(location)
}

/// Forgets what was found (an exec of a remembered path failed).
pub fn forget() {
    *FOUND.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

fn search(path: &OsStr, program: &OsStr) -> Option<PathBuf> {
    for directory in path.as_bytes().split(|byte| *byte == b':') {
        let directory = Path::new(OsStr::from_bytes(directory));
        // An empty or relative entry is searched from the child's own
        // directory, which only the child knows.
        if !directory.is_absolute() {
            return None;
        }
        let candidate = directory.join(program);
        let executable = nix::unistd::access(&candidate, nix::unistd::AccessFlags::X_OK).is_ok()
            && candidate
                .metadata()
                .is_ok_and(|metadata| metadata.is_file());
        if executable {
            return Some(candidate);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_execvp_finds_and_leaves_paths_alone() {
        let path = OsStr::new("/nonexistent-dir:/usr/bin:/bin");
        assert_eq!(
            search(path, OsStr::new("sh")),
            Some(PathBuf::from("/usr/bin/sh"))
        );
        assert_eq!(search(path, OsStr::new("no-such-program-here")), None);
        assert_eq!(resolve(OsStr::new("/bin/sh")), None);
        assert_eq!(resolve(OsStr::new("./x")), None);
    }

    #[test]
    fn a_relative_path_entry_leaves_the_search_to_the_child() {
        assert_eq!(search(OsStr::new("bin:/usr/bin"), OsStr::new("sh")), None);
        assert_eq!(search(OsStr::new(":/usr/bin"), OsStr::new("sh")), None);
    }
}
