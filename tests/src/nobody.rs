//! An unprivileged user (uid 65534, `nobody`) for tests that must show the
//! same behaviour without root: a home of its own and a copy of the binary
//! it may run, both in a directory the test made.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The user's home (with a `work` directory) and binary; all removed on
/// drop.
pub struct Nobody {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub binary: PathBuf,
}

/// Sets the user up with a copy of `binary`; `None` when this test does
/// not run as root (then it already runs unprivileged).
pub fn nobody(binary: &Path) -> Option<Nobody> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("work")).expect("home");
    let copy = dir.path().join(binary.file_name().expect("a file name"));
    std::fs::copy(binary, &copy).expect("binary");
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(dir.path())
        .status()
        .expect("chown");
    assert!(chown.success());
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    Some(Nobody {
        dir,
        home,
        binary: copy,
    })
}

impl Nobody {
    /// The binary run as this user with `args`, `HOME` its home.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&self.binary)
            .args(args)
            .env("HOME", &self.home);
        command
    }
}
