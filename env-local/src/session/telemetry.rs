//! Seed 002's "prompt as telemetry": the git branch of the shell's cwd,
//! found by reading files (no `git` process per call).

use std::path::{Path, PathBuf};

/// The branch checked out in the repository containing `cwd`, or the short
/// commit id when HEAD is detached. `None` outside a repository.
pub(crate) fn git_branch(cwd: &Path) -> Option<String> {
    let git_dir = find_git_dir(cwd)?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
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

/// The git directory of the repository containing `start`: `.git` itself,
/// or where a `.git` file points (worktrees and submodules: `gitdir: <path>`).
fn find_git_dir(start: &Path) -> Option<PathBuf> {
    for directory in start.ancestors() {
        let dot_git = directory.join(".git");
        let Ok(metadata) = std::fs::metadata(&dot_git) else {
            continue;
        };
        if metadata.is_dir() {
            return Some(dot_git);
        }
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        return Some(directory.join(target));
    }
    None
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
        assert_eq!(git_branch(root.path()), None);
    }
}
