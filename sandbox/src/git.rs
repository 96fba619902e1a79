//! The files through which a repository makes git run a program: what the
//! sandbox keeps read-only in the workspace's repository.
//!
//! Git runs programs named in its configuration (`core.fsmonitor`,
//! `core.hooksPath`, `core.sshCommand`, filters, aliases with `!`, ...)
//! and in `hooks/`, and it finds that configuration through files that
//! redirect it: `commondir` (a linked worktree's pointer to the main
//! repository), `config.worktree`, the `gitdir:` line of a `.git` file,
//! and the per-worktree and per-submodule directories under `worktrees/`
//! and `modules/`. A command that could write any of them could make the
//! user's next `git status` outside the sandbox run its program.

use std::path::{Path, PathBuf};

use super::mounts::Protection;

/// Files of a git directory that can make git run a program, or redirect
/// it to files that can.
const CONTROL_FILES: &[&str] = &["config", "config.worktree", "commondir"];

/// The protected paths of the repository at `workspace` (listed even when
/// it is not a repository yet: a refresh protects a `.git` made later), in
/// order: the git directory anchored, then its hooks (created if missing)
/// and control files, then those of its linked worktrees and submodules.
pub fn protected_paths(workspace: &Path) -> Vec<(PathBuf, Protection)> {
    let dot_git = workspace.join(".git");
    let mut paths = Vec::new();
    if dot_git.is_file() {
        // The workspace is a linked worktree or a submodule's checkout:
        // its `.git` file names the git directory (outside the writable
        // roots, read-only already, unless it lies inside).
        paths.push((dot_git.clone(), Protection::ReadOnly));
        if let Some(target) =
            gitfile_target(&dot_git).filter(|target| target.starts_with(workspace))
        {
            push_git_dir(&mut paths, &target, false);
        }
        return paths;
    }
    paths.push((dot_git.clone(), Protection::Anchor));
    push_git_dir(&mut paths, &dot_git, true);
    // The `.git` files of its linked worktrees and submodules that lie in
    // the workspace: each names the git directory it uses.
    for checkout in checkouts(workspace, &dot_git) {
        paths.push((checkout, Protection::ReadOnly));
    }
    paths
}

/// The `.git` files in `workspace` of the linked worktrees of `git_dir`
/// (each `worktrees/<name>/gitdir` names one) and of the submodules that
/// `.gitmodules` lists.
fn checkouts(workspace: &Path, git_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(git_dir.join("worktrees")) {
        for entry in entries.flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path().join("gitdir")) {
                let path = PathBuf::from(text.trim());
                if path.is_absolute() && path.starts_with(workspace) {
                    found.push(path);
                }
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(workspace.join(".gitmodules")) {
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if key.trim().eq_ignore_ascii_case("path") {
                let relative = Path::new(value.trim());
                if relative.is_relative()
                    && !relative
                        .components()
                        .any(|part| matches!(part, std::path::Component::ParentDir))
                {
                    found.push(workspace.join(relative).join(".git"));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// A git directory's hooks and control files, then, recursively, those of
/// the git directories inside it (linked worktrees, submodules).
fn push_git_dir(paths: &mut Vec<(PathBuf, Protection)>, git_dir: &Path, create_hooks: bool) {
    let hooks = if create_hooks {
        Protection::CreatedReadOnly
    } else {
        Protection::ReadOnly
    };
    paths.push((git_dir.join("hooks"), hooks));
    for name in CONTROL_FILES {
        paths.push((git_dir.join(name), Protection::ReadOnly));
    }
    for inner in inner_git_dirs(git_dir) {
        push_git_dir(paths, &inner, false);
    }
}

/// The git directories kept inside `git_dir`: `worktrees/<name>` and
/// `modules/<name>` (a submodule's name may contain `/`, so every
/// directory below `modules/` that looks like a git directory).
pub fn inner_git_dirs(git_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(git_dir.join("worktrees")) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                found.push(entry.path());
            }
        }
    }
    let mut pending = vec![git_dir.join("modules")];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                continue;
            }
            let path = entry.path();
            if looks_like_git_dir(&path) {
                found.push(path);
            } else {
                pending.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A directory with `HEAD` and `objects` or `commondir`: what git accepts
/// as a git directory.
pub fn looks_like_git_dir(path: &Path) -> bool {
    path.join("HEAD").is_file()
        && (path.join("objects").is_dir() || path.join("commondir").is_file())
}

/// The git directory a `.git` file names (`gitdir: <path>`, relative to
/// the file's directory), made absolute; `None` if it names none.
pub fn gitfile_target(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    if target.is_empty() {
        return None;
    }
    let target = Path::new(target);
    let absolute = if target.is_absolute() {
        target.to_path_buf()
    } else {
        file.parent()?.join(target)
    };
    Some(absolute.canonicalize().unwrap_or(absolute))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn a_repository_with_a_worktree_and_a_submodule_has_each_git_dir_protected() {
        let root = tempfile::tempdir().expect("temp dir");
        let root = root.path().canonicalize().expect("canonical");
        let library = root.join("library");
        let workspace = root.join("workspace");
        for dir in [&library, &workspace] {
            std::fs::create_dir(dir).expect("dir");
            git(dir, &["init", "-q"]);
            git(dir, &["commit", "-q", "--allow-empty", "-m", "one"]);
        }
        git(&workspace, &["worktree", "add", "-q", "linked"]);
        git(
            &workspace,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                library.to_str().expect("utf-8"),
                "vendor/lib",
            ],
        );
        let git_dir = workspace.join(".git");
        let listed: Vec<PathBuf> = protected_paths(&workspace)
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        for expected in [
            git_dir.clone(),
            git_dir.join("hooks"),
            git_dir.join("config"),
            git_dir.join("worktrees/linked/commondir"),
            git_dir.join("modules/vendor/lib/config"),
            git_dir.join("modules/vendor/lib/hooks"),
        ] {
            assert!(
                listed.contains(&expected),
                "{} not in {listed:?}",
                expected.display()
            );
        }
        assert_eq!(
            gitfile_target(&workspace.join("linked/.git")),
            Some(git_dir.join("worktrees/linked"))
        );
    }
}
