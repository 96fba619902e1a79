//! The contract suite (`bashtool_tests::contract`) against `RemoteExec`
//! talking to a real `bashtool serve` child process over its stdin/stdout:
//! stateless, and in the connection's own session. The server runs on this
//! machine, so the pids a command prints are real here and the suite's
//! liveness checks from `/proc` hold as they are.
//!
//! The same suite through `--remote-shell`'s transport: a POSIX shell line,
//! and the `serve` that bashtool put there itself (the static build when
//! `.ci/test` names it in `BASHTOOL_TEST_STATIC_BINARY`, else this build).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bashtool_env_remote::{RemoteConfig, RemoteExec, ServeBinary, SessionRequest, ShellTransport};
use bashtool_tests::contract::Subject;
use bashtool_tests::contract_suite;
use bashtool_tests::workspace;

/// The command line that starts a server in `dir`, with its temp files,
/// logs and state inside `dir`.
fn serve_line(dir: &Path) -> String {
    let dir = dir.display();
    format!(
        "mkdir -p '{dir}/tmp' '{dir}/state' && TMPDIR='{dir}/tmp' BASHTOOL_STATE_DIR='{dir}/state' exec '{}' serve --cwd '{dir}' --kill-grace 1",
        env!("CARGO_BIN_EXE_bashtool")
    )
}

fn subject(session: Option<SessionRequest>) -> Subject {
    let (guard, dir) = workspace();
    let config = RemoteConfig {
        session,
        remote_kill_grace: Duration::from_secs(1),
        ..RemoteConfig::default()
    };
    let exec = RemoteExec::command(serve_line(&dir), config);
    Subject {
        exec: Arc::new(exec.clone()),
        jobs: Arc::new(exec),
        dir,
        guard: Box::new(guard),
    }
}

/// The home of every shell line here (one cache for the whole run, kept in
/// cargo's test temp dir between runs), and the build that goes there;
/// the first call uploads it with `bashtool run --remote-shell`, so the
/// subjects find it there.
fn shell_home() -> &'static (PathBuf, ServeBinary) {
    static HOME: OnceLock<(PathBuf, ServeBinary)> = OnceLock::new();
    HOME.get_or_init(|| {
        let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("contract-remote-shell-home");
        std::fs::create_dir_all(&home).expect("the shell's home");
        let build = std::env::var_os("BASHTOOL_TEST_STATIC_BINARY").map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_bashtool")),
            PathBuf::from,
        );
        let (_guard, dir) = workspace();
        let output = Command::new(env!("CARGO_BIN_EXE_bashtool"))
            .env("BASHTOOL_STATE_DIR", dir.join("state"))
            .args([
                "run",
                "--remote-shell",
                &shell_line(&home, &dir),
                "--serve-binary",
            ])
            .arg(&build)
            .arg("--cwd")
            .arg(&dir)
            .args(["--", "true"])
            .stdin(Stdio::null())
            .output()
            .expect("bashtool runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let build = ServeBinary::open(&build).expect("a Linux build");
        (home, build)
    })
}

/// A line that opens sh with `home` as HOME and temp files and state in `dir`.
fn shell_line(home: &Path, dir: &Path) -> String {
    format!(
        "mkdir -p '{dir}/tmp' '{dir}/state' && HOME='{home}' TMPDIR='{dir}/tmp' BASHTOOL_STATE_DIR='{dir}/state' XDG_CACHE_HOME= exec sh",
        home = home.display(),
        dir = dir.display()
    )
}

fn shell_subject(session: Option<SessionRequest>) -> Subject {
    let (home, build) = shell_home();
    let (guard, dir) = workspace();
    let config = RemoteConfig {
        session,
        remote_kill_grace: Duration::from_secs(1),
        ..RemoteConfig::default()
    };
    let serve_args = vec![
        "--cwd".to_owned(),
        dir.display().to_string(),
        "--kill-grace".to_owned(),
        "1".to_owned(),
    ];
    let transport =
        ShellTransport::new(shell_line(home, &dir), Some(build.clone())).serve_args(serve_args);
    let exec = RemoteExec::new(Arc::new(transport), config);
    Subject {
        exec: Arc::new(exec.clone()),
        jobs: Arc::new(exec),
        dir,
        guard: Box::new(guard),
    }
}

contract_suite!(remote_stateless, subject(None));
contract_suite!(remote_session, subject(Some(SessionRequest::default())));
contract_suite!(shell_stateless, shell_subject(None));
contract_suite!(
    shell_session,
    shell_subject(Some(SessionRequest::default()))
);
