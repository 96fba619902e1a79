//! What a sandboxed command may have written that makes git run a program
//! outside the sandbox later, and what the sandbox does about it.
//!
//! The workspace's own repository is protected by read-only mounts
//! (`git.rs`). What cannot be protected in advance is what does not exist
//! yet: a repository a command makes (`git init sub`, `cargo new`, `git
//! clone`), a `commondir` or `config.worktree` it adds, a linked worktree or
//! a submodule it registers, a `.git` file it points elsewhere. Those are
//! found as they appear (`watch.rs`) and checked here:
//!
//! - a git configuration (`config`, `config.worktree`) may only set keys
//!   that never run a program (an allow list: `core.repositoryformatversion`,
//!   `remote.*.url`, `branch.*.merge`, `user.*`, ...); any other key, and
//!   any `include`, makes it dangerous (`core.fsmonitor`, `core.hooksPath`,
//!   `core.sshCommand`, `filter.*`, `alias.* = !…`, `credential.helper`,
//!   ...);
//! - a file in `hooks/` other than git's `*.sample` files is dangerous;
//! - `commondir` is dangerous unless it is a linked worktree's pointer back
//!   to its own repository;
//! - a `.git` file is dangerous when it names a git directory outside the
//!   workspace.
//!
//! A dangerous file is moved aside (`<name>.bashtool-quarantine`), so no
//! git outside the sandbox reads it, and the call that wrote it says so in
//! its notes; a harmless one is named in the notes only.

use std::path::{Path, PathBuf};

use super::git::{gitfile_target, inner_git_dirs, looks_like_git_dir};

/// The suffix a dangerous file gets when it is moved aside.
pub const QUARANTINE_SUFFIX: &str = ".bashtool-quarantine";

/// What the audit found about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Written during the call; nothing in it runs a program.
    Harmless { path: PathBuf },
    /// Could make git run a program; moved to `moved_to`.
    Quarantined {
        path: PathBuf,
        reason: String,
        moved_to: PathBuf,
    },
    /// Could make git run a program, and could not be moved (the note
    /// says so loudly).
    Dangerous { path: PathBuf, reason: String },
}

impl Finding {
    /// The note for the model and the user.
    pub fn note(&self, workspace: &Path) -> String {
        let show = |path: &Path| {
            path.strip_prefix(workspace).map_or_else(
                |_| path.display().to_string(),
                |relative| relative.display().to_string(),
            )
        };
        match self {
            Self::Harmless { path } => format!(
                "sandbox: the command wrote the git file {} (nothing in it runs a program)",
                show(path)
            ),
            Self::Quarantined {
                path,
                reason,
                moved_to,
            } => format!(
                "sandbox: the command wrote the git file {} ({reason}): a git command run outside \
                 the sandbox would have run that program, so bashtool moved it to {}; review it \
                 before moving it back",
                show(path),
                show(moved_to)
            ),
            Self::Dangerous { path, reason } => format!(
                "sandbox: WARNING: the command wrote the git file {} ({reason}) and bashtool could \
                 not move it aside: do not run git in that repository before removing it",
                show(path)
            ),
        }
    }
}

/// Git configuration keys that never make git run a program, as
/// `section.key` or `section.*.key` (the subsection in the middle),
/// lowercase. Everything else counts as dangerous.
const SAFE_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.compression",
    "core.loosecompression",
    "core.bigfilethreshold",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.splitindex",
    "core.untrackedcache",
    "core.checkstat",
    "core.trustctime",
    "core.commitgraph",
    "core.multipackindex",
    "core.abbrev",
    "core.worktree",
    "core.fsync",
    "core.preloadindex",
    "core.longpaths",
    "extensions.*",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.prunetags",
    "remote.*.mirror",
    "remote.*.skipdefaultupdate",
    "remote.*.skipfetchall",
    "remote.*.promisor",
    "remote.*.partialclonefilter",
    "branch.*.remote",
    "branch.*.pushremote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.description",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "submodule.*.shallow",
    "submodule.active",
    "gc.*",
    "pack.*",
    "index.*",
    "feature.*",
    "fetch.*",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "advice.*",
    "color.*",
    "log.*",
    "status.*",
    "rerere.*",
    "lfs.*",
    "worktree.guessremote",
    "maintenance.auto",
    "maintenance.strategy",
    "diff.renames",
    "diff.algorithm",
    "merge.conflictstyle",
    "merge.ff",
    "rebase.autosquash",
    "rebase.autostash",
    "rebase.updaterefs",
];

fn key_is_safe(section: &str, subsection: Option<&str>, key: &str) -> bool {
    let section = section.to_ascii_lowercase();
    let key = key.to_ascii_lowercase();
    SAFE_KEYS.iter().any(|safe| {
        let mut parts = safe.split('.');
        let (Some(safe_section), Some(second)) = (parts.next(), parts.next()) else {
            return false;
        };
        if safe_section != section {
            return false;
        }
        match (parts.next(), subsection) {
            // `section.*`: any key of the section, with or without a
            // subsection.
            (None, _) if second == "*" => true,
            (None, None) => second == key,
            (Some(safe_key), Some(_)) => second == "*" && safe_key == key,
            _ => false,
        }
    })
}

/// The first key of a git configuration text that could run a program (or
/// include another file), as `section.key`; `None` when every key is on the
/// allow list. A file git cannot parse is treated as dangerous too.
pub fn dangerous_config_key(text: &str) -> Option<String> {
    let mut section = String::new();
    let mut subsection: Option<String> = None;
    let mut continued = false;
    for raw in text.lines() {
        let line = raw.trim();
        if continued {
            continued = line.ends_with('\\');
            continue;
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let mut rest = line;
        if let Some(after) = rest.strip_prefix('[') {
            let Some(end) = after.find(']') else {
                return Some("an unreadable section header".to_owned());
            };
            let header = &after[..end];
            if let Some((name, quoted)) = header.split_once(char::is_whitespace) {
                name.clone_into(&mut section);
                subsection = Some(quoted.trim().trim_matches('"').to_owned());
            } else if let Some((name, sub)) = header.split_once('.') {
                name.clone_into(&mut section);
                subsection = Some(sub.to_owned());
            } else {
                header.clone_into(&mut section);
                subsection = None;
            }
            rest = after[end + 1..].trim();
            if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
                continue;
            }
        }
        let name: String = rest
            .chars()
            .take_while(|character| character.is_ascii_alphanumeric() || *character == '-')
            .collect();
        if name.is_empty() || section.is_empty() {
            return Some("a line git would not read as a setting".to_owned());
        }
        continued = rest.ends_with('\\');
        let lower = section.to_ascii_lowercase();
        if lower == "include" || lower == "includeif" {
            return Some(format!("{section}.{name} (it reads another file)"));
        }
        if !key_is_safe(&section, subsection.as_deref(), &name) {
            return Some(match &subsection {
                Some(sub) => format!("{section}.{sub}.{name}"),
                None => format!("{section}.{name}"),
            });
        }
    }
    None
}

/// Why the file at `path` (a config, a hook, a `commondir`, a `.git` file)
/// could make git run a program, or `None` if it cannot. `workspace`
/// bounds where a `.git` file may point; `git_dir` is the git directory
/// the file belongs to, if it is one of its files.
pub fn danger(path: &Path, workspace: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let parent = path.parent()?;
    if parent.file_name().and_then(|name| name.to_str()) == Some("hooks")
        && !name.ends_with(".sample")
        && !name.ends_with(QUARANTINE_SUFFIX)
        && path.is_file()
    {
        return Some(format!("a hook, `{name}`, which git runs"));
    }
    match name {
        "config" | "config.worktree"
            if looks_like_git_dir(parent)
                || parent.join("commondir").is_file()
                || path_is_inside_git_dir(parent) =>
        {
            let text = std::fs::read_to_string(path).ok()?;
            dangerous_config_key(&text).map(|key| format!("it sets {key}"))
        }
        "commondir" => {
            // Only a linked worktree (`<repo>/worktrees/<name>`) has one,
            // and it points back to that repository.
            let worktrees = parent.parent()?;
            let repository = worktrees.parent()?;
            let text = std::fs::read_to_string(path).ok()?;
            let target = parent.join(text.trim());
            let target = target.canonicalize().unwrap_or(target);
            let own = repository
                .canonicalize()
                .unwrap_or_else(|_| repository.to_path_buf());
            if worktrees.file_name().and_then(|name| name.to_str()) == Some("worktrees")
                && target == own
            {
                None
            } else {
                Some(format!(
                    "it points git at `{}` for its configuration and hooks",
                    target.display()
                ))
            }
        }
        ".git" if path.is_file() => {
            let target = gitfile_target(path)?;
            if target.starts_with(workspace) {
                None
            } else {
                Some(format!(
                    "it points git at `{}`, outside the workspace, for its configuration and hooks",
                    target.display()
                ))
            }
        }
        _ => None,
    }
}

/// True when `dir` is, or lies in, a git directory: one named `.git`, or
/// one under a `.git`'s `worktrees/` or `modules/`.
fn path_is_inside_git_dir(dir: &Path) -> bool {
    dir.ancestors()
        .any(|ancestor| ancestor.file_name().and_then(|name| name.to_str()) == Some(".git"))
}

/// The files of the git directory `git_dir` (and of those inside it) that
/// the audit checks.
pub fn control_files(git_dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![git_dir.to_path_buf()];
    dirs.extend(inner_git_dirs(git_dir));
    for dir in dirs {
        for name in ["config", "config.worktree", "commondir"] {
            files.push(dir.join(name));
        }
        if let Ok(entries) = std::fs::read_dir(dir.join("hooks")) {
            files.extend(entries.flatten().map(|entry| entry.path()));
        }
    }
    files
}

/// Checks `path` (see [`danger`]) and moves it aside when it is dangerous.
/// `None` when the file does not exist (any more).
pub fn audit(path: &Path, workspace: &Path) -> Option<Finding> {
    if std::fs::symlink_metadata(path).is_err()
        || path.to_string_lossy().ends_with(QUARANTINE_SUFFIX)
    {
        return None;
    }
    let Some(reason) = danger(path, workspace) else {
        return Some(Finding::Harmless {
            path: path.to_path_buf(),
        });
    };
    let moved_to = quarantine_path(path);
    match std::fs::rename(path, &moved_to) {
        Ok(()) => Some(Finding::Quarantined {
            path: path.to_path_buf(),
            reason,
            moved_to,
        }),
        Err(_) => Some(Finding::Dangerous {
            path: path.to_path_buf(),
            reason,
        }),
    }
}

/// `<path>.bashtool-quarantine`, or with a number when that exists.
fn quarantine_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(QUARANTINE_SUFFIX);
    let first = PathBuf::from(&name);
    if std::fs::symlink_metadata(&first).is_err() {
        return first;
    }
    (2..u32::MAX)
        .map(|number| {
            let mut numbered = name.clone();
            numbered.push(format!("-{number}"));
            PathBuf::from(numbered)
        })
        .find(|candidate| std::fs::symlink_metadata(candidate).is_err())
        .unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_git_writes_itself_are_harmless() {
        let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
        assert_eq!(dangerous_config_key(init), None);
        let clone = "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";
        assert_eq!(dangerous_config_key(clone), None);
        let submodule = "[core]\n\trepositoryformatversion = 0\n\tworktree = ../../../vendor/lib\n[submodule \"vendor/lib\"]\n\turl = /srv/lib\n\tactive = true\n";
        assert_eq!(dangerous_config_key(submodule), None);
    }

    #[test]
    fn keys_that_run_programs_are_dangerous_however_they_are_spelt() {
        for (text, key) in [
            ("[core]\n\tfsmonitor = touch /tmp/x\n", "core.fsmonitor"),
            ("[CORE]\nhooksPath=/tmp/h\n", "CORE.hooksPath"),
            ("[core.x]\nsshCommand = evil\n", "core.x.sshCommand"),
            ("[alias]\n\tst = !evil\n", "alias.st"),
            ("[filter \"lfs\"]\n\tclean = evil\n", "filter.lfs.clean"),
            (
                "[include]\n\tpath = /tmp/other\n",
                "include.path (it reads another file)",
            ),
            (
                "[includeIf \"gitdir:/\"]\n\tpath = /tmp/other\n",
                "includeIf.path (it reads another file)",
            ),
            (
                "[remote \"o\"]\n\turl = x\n\tuploadpack = evil\n",
                "remote.o.uploadpack",
            ),
            (
                "[submodule \"s\"]\n\tupdate = !evil\n",
                "submodule.s.update",
            ),
            ("[core] fsmonitor = evil\n", "core.fsmonitor"),
            ("[credential]\nhelper = evil\n", "credential.helper"),
        ] {
            assert_eq!(dangerous_config_key(text).as_deref(), Some(key), "{text}");
        }
        assert!(dangerous_config_key("fsmonitor = evil\n").is_some());
        assert!(dangerous_config_key("[core\nx = 1\n").is_some());
    }

    #[test]
    fn a_dangerous_file_is_moved_aside_and_a_harmless_one_stays() {
        let root = tempfile::tempdir().expect("temp dir");
        let root = root.path().canonicalize().expect("canonical");
        let workspace = root.join("workspace");
        let git = workspace.join("sub/.git");
        std::fs::create_dir_all(git.join("hooks")).expect("hooks");
        std::fs::create_dir_all(git.join("objects")).expect("objects");
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        std::fs::write(
            git.join("config"),
            "[core]\n\tfsmonitor = touch /tmp/pwned\n",
        )
        .expect("config");
        std::fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").expect("sample");
        let finding = audit(&git.join("config"), &workspace).expect("exists");
        assert_eq!(
            finding,
            Finding::Quarantined {
                path: git.join("config"),
                reason: "it sets core.fsmonitor".to_owned(),
                moved_to: git.join("config.bashtool-quarantine"),
            }
        );
        assert!(!git.join("config").exists());
        assert_eq!(
            audit(&git.join("hooks/pre-commit.sample"), &workspace),
            Some(Finding::Harmless {
                path: git.join("hooks/pre-commit.sample")
            })
        );
        let outside = root.join("elsewhere");
        let checkout = workspace.join("wt");
        std::fs::create_dir_all(&checkout).expect("checkout");
        std::fs::write(
            checkout.join(".git"),
            format!("gitdir: {}\n", outside.display()),
        )
        .expect("gitfile");
        let Some(Finding::Quarantined { reason, .. }) = audit(&checkout.join(".git"), &workspace)
        else {
            panic!("a .git file pointing outside is dangerous");
        };
        assert!(reason.contains("outside the workspace"), "{reason}");
    }
}
