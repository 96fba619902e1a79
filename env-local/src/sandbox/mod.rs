//! The OS sandbox: a [`SpawnWrapper`] that confines every process env-local
//! starts. Reads anywhere; writes only beneath the writable roots (Landlock);
//! `.git/hooks`, `.git/config` and bashtool's state read-only even there (a
//! private mount namespace with read-only binds); the network on or a
//! private loopback only (a shared network namespace); the system calls that
//! would undo the rest denied (seccomp); no signal or `ptrace` to processes
//! outside (Landlock scopes). All of it is inherited by whatever the command
//! starts, setsid escapees included.
//!
//! Everything is prepared once in [`Sandbox::new`]; the child between fork
//! and exec only makes system calls on that data. When the kernel cannot
//! enforce the requested mode, [`Sandbox::new`] fails with an error naming
//! the missing feature and `--sandbox off`: a command never runs silently
//! unsandboxed. See `docs/sandbox.md` for the design and measurements.

// System calls the standard library does not wrap; each block says why it
// is sound.
#![allow(unsafe_code)]

mod child;
mod config;
mod landlock;
mod mounts;
mod namespaces;
mod paths;
mod probe;
mod seccomp;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashtool_core::{ExecError, SandboxInfo};

use crate::error::Error;
use crate::spawner::Spawner;
use crate::wrap::{Launch, SpawnWrapper, Wrappers};
use child::ChildSteps;
pub use config::{NetworkMode, SandboxConfig, SandboxMode};
use mounts::{MountPlan, SharedMounts, c_path};
use namespaces::{User, Wanted};
use paths::Layout;
pub use probe::{Capabilities, probe};

/// Set in every sandboxed command's environment to the mode's name, so
/// scripts (and the model) can tell.
pub const SANDBOX_VARIABLE: &str = "BASHTOOL_SANDBOX";

/// A prepared sandbox; cheap to share (`Arc`), applied to any number of
/// launches.
#[derive(Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    workspace: PathBuf,
    layout: Layout,
    steps: ChildSteps,
    root: bool,
    spawners: std::sync::Mutex<Spawners>,
}

/// The spawner threads: up to one per CPU for each mount namespace
/// generation (a thread cannot join another after its filter; see
/// [`pick`]). Those of an older generation stay while a process they made
/// exists, since that process's parent-death signal is tied to the thread
/// that made it; then they end.
#[derive(Debug, Default)]
struct Spawners {
    by_generation: Vec<(std::os::fd::RawFd, Arc<Spawner>)>,
    /// A thread could not take the steps (inside another sandbox, say):
    /// every child takes them itself, as strong, only slower.
    unavailable: bool,
}

impl Sandbox {
    /// Prepares the sandbox for commands working in `workspace`;
    /// `state_dir` is bashtool's own state (logs, session snapshots, job
    /// records), created (0700) if missing and kept read-only.
    pub fn new(
        config: &SandboxConfig,
        workspace: &Path,
        state_dir: Option<&Path>,
    ) -> Result<Arc<Self>, Error> {
        if config.mode == SandboxMode::Off {
            return Err(Error::SandboxSetting {
                setting: "sandbox",
                message: "mode `off` has no sandbox to prepare".to_owned(),
            });
        }
        config.validate()?;
        let workspace = workspace
            .canonicalize()
            .map_err(|source| Error::SandboxSetup {
                step: format!("resolving the workspace `{}`", workspace.display()),
                source,
            })?;
        if config.mode == SandboxMode::WorkspaceWrite && workspace == Path::new("/") {
            return Err(Error::SandboxSetting {
                setting: "sandbox",
                message: "the workspace is `/`: workspace-write would make everything writable; \
                          run from a project directory (--cwd), or use --sandbox read-only or off"
                    .to_owned(),
            });
        }
        if let Some(state_dir) = state_dir {
            std::os::unix::fs::DirBuilderExt::mode(
                std::fs::DirBuilder::new().recursive(true),
                0o700,
            )
            .create(state_dir)
            .map_err(|source| Error::SandboxSetup {
                step: format!("creating the state directory `{}`", state_dir.display()),
                source,
            })?;
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let layout = Layout::new(config, &workspace, state_dir, home.as_deref());
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let network = config.network == NetworkMode::Off;
        let mounts = layout.needs_mounts();
        let shared = namespaces::create_shared(Wanted {
            user: if !root && (network || mounts) {
                User::Create
            } else {
                User::Keep
            },
            network,
            mounts: None,
        })?;
        let mounts = if mounts {
            let convert = |paths: &[PathBuf]| {
                paths
                    .iter()
                    .map(|path| c_path(path))
                    .collect::<Result<Vec<_>, _>>()
            };
            let plan = MountPlan {
                anchors: convert(&layout.anchors)?,
                directories: convert(&layout.directories)?,
                read_only: convert(&layout.protected)?,
            };
            let watched = layout
                .anchors
                .iter()
                .chain(&layout.protected)
                .cloned()
                .collect();
            Some(SharedMounts::new(plan, watched, shared.user.as_ref())?)
        } else {
            None
        };
        let steps = ChildSteps {
            shared,
            mounts,
            drop_capabilities: root,
            ruleset: landlock::build(&layout.landlock)?,
            filters: seccomp::Filters::build()?,
        };
        Ok(Arc::new(Self {
            config: config.clone(),
            workspace,
            layout,
            steps,
            root,
            spawners: std::sync::Mutex::default(),
        }))
    }

    /// What the environment reports about this sandbox (details and the
    /// tool's description).
    pub fn info(&self) -> SandboxInfo {
        SandboxInfo {
            mode: self.config.mode.name().to_owned(),
            network: self.config.network.name().to_owned(),
            writable: self.layout.roots.clone(),
        }
    }

    /// The roots a command may write to.
    pub fn writable(&self) -> &[PathBuf] {
        &self.layout.roots
    }

    /// The paths kept read-only inside the writable roots.
    pub fn protected(&self) -> &[PathBuf] {
        &self.layout.protected
    }

    /// The effective profile, for `bashtool sandbox` and logs.
    pub fn describe(&self) -> String {
        let mut text = format!("mode: {}\n", self.config.mode);
        text.push_str(&format!("workspace: {}\n", self.workspace.display()));
        text.push_str("writable:\n");
        for root in &self.layout.roots {
            text.push_str(&format!("  {}\n", root.display()));
        }
        text.push_str("  (and /dev/null, /dev/zero, /dev/tty, /dev/pts, /dev/shm, ...)\n");
        text.push_str("read-only even inside writable roots:\n");
        for path in &self.layout.protected {
            text.push_str(&format!("  {}\n", path.display()));
        }
        text.push_str(&format!(
            "network: {}\n",
            match self.config.network {
                NetworkMode::On => "on (the host's network)",
                NetworkMode::Off => "off (a private loopback shared by this sandbox's commands)",
            }
        ));
        text.push_str(&format!(
            "signals and ptrace: {}\n",
            if landlock::abi_version() >= 6 {
                "only to processes inside the sandbox"
            } else {
                "kill of outside processes NOT blocked (Landlock ABI < 6)"
            }
        ));
        if self.root {
            text.push_str(
                "running as root: mount, module, raw I/O, clock and network-admin capabilities dropped\n",
            );
        }
        text
    }
}

impl SpawnWrapper for Sandbox {
    fn wrap(&self, launch: &mut Launch) -> Result<(), ExecError> {
        if let Some(mounts) = &self.steps.mounts {
            mounts
                .refresh(self.steps.shared.user.as_ref())
                .map_err(|error| ExecError::Other {
                    message: error.to_string(),
                })?;
        }
        launch.env.retain(|(name, _)| name != SANDBOX_VARIABLE);
        launch.env.push((
            OsString::from(SANDBOX_VARIABLE),
            OsString::from(self.config.mode.name()),
        ));
        Ok(())
    }

    fn needs_pre_exec(&self) -> bool {
        true
    }

    fn pre_exec(&self) -> std::io::Result<()> {
        self.steps.apply()
    }

    fn spawner(&self) -> Option<Arc<Spawner>> {
        if self.steps.shared.user.is_some() {
            return None;
        }
        // The generation is the mount namespace's descriptor (-1: none).
        let generation = |mounts: Option<std::os::fd::RawFd>| mounts.unwrap_or(-1);
        let key = generation(self.steps.mounts.as_ref().map(SharedMounts::current));
        let mut spawners = self.spawners.lock().ok()?;
        if spawners.unavailable {
            return None;
        }
        let current: Vec<&Arc<Spawner>> = spawners
            .by_generation
            .iter()
            .filter(|(made_for, spawner)| *made_for == key && spawner.is_alive())
            .map(|(_, spawner)| spawner)
            .collect();
        let busy: Vec<bool> = current.iter().map(|spawner| spawner.is_busy()).collect();
        if let Pick::Existing(index) = pick(&busy, spawners_per_generation()) {
            return Some(Arc::clone(current[index]));
        }
        // This generation needs one more (or its threads died): the
        // spawners of other generations whose children are all gone can end
        // (git rewriting `.git/config` makes a generation), and a dead one
        // makes nothing more.
        spawners.by_generation.retain(|(made_for, spawner)| {
            spawner.is_alive() && (*made_for == key || spawner.has_live_children())
        });
        // A thread's name is 15 bytes at most (what `/proc` shows).
        let started = Spawner::start("bashtool-spawn").and_then(|spawner| {
            let joined = spawner.run(|| self.steps.apply_to_thread())??;
            Ok((generation(joined), spawner))
        });
        if let Ok((joined, spawner)) = started {
            let spawner = Arc::new(spawner);
            spawners.by_generation.push((joined, Arc::clone(&spawner)));
            Some(spawner)
        } else {
            spawners.unavailable = true;
            None
        }
    }

    fn pre_exec_on_spawner(&self) -> std::io::Result<()> {
        self.steps.apply_on_spawner()
    }
}

/// Which spawner a launch takes among those of its generation.
#[derive(Debug, PartialEq, Eq)]
enum Pick {
    Existing(usize),
    New,
}

/// An idle spawner; or, with all of them busy and fewer than `limit`, a
/// new one (a launch holds its thread until the child execs: with one
/// thread, the launches of calls in flight wait in line for it, measured
/// 13% of two CPUs idle with 8 calls in flight, 5% with one thread per
/// CPU, and 7.8% more calls/s); else the first, to wait for.
fn pick(busy: &[bool], limit: usize) -> Pick {
    if let Some(idle) = busy.iter().position(|&busy| !busy) {
        Pick::Existing(idle)
    } else if !busy.is_empty() && busy.len() >= limit {
        Pick::Existing(0)
    } else {
        Pick::New
    }
}

/// Spawner threads per mount namespace generation at most: one per CPU.
fn spawners_per_generation() -> usize {
    static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *COUNT.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// The sandbox `config.sandbox` asks for: none when off, else the sandbox
/// of the working directory, with bashtool's own state protected (the log
/// directory and the job records).
pub fn sandbox_for(config: &crate::LocalConfig) -> Result<Option<Arc<Sandbox>>, Error> {
    if config.sandbox.mode == SandboxMode::Off {
        return Ok(None);
    }
    let mut sandbox_config = config.sandbox.clone();
    if let Some(records) = &config.job_records {
        sandbox_config.protected.push(records.clone());
    }
    // A log directory that cannot be made is not written to either (calls
    // run without logs): nothing to protect then.
    let log_dir = config
        .effective_log_dir()
        .ok()
        .filter(|dir| crate::state_dir::ensure_private_dir(dir).is_ok());
    Sandbox::new(
        &sandbox_config,
        &config.working_directory,
        log_dir.as_deref(),
    )
    .map(Some)
}

/// The wrappers `config.sandbox` asks for: none when off, else its
/// sandbox, with bashtool's own state protected.
pub fn wrappers_for(config: &crate::LocalConfig) -> Result<Wrappers, Error> {
    Ok(sandbox_for(config)?
        .into_iter()
        .map(|sandbox| sandbox as Arc<dyn SpawnWrapper>)
        .collect())
}

/// The sandbox info of `config` without preparing it (for descriptions
/// built before the environment): `None` when off.
pub fn sandbox_info(config: &crate::LocalConfig) -> Option<SandboxInfo> {
    if config.sandbox.mode == SandboxMode::Off {
        return None;
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let layout = Layout::new(
        &config.sandbox,
        &config.working_directory,
        None,
        home.as_deref(),
    );
    Some(SandboxInfo {
        mode: config.sandbox.mode.name().to_owned(),
        network: config.sandbox.network.name().to_owned(),
        writable: layout.roots,
    })
}

#[cfg(test)]
mod tests {
    use super::{Pick, pick};

    #[test]
    fn a_launch_takes_an_idle_spawner_else_a_new_one_up_to_the_limit() {
        assert_eq!(pick(&[], 2), Pick::New);
        assert_eq!(pick(&[false], 2), Pick::Existing(0));
        assert_eq!(pick(&[true], 2), Pick::New);
        assert_eq!(pick(&[true, false], 2), Pick::Existing(1));
        // All busy at the limit: wait for the first.
        assert_eq!(pick(&[true, true], 2), Pick::Existing(0));
        assert_eq!(pick(&[true], 1), Pick::Existing(0));
    }
}
