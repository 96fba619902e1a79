//! Helpers for tests with real cgroups: where a command's cgroup is (from
//! the `/proc/self/cgroup` it printed, resolved against this process's
//! own mount table, not through bashtool's code), its files, and a
//! watchdog that kills everything in it if a test runs over.

use std::path::{Path, PathBuf};

pub use bashtool_testkit::{Watchdog, members};

/// Whether this machine gives this process cgroups with the controllers
/// the limit tests need (`pids`, `memory`): `None` when it does, else why
/// not, for the skip message.
pub fn unavailable() -> Option<String> {
    let settings = bashtool_core::LimitSettings::parse_items(["pids=64", "memory=256M"])
        .expect("valid limits");
    match bashtool_env_local::limits_info(&settings) {
        Ok(info) if info.enforced_by.is_some() => None,
        Ok(_) => Some("no cgroup is usable here".to_owned()),
        Err(error) => Some(error),
    }
}

/// True (and says why on stderr) when this machine has no usable cgroup,
/// so a test of the limits cannot run here. Never in CI, which has them:
/// there a missing cgroup fails the test instead of letting it pass
/// unrun.
pub fn skip_here() -> bool {
    let Some(reason) = unavailable() else {
        return false;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "no usable cgroup in CI ({reason}): the limits tests must run there"
    );
    eprintln!("skipped: {reason}");
    true
}

/// The directories of the cgroups bashtool made that are listed in a
/// `/proc/<pid>/cgroup` text, one per hierarchy mounted here
/// (`/sys/fs/cgroup/pids/<path>`, the v2 mount's `<path>`). Only those
/// named `bashtool-*`: a hierarchy where the command stayed in the
/// cgroup it inherited (the test's own, its caller's) is not the
/// command's to kill.
pub fn dirs_of(proc_cgroup: &str) -> Vec<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let mut dirs = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let mount = mountinfo.lines().find_map(|mount| {
            let (before, after) = mount.split_once(" - ")?;
            let point = before.split(' ').nth(4)?;
            let mut after = after.split(' ');
            let kind = after.next()?;
            let options = after.nth(1)?;
            let matches = if controllers.is_empty() {
                kind == "cgroup2"
            } else {
                kind == "cgroup"
                    && controllers
                        .split(',')
                        .all(|controller| options.split(',').any(|option| option == controller))
            };
            matches.then(|| PathBuf::from(point))
        });
        let made_by_bashtool = Path::new(path)
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with("bashtool-"));
        if let Some(point) = mount
            && made_by_bashtool
        {
            dirs.push(point.join(path.trim_start_matches('/')));
        }
    }
    dirs
}

/// The one of `dirs` that has `file`.
pub fn dir_with(dirs: &[PathBuf], file: &str) -> PathBuf {
    dirs.iter()
        .find(|dir| dir.join(file).exists())
        .cloned()
        .unwrap_or_else(|| panic!("none of {dirs:?} has {file}"))
}

/// A cgroup file's content, trimmed.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
        .trim()
        .to_owned()
}

/// The value of `key` in a keyed cgroup file (`max 3`); 0 when the file
/// is gone.
pub fn counter(path: &Path, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(key)?.trim().parse().ok())
        .unwrap_or(0)
}
