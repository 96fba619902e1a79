//! Starting the command with `posix_spawnp` and glibc's `POSIX_SPAWN_SETSID`:
//! the path of every launch without a step in the child (see `clone.rs`,
//! the path otherwise).
//!
//! `std::process::Command` needs a `pre_exec` hook to call `setsid`, and any
//! hook makes it `fork` the whole process instead of using `posix_spawn`
//! (a vfork-style clone): the page-table copy of `fork` was the largest part
//! of what a call cost on top of bash itself. Here the child gets, in one
//! spawn: a new session (its own process group, no controlling terminal, so
//! nothing can prompt on `/dev/tty`), default dispositions for the signals
//! a host may ignore (so our SIGTERM works and `yes | head` ends by
//! SIGPIPE), an empty signal mask, stdin `/dev/null`, its cwd and output.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Signals a host may ignore that every command we start gets with their
/// default action, however it is started (here, `clone_exec`, the
/// terminal of an interactive job): our SIGTERM must work, `yes | head`
/// must end by SIGPIPE, Ctrl-C in a terminal must interrupt. A server
/// started in the background by a shell without job control has SIGINT
/// and SIGQUIT ignored, and `nohup` ignores SIGHUP; both are inherited
/// across exec.
pub(crate) const DEFAULT_SIGNALS: [libc::c_int; 5] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGPIPE,
];

/// Whether this C library's `posix_spawn` can close every descriptor
/// above the ones a child gets (glibc 2.34's `addclosefrom_np` file
/// action). musl's cannot: there every launch takes the clone path
/// (`clone.rs`), which closes them itself, so a descriptor a host left
/// without close-on-exec never reaches a command.
pub(crate) const CLOSES_INHERITED_FDS: bool = cfg!(target_env = "gnu");

/// The descriptors the child gets: each `(source, target)` is duplicated
/// onto `target`; stdin is `/dev/null` unless given. Every source must be
/// close-on-exec and differ from every target (see [`ChildFds::new`]).
pub(crate) struct ChildFds {
    pub stdin: Option<RawFd>,
    pub stdout: RawFd,
    pub stderr: RawFd,
    pub extra: Vec<(RawFd, RawFd)>,
    /// stdin is a terminal that becomes the child's controlling terminal
    /// (the clone child only: `posix_spawn` cannot).
    pub controlling_terminal: bool,
}

fn c_string(text: &OsStr) -> io::Result<CString> {
    c_string_of(&[text.as_bytes()])
}

/// The concatenation of `parts` as one C string, in one allocation (this
/// runs for every variable of every spawn).
fn c_string_of(parts: &[&[u8]]) -> io::Result<CString> {
    let length: usize = parts.iter().map(|part| part.len()).sum();
    let mut bytes = Vec::with_capacity(length + 1);
    for part in parts {
        bytes.extend_from_slice(part);
    }
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument or variable contains a NUL byte",
        )
    })
}

/// Owns a `posix_spawn_file_actions_t` and destroys it.
struct FileActions(libc::posix_spawn_file_actions_t);

impl Drop for FileActions {
    fn drop(&mut self) {
        // SAFETY: initialized in `spawn` before this guard was built.
        unsafe {
            libc::posix_spawn_file_actions_destroy(&raw mut self.0);
        }
    }
}

/// Owns a `posix_spawnattr_t` and destroys it.
struct Attributes(libc::posix_spawnattr_t);

impl Drop for Attributes {
    fn drop(&mut self) {
        // SAFETY: initialized in `spawn` before this guard was built.
        unsafe {
            libc::posix_spawnattr_destroy(&raw mut self.0);
        }
    }
}

/// A libc return code (an errno value, 0 for success) as a result.
fn check(code: libc::c_int) -> io::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(code))
    }
}

/// The lowest descriptor above every one the child gets.
pub(crate) fn first_free_fd(fds: &ChildFds) -> RawFd {
    fds.extra
        .iter()
        .map(|&(_, target)| target + 1)
        .fold(3, RawFd::max)
}

/// The argv, environment and directory of a launch as C strings, prepared
/// before the spawn (the child may not allocate: it shares our memory).
pub(crate) struct CLaunch {
    pub argv: Vec<CString>,
    pub env: Vec<CString>,
    pub cwd: CString,
    /// Where `argv[0]` was found in `PATH` (see `program_path`); `None`:
    /// the child searches `PATH` itself.
    pub program: Option<CString>,
}

impl CLaunch {
    pub(crate) fn new(
        argv: &[OsString],
        env: &[(OsString, OsString)],
        cwd: &Path,
    ) -> io::Result<Self> {
        let argv: Vec<CString> = argv
            .iter()
            .map(|arg| c_string(arg))
            .collect::<io::Result<_>>()?;
        if argv.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no program to run",
            ));
        }
        let env: Vec<CString> = env
            .iter()
            .map(|(key, value)| c_string_of(&[key.as_bytes(), b"=", value.as_bytes()]))
            .collect::<io::Result<_>>()?;
        Ok(Self {
            argv,
            env,
            cwd: c_string(cwd.as_os_str())?,
            program: None,
        })
    }
}

/// Spawns `launch.program`, else `argv[0]` looked up in `PATH`, with
/// exactly `env` as its environment, in `cwd`, as the leader of a new
/// session.
pub(crate) fn spawn(launch: &CLaunch, fds: &ChildFds) -> io::Result<u32> {
    let program = launch.program.as_ref().unwrap_or(&launch.argv[0]);
    let cwd = &launch.cwd;
    let mut argv_pointers: Vec<*mut libc::c_char> = launch
        .argv
        .iter()
        .map(|arg| arg.as_ptr().cast_mut())
        .collect();
    argv_pointers.push(std::ptr::null_mut());
    let mut env_pointers: Vec<*mut libc::c_char> = launch
        .env
        .iter()
        .map(|pair| pair.as_ptr().cast_mut())
        .collect();
    env_pointers.push(std::ptr::null_mut());
    let (child_out, child_err) = (fds.stdout, fds.stderr);

    let mut pid: libc::pid_t = 0;
    // SAFETY: every pointer handed to libc points into a CString, a Vec or a
    // local that outlives the call; the file actions and attributes are
    // initialized before use and destroyed by their guards; the argv and
    // envp arrays end with a null pointer.
    unsafe {
        let mut actions = FileActions(std::mem::zeroed());
        check(libc::posix_spawn_file_actions_init(&raw mut actions.0))?;
        let mut attributes = Attributes(std::mem::zeroed());
        check(libc::posix_spawnattr_init(&raw mut attributes.0))?;

        match fds.stdin {
            Some(stdin) => check(libc::posix_spawn_file_actions_adddup2(
                &raw mut actions.0,
                stdin,
                0,
            ))?,
            None => check(libc::posix_spawn_file_actions_addopen(
                &raw mut actions.0,
                0,
                c"/dev/null".as_ptr(),
                libc::O_RDONLY,
                0,
            ))?,
        }
        check(libc::posix_spawn_file_actions_adddup2(
            &raw mut actions.0,
            child_out,
            1,
        ))?;
        check(libc::posix_spawn_file_actions_adddup2(
            &raw mut actions.0,
            child_err,
            2,
        ))?;
        for &(source, target) in &fds.extra {
            check(libc::posix_spawn_file_actions_adddup2(
                &raw mut actions.0,
                source,
                target,
            ))?;
        }
        // Nothing else is inherited: a descriptor a host left without
        // close-on-exec (a jobserver pipe) would reach the command, and an
        // inherited fd 10 trips a bash bug in `exec 10>a 11>b`. (Only
        // glibc has this action; elsewhere the clone path is taken, see
        // `CLOSES_INHERITED_FDS`.)
        #[cfg(target_env = "gnu")]
        check(libc::posix_spawn_file_actions_addclosefrom_np(
            &raw mut actions.0,
            first_free_fd(fds),
        ))?;
        check(libc::posix_spawn_file_actions_addchdir_np(
            &raw mut actions.0,
            cwd.as_ptr(),
        ))?;

        let mut defaults: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut defaults);
        for signal in DEFAULT_SIGNALS {
            libc::sigaddset(&raw mut defaults, signal);
        }
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut mask);
        check(libc::posix_spawnattr_setsigdefault(
            &raw mut attributes.0,
            &raw const defaults,
        ))?;
        check(libc::posix_spawnattr_setsigmask(
            &raw mut attributes.0,
            &raw const mask,
        ))?;
        let flags = libc::POSIX_SPAWN_SETSID
            | libc::POSIX_SPAWN_SETSIGDEF as libc::c_short
            | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short;
        check(libc::posix_spawnattr_setflags(&raw mut attributes.0, flags))?;

        let start = if launch.program.is_some() {
            libc::posix_spawn
        } else {
            libc::posix_spawnp
        };
        check(start(
            &raw mut pid,
            program.as_ptr(),
            &raw const actions.0,
            &raw const attributes.0,
            argv_pointers.as_ptr(),
            env_pointers.as_ptr(),
        ))?;
    }
    u32::try_from(pid).map_err(|_| io::Error::other("posix_spawn gave a negative pid"))
}
