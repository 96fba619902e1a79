//! Seed 002's "prompt as telemetry": the git branch of the shell's cwd,
//! found by reading files (no `git` process per call).

use std::path::{Path, PathBuf};

/// The branch checked out in the repository containing `cwd`, or the short
/// commit id when HEAD is detached. `None` outside a repository.
pub(crate) fn git_branch(cwd: &Path) -> Option<String> {
    let head = find_head(cwd)?;
    let head = head.trim();
    if let Some(reference) = head.strip_prefix("ref: ") {
        let reference = reference.trim();
        return Some(
            reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_owned(),
        );
    }
    // Detached HEAD: a commit id.
    (head.len() >= 7 && head.bytes().all(|byte| byte.is_ascii_hexdigit()))
        .then(|| head[..7].to_owned())
}

/// The HEAD file of the repository containing `start`: in `.git` itself,
/// or where a `.git` file points (worktrees and submodules: `gitdir:
/// <path>`).
fn find_head(start: &Path) -> Option<String> {
    // One path buffer for every ancestor's `.git/HEAD` (every call pays
    // this search).
    let mut head_path = PathBuf::new();
    for directory in start.ancestors() {
        head_path.as_mut_os_string().clear();
        head_path.push(directory);
        head_path.push(".git/HEAD");
        // `.git/HEAD` read straight away: in a repository, one open instead
        // of a stat of `.git` first.
        match read_small(&head_path) {
            Ok(head) => return Some(head),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => {}
        }
        // `.git` is not a directory with a HEAD: a file that points to one,
        // or something else, which ends the search as before.
        let dot_git = directory.join(".git");
        let Ok(metadata) = std::fs::metadata(&dot_git) else {
            continue;
        };
        if metadata.is_dir() {
            return None;
        }
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        return read_small(&directory.join(target).join("HEAD")).ok();
    }
    None
}

/// A small text file (HEAD is one line), read without the stat and seek
/// that `read_to_string` makes on a `File` for its size hint, and without
/// a last read to see the end: a read of a regular file that comes back
/// short has reached it.
fn read_small(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path)?;
    let mut text = Vec::new();
    let mut chunk = [0_u8; 256];
    loop {
        let count = file.read(&mut chunk)?;
        text.extend_from_slice(&chunk[..count]);
        if count < chunk.len() {
            break;
        }
    }
    String::from_utf8(text).map_err(|_| std::io::ErrorKind::InvalidData.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_branch_worktree_file_and_detached_head() {
        let root = tempfile::tempdir().expect("temp dir");
        let repo = root.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
        std::fs::create_dir_all(repo.join("src/deep")).expect("mkdir");
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").expect("write");
        assert_eq!(
            git_branch(&repo.join("src/deep")).as_deref(),
            Some("feature/x")
        );

        let worktree = root.path().join("wt");
        let worktree_git = repo.join(".git/worktrees/wt");
        std::fs::create_dir_all(&worktree).expect("mkdir");
        std::fs::create_dir_all(&worktree_git).expect("mkdir");
        std::fs::write(
            worktree.join(".git"),
            format!("gitdir: {}\n", worktree_git.display()),
        )
        .expect("write");
        std::fs::write(
            worktree_git.join("HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .expect("write");
        assert_eq!(git_branch(&worktree).as_deref(), Some("0123456"));
        // A `.git` directory without HEAD is no repository (git's own
        // discovery goes on upwards too).
        std::fs::create_dir_all(repo.join("src/empty/.git")).expect("mkdir");
        assert_eq!(
            git_branch(&repo.join("src/empty")).as_deref(),
            Some("feature/x")
        );
        assert_eq!(git_branch(root.path()), None);
    }
}
