//! The prompt as telemetry: the git branch of the shell's cwd,
//! found by reading files (no `git` process per call).

use std::fs::File;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

/// Finds the git branch for a session's calls, keeping the HEAD file it
/// found last open: the next call checks that the path still names that
/// file (one stat) and reads it again in place, instead of opening and
/// closing it (~1 µs less a call, more when the caches are cold). Exact:
/// git replaces HEAD by renaming a new file over it, which the stat sees
/// as another file; an in-place write is read as it is.
#[derive(Default)]
pub(crate) struct HeadReader {
    last: Option<OpenHead>,
}

struct OpenHead {
    path: PathBuf,
    file: File,
    device: u64,
    inode: u64,
}

impl HeadReader {
    /// The branch checked out in the repository containing `cwd`, or the
    /// short commit id when HEAD is detached. `None` outside a repository.
    pub(crate) fn git_branch(&mut self, cwd: &Path) -> Option<String> {
        let head = self.find_head(cwd)?;
        branch_of(&head)
    }

    /// The HEAD file of the repository containing `start`: in `.git`
    /// itself, or where a `.git` file points (worktrees and submodules:
    /// `gitdir: <path>`).
    fn find_head(&mut self, start: &Path) -> Option<String> {
        // One path buffer for every ancestor's `.git/HEAD` (every call pays
        // this search).
        let mut head_path = PathBuf::new();
        for directory in start.ancestors() {
            head_path.as_mut_os_string().clear();
            head_path.push(directory);
            head_path.push(".git/HEAD");
            // `.git/HEAD` read straight away: in a repository, one open (or
            // one stat of the one kept open) instead of a stat of `.git`
            // first.
            match self.read(&head_path) {
                Ok(head) => return Some(head),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => {}
            }
            // `.git` is not a directory with a HEAD: a file that points to
            // one, or something else, which ends the search as before.
            let dot_git = directory.join(".git");
            let Ok(metadata) = std::fs::metadata(&dot_git) else {
                continue;
            };
            if metadata.is_dir() {
                return None;
            }
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            return self.read(&directory.join(target).join("HEAD")).ok();
        }
        None
    }

    /// HEAD at `path`: through the file kept open when the path still
    /// names it, else opened (and kept).
    fn read(&mut self, path: &Path) -> std::io::Result<String> {
        if let Some(last) = &self.last
            && last.path == path
        {
            let metadata = std::fs::metadata(path)?;
            if metadata.dev() == last.device && metadata.ino() == last.inode {
                return read_small(&last.file);
            }
        }
        let file = File::open(path)?;
        let metadata = file.metadata()?;
        let head = read_small(&file)?;
        self.last = Some(OpenHead {
            path: path.to_path_buf(),
            file,
            device: metadata.dev(),
            inode: metadata.ino(),
        });
        Ok(head)
    }
}

fn branch_of(head: &str) -> Option<String> {
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

/// A small text file (HEAD is one line), read from its start without the
/// stat and seek that `read_to_string` makes for its size hint, and
/// without a last read to see the end: a read of a regular file that
/// comes back short has reached it.
fn read_small(file: &File) -> std::io::Result<String> {
    let mut text = Vec::new();
    let mut chunk = [0_u8; 256];
    loop {
        let count = file.read_at(&mut chunk, text.len() as u64)?;
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

    fn git_branch(cwd: &Path) -> Option<String> {
        HeadReader::default().git_branch(cwd)
    }

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

    #[test]
    fn a_kept_head_is_read_again_and_a_replaced_one_reopened() {
        let root = tempfile::tempdir().expect("temp dir");
        let repo = root.path();
        std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
        let head = repo.join(".git/HEAD");
        std::fs::write(&head, "ref: refs/heads/main\n").expect("write");
        let mut reader = HeadReader::default();
        assert_eq!(reader.git_branch(repo).as_deref(), Some("main"));
        // Rewritten in place (the same file, longer): read again.
        std::fs::write(&head, "ref: refs/heads/feature/longer\n").expect("write");
        assert_eq!(reader.git_branch(repo).as_deref(), Some("feature/longer"));
        // Replaced as git does, by a rename over it: the new file.
        let lock = repo.join(".git/HEAD.lock");
        std::fs::write(&lock, "ref: refs/heads/next\n").expect("write");
        std::fs::rename(&lock, &head).expect("rename");
        assert_eq!(reader.git_branch(repo).as_deref(), Some("next"));
        // Gone: no repository, though the old file is still open.
        std::fs::remove_dir_all(repo.join(".git")).expect("remove");
        assert_eq!(reader.git_branch(repo), None);
    }
}
