//! The prepared sandbox ([`Sandbox`]): its realm, spawner threads, watcher
//! and proxy, and the [`Confinement`] a sandbox's settings give an
//! environment. Linux only.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bashtool_process::{Confinement, Launch, RealmRequest, Spawner, Summary, Wrapper};

use crate::child::ChildSteps;
use crate::mounts::{Cover, Entry, Kept, MountPlan, RealmMounts, c_path};
use crate::paths::{Layout, StatePaths};
use crate::proxy::PROXY_PORT;
use crate::realm::{Realm as RealmNamespaces, RealmSpec};
use crate::{
    Error, Network, SANDBOX_VARIABLE, SandboxConfig, SandboxMode, git, landlock, mounts, proxy,
    seccomp, watch,
};

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
    /// What commands write in the workspace that the mounts could not
    /// protect in advance (workspace-write only).
    watch: Option<Arc<watch::Watcher>>,
    /// The allowed domains (expanded), when the network is limited to them.
    allowed: Vec<String>,
    /// The proxy to them, and the variables that point the tools at it.
    proxy: Option<proxy::Proxy>,
    proxy_variables: Vec<(OsString, OsString)>,
}

/// The spawner threads: up to one per CPU (see [`pick`]).
#[derive(Debug, Default)]
struct Spawners {
    threads: Vec<Arc<Spawner>>,
    /// A thread could not take the steps (inside another sandbox, say):
    /// every child takes them itself, as strong, only slower.
    unavailable: bool,
}

impl Sandbox {
    /// Prepares the sandbox for commands working in `workspace`;
    /// `state_dir` is bashtool's own state (logs, session snapshots, job
    /// records), created (0700) if missing and hidden from commands.
    pub fn new(
        config: &SandboxConfig,
        workspace: &Path,
        state_dir: Option<&Path>,
    ) -> Result<Arc<Self>, Error> {
        if let Some(state_dir) = state_dir {
            std::os::unix::fs::DirBuilderExt::mode(
                std::fs::DirBuilder::new().recursive(true),
                0o700,
            )
            .create(state_dir)
            .map_err(|source| Error::Setup {
                step: format!("creating the state directory `{}`", state_dir.display()),
                source,
            })?;
        }
        let state = StatePaths {
            hidden: state_dir.map(Path::to_path_buf).into_iter().collect(),
            ..StatePaths::default()
        };
        Self::with_state(config, workspace, &state, false)
    }

    /// As [`Sandbox::new`], with bashtool's paths said one by one; `kept`:
    /// what runs inside may outlive this process (background jobs of a
    /// `bashtool run`), so the realm lives on until nothing is left in it.
    pub fn with_state(
        config: &SandboxConfig,
        workspace: &Path,
        state: &StatePaths,
        kept: bool,
    ) -> Result<Arc<Self>, Error> {
        if config.mode == SandboxMode::Off {
            return Err(Error::Setting {
                setting: "sandbox",
                message: "mode `off` has no sandbox to prepare".to_owned(),
            });
        }
        config.validate()?;
        let workspace = workspace.canonicalize().map_err(|source| Error::Setup {
            step: format!("resolving the workspace `{}`", workspace.display()),
            source,
        })?;
        if config.mode == SandboxMode::WorkspaceWrite && workspace == Path::new("/") {
            return Err(Error::Setting {
                setting: "sandbox",
                message: "the workspace is `/`: workspace-write would make everything writable; \
                          run from a project directory (--cwd), or use --sandbox read-only or off"
                    .to_owned(),
            });
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let layout = Layout::new(config, &workspace, state, home.as_deref());
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let entries = layout
            .protected
            .iter()
            .map(|(path, protection)| {
                Ok(Entry {
                    path: path.clone(),
                    c_path: c_path(path)?,
                    protection: *protection,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let covers = layout
            .covers
            .iter()
            .map(|cover| {
                if cover.keep.len() > mounts::MAX_KEPT {
                    return Err(Error::Setting {
                        setting: "writable",
                        message: format!(
                            "more than {} paths to keep visible under `{}`",
                            mounts::MAX_KEPT,
                            cover.path.display()
                        ),
                    });
                }
                Ok(Cover {
                    path: c_path(&cover.path)?,
                    options: std::ffi::CString::new(cover.options).map_err(|_| Error::Setting {
                        setting: "sandbox",
                        message: "tmpfs options with a NUL byte".to_owned(),
                    })?,
                    read_only: cover.read_only,
                    keep: cover
                        .keep
                        .iter()
                        .map(|(path, read_only)| {
                            Ok(Kept {
                                path: c_path(path)?,
                                read_only: *read_only,
                            })
                        })
                        .collect::<Result<Vec<_>, Error>>()?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let shell =
            bashtool_process::resolve_program(std::ffi::OsStr::new("bash")).ok_or_else(|| {
                Error::Unsupported {
                    mode: "namespaces".to_owned(),
                    feature: "bash",
                    reason: "the sandbox's init runs `bash`, which is not on PATH".to_owned(),
                }
            })?;
        let network = config.effective_network();
        let allow_list = config.allow_list()?;
        let mut realm = RealmNamespaces::create(&RealmSpec {
            user: !root,
            network: network != Network::On,
            proxy_port: (network == Network::Allowlist).then_some(PROXY_PORT),
            mounts: MountPlan {
                entries,
                covers,
                devpts: true,
                proc: true,
            },
            kept,
            shell,
        })?;
        let proxy = match realm.proxy_listener.take() {
            Some(listener) => Some(proxy::Proxy::start(listener, allow_list.clone())?),
            None => None,
        };
        let proxy_variables = if proxy.is_some() {
            proxy::variables(&allow_list)
        } else {
            Vec::new()
        };
        // Landlock's rules for the realm's own directories are made on the
        // realm's inodes, reached through its init's root.
        let mut writable = layout.landlock.clone();
        writable.extend(layout.landlock_inside.iter().map(|path| realm.inside(path)));
        let ruleset = landlock::build(&writable)?;
        let protected_entries = layout
            .protected
            .iter()
            .map(|(path, protection)| {
                Ok(Entry {
                    path: path.clone(),
                    c_path: c_path(path)?,
                    protection: *protection,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let listed: Box<dyn Fn() -> Vec<(PathBuf, mounts::Protection)> + Send + Sync> =
            if config.mode == SandboxMode::WorkspaceWrite {
                let workspace = workspace.clone();
                let extra = layout.extra_protected.clone();
                Box::new(move || {
                    let mut paths = vec![(workspace.clone(), mounts::Protection::Anchor)];
                    paths.extend(git::protected_paths(&workspace));
                    paths.extend(extra.iter().cloned());
                    paths
                })
            } else {
                Box::new(Vec::new)
            };
        let mounts = Arc::new(RealmMounts::new(protected_entries, listed));
        let watch = (config.mode == SandboxMode::WorkspaceWrite).then(|| {
            let mounts = Arc::clone(&mounts);
            watch::Watcher::start(
                &workspace,
                Arc::new(move |path: &Path| mounts.is_protected(path)),
            )
        });
        let steps = ChildSteps {
            realm,
            mounts,
            drop_capabilities: root,
            ruleset,
            filters: seccomp::Filters::build()?,
        };
        Ok(Arc::new(Self {
            config: config.clone(),
            workspace,
            layout,
            steps,
            root,
            spawners: std::sync::Mutex::default(),
            watch,
            allowed: if proxy.is_some() {
                allow_list.patterns()
            } else {
                Vec::new()
            },
            proxy,
            proxy_variables,
        }))
    }

    /// What this sandbox is, for reports (a tool's description, a result's
    /// details).
    pub fn summary(&self) -> Summary {
        Summary {
            mode: self.config.mode.name().to_owned(),
            network: self.config.effective_network().name().to_owned(),
            writable: self.layout.roots.clone(),
            allowed_domains: self.allowed.clone(),
        }
    }

    /// The domains commands may reach through the proxy (expanded), empty
    /// unless the network is limited to them.
    pub fn allowed_domains(&self) -> &[String] {
        &self.allowed
    }

    /// The roots a command may write to.
    pub fn writable(&self) -> &[PathBuf] {
        &self.layout.roots
    }

    /// The paths kept read-only inside the writable roots.
    pub fn protected(&self) -> Vec<PathBuf> {
        self.layout
            .protected
            .iter()
            .filter(|(_, protection)| *protection != mounts::Protection::Anchor)
            .map(|(path, _)| path.clone())
            .collect()
    }

    /// The pid (on the host) of the realm's init: the parent the kernel
    /// gives a command's orphans once the command's own process is gone.
    pub fn realm_init(&self) -> u32 {
        self.steps.realm.init_pid()
    }

    /// The pid a host process has inside this sandbox (what commands see:
    /// `$!`, `ps`, `kill`), from the last field of `NSpid` in its status.
    pub fn pid_inside(&self, host_pid: u32) -> Option<u32> {
        let status = std::fs::read_to_string(format!("/proc/{host_pid}/status")).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("NSpid:"))?
            .split_whitespace()
            .last()?
            .parse()
            .ok()
    }

    /// Protects again what changed on the host since the realm protected
    /// it (a `.git/config` git replaced, a `.git` made by `git init`): a
    /// session calls it before each call, a launch before each start.
    pub fn refresh(&self) -> Result<(), Error> {
        // The watcher sees every change the protected paths depend on: with
        // nothing changed, a refresh is a mutex and one `read` that finds
        // no event (a session call costs ~70 µs; listing and `lstat`ing
        // the paths each time cost ~10 µs of it).
        if let Some(watch) = &self.watch
            && !watch.take_changed()
        {
            return Ok(());
        }
        let refreshed = self
            .steps
            .mounts
            .refresh(self.steps.realm.user.as_ref(), &self.steps.realm.mount);
        if refreshed.is_err()
            && let Some(watch) = &self.watch
        {
            watch.mark_changed();
        }
        refreshed
    }

    /// The effective profile, for `bashtool sandbox` and logs.
    pub fn describe(&self) -> String {
        let mut text = format!("mode: {}\n", self.config.mode);
        text.push_str(&format!("workspace: {}\n", self.workspace.display()));
        text.push_str("writable:\n");
        for root in &self.layout.roots {
            if self.layout.private_tmp && root == Path::new("/tmp") {
                text.push_str("  /tmp (private to the sandbox, empty at start)\n");
            } else {
                text.push_str(&format!("  {}\n", root.display()));
            }
        }
        text.push_str(
            "  (and /dev/null, /dev/zero, /dev/tty, its own /dev/shm and terminals, ...)\n",
        );
        text.push_str("read-only even inside writable roots:\n");
        for path in self.protected() {
            text.push_str(&format!("  {}\n", path.display()));
        }
        text.push_str("hidden (an empty private directory in their place):\n");
        for cover in &self.layout.covers {
            text.push_str(&format!("  {}\n", cover.path.display()));
            for (kept, read_only) in &cover.keep {
                text.push_str(&format!(
                    "    except {} ({})\n",
                    kept.display(),
                    if *read_only { "read-only" } else { "writable" }
                ));
            }
        }
        text.push_str(&format!(
            "network: {}\n",
            match self.config.effective_network() {
                Network::On => "on (the host's network)",
                Network::Off => "off (a private loopback shared by this sandbox's commands)",
                Network::Allowlist =>
                    "allowlist (a private loopback; the allowed domains only, through bashtool's \
                     proxy outside the sandbox)",
            }
        ));
        if self.proxy.is_some() {
            text.push_str(&format!(
                "  proxy: 127.0.0.1:{PROXY_PORT} inside the sandbox (HTTP CONNECT, plain HTTP, \
                 SOCKS5 with remote DNS); HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY (both \
                 cases) and npm's, yarn's, pip's and cargo's own settings point at it\n"
            ));
            text.push_str("  allowed domains (a loopback or private address only through an exact name or address):\n");
            for domain in &self.allowed {
                text.push_str(&format!("    {domain}\n"));
            }
        }
        text.push_str(
            "processes: a pid namespace of its own with its own /proc (bashtool and the host's \
             processes invisible); what is left when a command's tree ends is killed\n",
        );
        text.push_str("ipc: a namespace of its own (SysV shared memory, semaphores, queues)\n");
        text.push_str(
            "signals and ptrace: only to the sandbox's own processes (the pid namespace); \
             ptrace only within one command's tree (Landlock)\n",
        );
        if self.root {
            text.push_str(
                "running as root: capabilities kept: chown, dac_override, dac_read_search, fowner, \
                 fsetid, kill, setgid, setuid, net_bind_service, audit_write; all others dropped\n",
            );
        }
        text
    }
}

// SAFETY: `pre_fork`, `pre_exec` and `pre_exec_on_spawner` only make
// system calls (setns, capset, prctl, seccomp, landlock_restrict_self,
// getcwd/chdir into a stack buffer) on descriptors and programs prepared in
// `Sandbox::new`, write nothing but their own stack, and return; see
// `child.rs`.
unsafe impl Wrapper for Sandbox {
    fn wrap(&self, launch: &mut Launch) -> Result<(), bashtool_process::Error> {
        self.refresh()
            .map_err(|error| bashtool_process::Error::Wrapper {
                message: error.to_string(),
            })?;
        if !self.steps.realm.is_alive() {
            return Err(bashtool_process::Error::Wrapper {
                message: "the sandbox's process namespace is gone (its init was killed from \
                          outside); restart bashtool"
                    .to_owned(),
            });
        }
        launch.env.retain(|(name, _)| name != SANDBOX_VARIABLE);
        launch.env.push((
            OsString::from(SANDBOX_VARIABLE),
            OsString::from(self.config.mode.name()),
        ));
        if !self.proxy_variables.is_empty() {
            launch.env.retain(|(name, _)| {
                !self
                    .proxy_variables
                    .iter()
                    .any(|(proxy_name, _)| proxy_name == name)
            });
            launch.env.extend(self.proxy_variables.iter().cloned());
        }
        if self.layout.private_tmp {
            // The host's TMPDIR is read-only here: temp files go to the
            // sandbox's own /tmp.
            launch.env.retain(|(name, _)| name != "TMPDIR");
            launch
                .env
                .push((OsString::from("TMPDIR"), OsString::from("/tmp")));
        }
        Ok(())
    }

    fn needs_pre_exec(&self) -> bool {
        true
    }

    fn pre_exec(&self) -> std::io::Result<()> {
        self.steps.apply()
    }

    fn needs_pre_fork(&self) -> bool {
        true
    }

    fn pre_fork(&self) -> std::io::Result<()> {
        self.steps.before_fork()
    }

    fn realm(&self) -> Option<&dyn bashtool_process::Realm> {
        Some(self)
    }

    fn spawner(&self) -> Option<Arc<Spawner>> {
        if self.steps.realm.user.is_some() {
            return None;
        }
        let mut spawners = self.spawners.lock().ok()?;
        if spawners.unavailable {
            return None;
        }
        spawners.threads.retain(|spawner| spawner.is_alive());
        let busy: Vec<bool> = spawners
            .threads
            .iter()
            .map(|spawner| spawner.is_busy())
            .collect();
        if let Pick::Existing(index) = pick(&busy, spawners_per_sandbox()) {
            return Some(Arc::clone(&spawners.threads[index]));
        }
        // A thread's name is 15 bytes at most (what `/proc` shows).
        let started = Spawner::start("bashtool-spawn").and_then(|spawner| {
            spawner.run(|| self.steps.apply_to_thread())??;
            Ok(spawner)
        });
        if let Ok(spawner) = started {
            let spawner = Arc::new(spawner);
            spawners.threads.push(Arc::clone(&spawner));
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

impl bashtool_process::Realm for Sandbox {
    fn adopter(&self) -> Option<u32> {
        Some(self.realm_init())
    }

    fn inner_pid(&self, host_pid: u32) -> Option<u32> {
        self.pid_inside(host_pid)
    }

    fn terminal_multiplexer(&self) -> Option<PathBuf> {
        Some(self.steps.realm.inside(Path::new("/dev/pts/ptmx")))
    }

    fn after_call(&self) -> Vec<String> {
        // What a command may have made that must be protected from now on
        // (a repository it created), then what it wrote that the mounts
        // could not cover in advance.
        let mut notes = Vec::new();
        if let Err(error) = self.refresh() {
            notes.push(format!("sandbox: {error}"));
        }
        if let Some(watch) = &self.watch {
            notes.extend(watch.take_notes());
        }
        // What the proxy refused since the last call ended: the commands
        // of a sandbox share it, so a background job's refusal comes with
        // the next call.
        if let Some(proxy) = &self.proxy {
            notes.extend(proxy.take_notes());
        }
        notes
    }

    fn before_call(&self) -> Result<(), bashtool_process::Error> {
        self.refresh()
            .map_err(|error| bashtool_process::Error::Wrapper {
                message: error.to_string(),
            })
    }
}

/// Which spawner a launch takes among the sandbox's.
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

/// Spawner threads per sandbox at most: one per CPU.
fn spawners_per_sandbox() -> usize {
    static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *COUNT.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// A sandbox's settings make a sandbox for each environment that asks (a
/// stateless environment, each session): the [`Confinement`] a front end
/// hands to an environment.
impl Confinement for SandboxConfig {
    fn confine(
        &self,
        request: &RealmRequest<'_>,
    ) -> Result<Arc<dyn Wrapper>, bashtool_process::Error> {
        let state = StatePaths {
            hidden: request.hidden.to_vec(),
            shown: request.shown.to_vec(),
            private: request.private.to_vec(),
        };
        Sandbox::with_state(self, request.workspace, &state, request.kept)
            .map(|sandbox| sandbox as Arc<dyn Wrapper>)
            .map_err(|error| bashtool_process::Error::Wrapper {
                message: error.to_string(),
            })
    }

    fn describe(&self, request: &RealmRequest<'_>) -> Result<String, bashtool_process::Error> {
        let state = StatePaths {
            hidden: request.hidden.to_vec(),
            shown: request.shown.to_vec(),
            private: request.private.to_vec(),
        };
        Sandbox::with_state(self, request.workspace, &state, request.kept)
            .map(|sandbox| sandbox.describe())
            .map_err(|error| bashtool_process::Error::Wrapper {
                message: error.to_string(),
            })
    }

    fn summary(&self, workspace: &Path) -> Summary {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let layout = Layout::new(self, workspace, &StatePaths::default(), home.as_deref());
        let network = self.effective_network();
        Summary {
            mode: self.mode.name().to_owned(),
            network: network.name().to_owned(),
            writable: layout.roots,
            allowed_domains: if network == Network::Allowlist {
                self.allow_list()
                    .map(|list| list.patterns())
                    .unwrap_or_default()
            } else {
                Vec::new()
            },
        }
    }
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
