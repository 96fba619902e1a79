//! The package caches a `workspace-write` sandbox keeps writable: which
//! directories they are, which are made when missing, and which files in
//! them stay read-only.
//!
//! A cache is writable so that builds and installs reuse (and fill) the
//! user's cache, offline too. Landlock's rules need an inode, so a cache
//! that does not exist yet could never be created inside the sandbox (pip
//! downloaded everything again on every call): a missing one is created
//! here, before the sandbox is built, as the tool itself would make it
//! (the user's, mode 0777 less the umask), but only when that tool is
//! installed (found on `PATH`, or its wrapper script in the workspace), so
//! that nobody gets a `~/go` or a `~/.gradle` for a tool they never use;
//! and only inside a home directory that is the user's own.
//!
//! What is code or configuration rather than cache stays read-only: the
//! rest of `CARGO_HOME` (`bin/`, `config.toml`, credentials), `~/.npmrc`,
//! pip's and uv's configuration (in `~/.config`), `~/go/bin`, Gradle's
//! `init.d/`, `init.gradle` and `gradle.properties`, Maven's
//! `settings.xml`, and ccache's `ccache.conf`, which lies inside its cache
//! directory and is protected there (it can name a command to run). Never
//! all of `~` or of `~/.cache`. What is left is the risk docs/sandbox.md
//! states: a command can alter a cached package that a later unsandboxed
//! build uses.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The cache paths of one sandbox.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Caches {
    /// Writable directories, canonical.
    pub directories: Vec<PathBuf>,
    /// Writable single files (cargo's lock files), canonical.
    pub files: Vec<PathBuf>,
    /// Files inside those directories that stay read-only.
    pub protected: Vec<PathBuf>,
}

/// One cache: its directory, the programs whose presence makes it worth
/// creating, and the files in it that are configuration.
struct Cache {
    directory: PathBuf,
    tools: &'static [&'static str],
    /// Wrapper scripts in the workspace that use it (`gradlew`).
    wrappers: &'static [&'static str],
    config_files: &'static [&'static str],
}

/// What the caches are read from: the variables that move them, the home
/// directory, `PATH` and the workspace. Taken as values so that tests need
/// not change the process's environment.
pub struct Place<'a> {
    pub home: Option<&'a Path>,
    pub workspace: &'a Path,
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Place<'_> {
    /// An absolute path from a variable, if set.
    fn path_var(&self, name: &str) -> Option<PathBuf> {
        (self.var)(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    }

    fn installed(&self, cache: &Cache) -> bool {
        let in_path = (self.var)("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|directory| {
                cache
                    .tools
                    .iter()
                    .any(|tool| is_executable(&directory.join(tool)))
            })
        });
        in_path
            || cache
                .wrappers
                .iter()
                .any(|wrapper| self.workspace.join(wrapper).is_file())
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

const CARGO: &[&str] = &["cargo"];
const PIP: &[&str] = &["pip", "pip3", "python3", "python"];
const NPM: &[&str] = &["npm", "npx", "node"];
const GO: &[&str] = &["go"];
const GRADLE: &[&str] = &["gradle"];
const MAVEN: &[&str] = &["mvn"];

/// The known caches, where `place` puts them.
fn known(place: &Place<'_>) -> (Vec<Cache>, Option<PathBuf>) {
    let home = place.home;
    let under_home = |relative: &str| home.map(|home| home.join(relative));
    let xdg_cache = place
        .path_var("XDG_CACHE_HOME")
        .or_else(|| under_home(".cache"));
    let in_xdg = |name: &str| xdg_cache.as_ref().map(|cache| cache.join(name));
    let cargo_home = place
        .path_var("CARGO_HOME")
        .or_else(|| under_home(".cargo"));
    let go_path = (place.var)("GOPATH")
        .and_then(|value| std::env::split_paths(&value).next())
        .filter(|path| path.is_absolute())
        .or_else(|| under_home("go"));
    let gradle_home = place
        .path_var("GRADLE_USER_HOME")
        .or_else(|| under_home(".gradle"));
    let mut caches = Vec::new();
    let mut add = |directory: Option<PathBuf>,
                   tools: &'static [&'static str],
                   wrappers: &'static [&'static str],
                   config_files: &'static [&'static str]| {
        if let Some(directory) = directory {
            caches.push(Cache {
                directory,
                tools,
                wrappers,
                config_files,
            });
        }
    };
    for name in ["registry", "git"] {
        add(
            cargo_home.as_ref().map(|home| home.join(name)),
            CARGO,
            &[],
            &[],
        );
    }
    add(
        place.path_var("PIP_CACHE_DIR").or_else(|| in_xdg("pip")),
        PIP,
        &[],
        &[],
    );
    add(
        place.path_var("UV_CACHE_DIR").or_else(|| in_xdg("uv")),
        &["uv", "uvx"],
        &[],
        &[],
    );
    add(
        place
            .path_var("npm_config_cache")
            .or_else(|| under_home(".npm")),
        NPM,
        &[],
        &[],
    );
    add(
        place
            .path_var("GOMODCACHE")
            .or_else(|| go_path.map(|path| path.join("pkg/mod"))),
        GO,
        &[],
        &[],
    );
    add(
        place.path_var("GOCACHE").or_else(|| in_xdg("go-build")),
        GO,
        &[],
        &[],
    );
    // Gradle's home holds code too (init scripts, gradle.properties): only
    // the directories it writes as a cache.
    for name in [
        "caches",
        "wrapper",
        "daemon",
        "native",
        "notifications",
        "jdks",
        ".tmp",
    ] {
        add(
            gradle_home.as_ref().map(|home| home.join(name)),
            GRADLE,
            &["gradlew"],
            &[],
        );
    }
    for name in ["repository", "wrapper"] {
        add(
            under_home(".m2").map(|m2| m2.join(name)),
            MAVEN,
            &["mvnw"],
            &[],
        );
    }
    add(
        place.path_var("CCACHE_DIR").or_else(|| in_xdg("ccache")),
        &["ccache"],
        &[],
        &["ccache.conf"],
    );
    // ccache before 4.0 (and a user who kept it) used `~/.ccache`.
    add(under_home(".ccache"), &[], &[], &["ccache.conf"]);
    (caches, cargo_home)
}

/// Canonical form when the path exists, else as given.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Whether `home` may get directories made in it: it is this user's own.
fn home_is_ours(home: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(home).is_ok_and(|metadata| metadata.uid() == nix::unistd::geteuid().as_raw())
}

/// A cache directory may be writable only if it is not `/`, not the home
/// directory or one of its ancestors, and not a top-level cache root
/// (`~/.cache`) itself.
fn acceptable(directory: &Path, home: Option<&Path>, roots: &[&Path]) -> bool {
    directory.is_absolute()
        && directory.components().count() > 2
        && home.is_none_or(|home| !home.starts_with(directory))
        && !roots.contains(&directory)
}

/// The caches of `place`: existing ones, and missing ones made for the
/// tools that are installed.
pub fn caches(place: &Place<'_>) -> Caches {
    let (known, cargo_home) = known(place);
    let home = place.home.map(canonical);
    let may_create = place.home.is_some_and(home_is_ours);
    let xdg_cache = place
        .path_var("XDG_CACHE_HOME")
        .or_else(|| place.home.map(|home| home.join(".cache")))
        .map(|path| canonical(&path));
    let roots: Vec<&Path> = xdg_cache.iter().map(PathBuf::as_path).collect();
    let mut found = Caches::default();
    for cache in &known {
        let directory = &cache.directory;
        if !directory.exists()
            && may_create
            && place.home.is_some_and(|home| directory.starts_with(home))
            && place.installed(cache)
        {
            // One that cannot be made is simply not writable: the command
            // then says so, and the note explains.
            let _ = std::fs::create_dir_all(directory);
        }
        if !directory.is_dir() {
            continue;
        }
        let directory = canonical(directory);
        if !acceptable(&directory, home.as_deref(), &roots)
            || found.directories.contains(&directory)
        {
            continue;
        }
        for name in cache.config_files {
            let file = directory.join(name);
            // Protected only if it exists: an empty one is made, as the
            // tool reads one that is empty as no settings.
            if !file.exists() {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&file);
            }
            if file.is_file() {
                found.protected.push(file);
            }
        }
        found.directories.push(directory);
    }
    // Cargo's lock files, single files in a `CARGO_HOME` that stays
    // read-only: only once cargo has its directories there.
    if let Some(cargo_home) = cargo_home.filter(|path| path.join("registry").is_dir()) {
        for name in [".package-cache", ".package-cache-mutate", ".global-cache"] {
            let file = cargo_home.join(name);
            if file.exists() {
                found.files.push(canonical(&file));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place_in<'a>(
        home: &'a Path,
        workspace: &'a Path,
        var: &'a dyn Fn(&str) -> Option<OsString>,
    ) -> Place<'a> {
        Place {
            home: Some(home),
            workspace,
            var,
        }
    }

    #[test]
    fn missing_caches_are_made_only_for_installed_tools() {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = dir.path().join("home");
        let bin = dir.path().join("bin");
        let workspace = dir.path().join("work");
        for path in [&home, &bin, &workspace] {
            std::fs::create_dir(path).expect("mkdir");
        }
        for tool in ["pip", "cargo", "ccache"] {
            let path = bin.join(tool);
            std::fs::write(&path, "#!/bin/sh\n").expect("tool");
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .expect("chmod");
        }
        std::fs::write(workspace.join("mvnw"), "").expect("wrapper");
        let path = bin.clone().into_os_string();
        let var = move |name: &str| (name == "PATH").then(|| path.clone());
        let found = caches(&place_in(&home, &workspace, &var));
        let home = home.canonicalize().expect("canonical");
        for made in [
            ".cache/pip",
            ".cargo/registry",
            ".cargo/git",
            ".cache/ccache",
            ".m2/repository",
            ".m2/wrapper",
        ] {
            assert!(
                found.directories.contains(&home.join(made)),
                "{made}: {found:?}"
            );
        }
        for absent in [".npm", "go", ".gradle", ".cache/uv", ".cache/go-build"] {
            assert!(!home.join(absent).exists(), "{absent} was made");
        }
        assert_eq!(found.protected, [home.join(".cache/ccache/ccache.conf")]);
        assert!(home.join(".cache/ccache/ccache.conf").is_file());
        // Never the home directory, `~/.cache` or `/` themselves.
        let home_text = home.clone().into_os_string();
        let cache_root = home.join(".cache").into_os_string();
        let var = move |name: &str| match name {
            "PIP_CACHE_DIR" => Some(home_text.clone()),
            "UV_CACHE_DIR" => Some(cache_root.clone()),
            "npm_config_cache" => Some("/".into()),
            _ => None,
        };
        let found = caches(&place_in(&home, &workspace, &var));
        for refused in [home.clone(), home.join(".cache"), PathBuf::from("/")] {
            assert!(
                !found.directories.contains(&refused),
                "{}",
                refused.display()
            );
        }
    }
}
