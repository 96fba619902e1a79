//! Configuration of [`crate::LocalExec`].

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use bashtool_process::{ContainmentStrategy, SessionAndMarker};

/// Default grace between SIGTERM and SIGKILL.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
/// Default cap on the number of log files kept in the log directory.
pub const DEFAULT_MAX_LOG_FILES: usize = 500;
/// Default cap on the total size of the log files.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 1024 * 1024 * 1024;
/// Default cap on one log file: what the model may want to read of one
/// call; the rest of a bigger output is counted, not logged.
pub const DEFAULT_MAX_LOG_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// What every command gets from [`LocalConfig::non_interactive`]: nothing may
/// wait for a human. Pagers print, prompts fail, editors fail with a message
/// that tells the model what to do instead.
pub const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("EDITOR", NO_EDITOR),
    ("VISUAL", NO_EDITOR),
    ("GIT_EDITOR", NO_EDITOR),
    ("GIT_SEQUENCE_EDITOR", NO_EDITOR),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
    // Editors run by name (`vim file`) find stand-ins first in `PATH`
    // (see `editor_guards`).
];

/// The editor of a non-interactive command. Git runs its editor through
/// `sh -c '<editor> "$@"'`, so a shell snippet works and fails at once with
/// the message; programs that exec `$EDITOR` directly fail at once too
/// (no such program), which is still better than waiting.
pub const NO_EDITOR: &str = "echo 'error: no interactive editor is available to bashtool; pass the text on the command line instead (e.g. git commit -m \"message\")' >&2; false";

/// Configuration of [`crate::LocalExec`]. `Default` gives the production
/// settings; use struct update syntax to change a few:
///
/// ```
/// use bashtool_env_local::LocalConfig;
/// let config = LocalConfig { kill_grace: std::time::Duration::from_secs(1), ..LocalConfig::default() };
/// ```
#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// The shell program, looked up in `PATH` when relative. Default `bash`.
    pub shell: PathBuf,
    /// Arguments before the script. Default `["-c", "--"]`: the command runs
    /// as `bash -c -- <command>` (`--` so that a command starting with `-`
    /// is not read as an option of bash). Scripts over
    /// 100 KiB (Linux refuses one argument over 128 KiB) are written to a temp file and run as
    /// `bash -c -- '. "$0"' <file>`.
    pub shell_args: Vec<String>,
    /// Where commands run by default, and what relative `cwd`s resolve against.
    pub working_directory: PathBuf,
    /// Variables added to every call, after the non-interactive ones (so
    /// they may override them) and before the call's own.
    pub env: BTreeMap<String, String>,
    /// Which inherited variables commands see; by default those that look
    /// like secrets are dropped. Its `set` comes before `env`.
    pub env_policy: bashtool_core::EnvPolicy,
    /// Set the variables that keep programs from waiting for a person
    /// (`PAGER=cat`, `GIT_TERMINAL_PROMPT=0`, an editor that fails, ...)
    /// for every command. Default true.
    pub non_interactive: bool,
    /// Time between SIGTERM and SIGKILL when stopping a process tree.
    pub kill_grace: Duration,
    /// Where log files and background output files go. `None`: `logs` in
    /// the per-user state directory ([`crate::default_state_dir`]), shared
    /// by every bashtool process of the user, with the caps below holding
    /// across them.
    pub log_dir: Option<PathBuf>,
    /// Most log files kept; the oldest are removed first.
    pub max_log_files: usize,
    /// Most bytes of log files kept in total.
    pub max_log_bytes: u64,
    /// Most bytes of one log file.
    pub max_log_file_bytes: u64,
    /// Background jobs keep running when the `LocalExec` is dropped.
    pub keep_jobs_on_drop: bool,
    /// The program (argv) that masks a background job's output on its way
    /// to the output file, when the call's capture masks secrets
    /// ([`bashtool_core::OutputCapture::redacting`]): it reads one line
    /// ([`bashtool_core::Redactor::to_wire`]), then the job's output on
    /// stdin, and writes it masked to stdout; [`crate::run_redact_filter`]
    /// is such a program's main. It runs beside the job's copier and, like
    /// it, outlives this process. `None` (the default): the file holds the
    /// output as written, and only what the jobs port reads is masked (by
    /// `bashtool_core::JobsTool`). The CLI sets it to itself.
    pub redact_filter: Option<Vec<OsString>>,
    /// Steps applied to every process this environment starts (limits, a
    /// parent-death signal), in order; see [`bashtool_process::Wrapper`].
    /// The sandbox comes from [`LocalConfig::confinement`] and applies last.
    pub wrappers: bashtool_process::Wrappers,
    /// How each command's process tree is tracked and stopped.
    pub containment: Arc<dyn ContainmentStrategy>,
    /// Where background jobs are recorded for other processes (`bashtool
    /// jobs`). `None`: not recorded.
    pub job_records: Option<PathBuf>,
    /// How commands are confined: a sandbox's settings
    /// (`bashtool_sandbox::SandboxConfig`), from which this environment
    /// makes its sandbox (and each session its own, with its directory in
    /// it). `None`: commands run with the caller's rights. Default: the
    /// workspace-write sandbox.
    pub confinement: Option<Arc<dyn bashtool_process::Confinement>>,
    /// Shells kept started ahead of stateless calls. A foreground call in
    /// the default working directory with no variables of its own takes
    /// one that is already running: a fresh `bash` still, one per call,
    /// but its start (~1 ms) is off the call's path. Each waits as an idle
    /// `bash` process. Default 0: every call starts its shell when it
    /// arrives. Only with bash and `-c` (see `docs/warm-shells.md` for what
    /// a command can tell).
    pub warm_shells: usize,
    /// Resource limits per command (`pids`, `memory`, `cpu`), enforced with
    /// a cgroup per stateless call, background or interactive job, and per
    /// session. Default: a `pids` limit of
    /// [`bashtool_core::DEFAULT_PIDS_LIMIT`] where cgroups can be had (a
    /// fork bomb stops there), nothing else. A limit given explicitly that
    /// this machine cannot enforce makes every call fail with the reason
    /// (see `docs/limits.md`).
    pub limits: bashtool_core::LimitSettings,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            shell: PathBuf::from("bash"),
            shell_args: vec!["-c".to_owned(), "--".to_owned()],
            working_directory: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            env: BTreeMap::new(),
            env_policy: bashtool_core::EnvPolicy::default(),
            non_interactive: true,
            kill_grace: DEFAULT_KILL_GRACE,
            log_dir: None,
            max_log_files: DEFAULT_MAX_LOG_FILES,
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
            max_log_file_bytes: DEFAULT_MAX_LOG_FILE_BYTES,
            keep_jobs_on_drop: false,
            redact_filter: None,
            wrappers: Vec::new(),
            containment: Arc::new(SessionAndMarker),
            job_records: None,
            confinement: bashtool_sandbox::SandboxConfig::default().confinement(),
            warm_shells: 0,
            limits: bashtool_core::LimitSettings::default(),
        }
    }
}

impl LocalConfig {
    /// The log directory in effect, or why there is none (no per-user
    /// state directory: bashtool does not fall back to a shared one).
    pub fn effective_log_dir(&self) -> Result<PathBuf, crate::Error> {
        match &self.log_dir {
            Some(dir) => Ok(dir.clone()),
            None => Ok(crate::default_state_dir()?.join("logs")),
        }
    }

    /// The log directory of an environment with this configuration.
    pub(crate) fn log_dir_handle(&self) -> crate::LogDir {
        match self.effective_log_dir() {
            Ok(dir) => crate::LogDir::with_file_cap(
                dir,
                self.max_log_files,
                self.max_log_bytes,
                self.max_log_file_bytes,
            ),
            Err(error) => crate::LogDir::unavailable(error.to_string()),
        }
    }
}
