//! The contract suite (`bashtool_tests::contract`) against `RemoteExec`
//! talking to a real `bashtool serve` child process over its stdin/stdout:
//! stateless, and in the connection's own session. The server runs on this
//! machine, so the pids a command prints are real here and the suite's
//! liveness checks from `/proc` hold as they are.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bashtool_env_remote::{RemoteConfig, RemoteExec, SessionRequest};
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

contract_suite!(remote_stateless, subject(None));
contract_suite!(remote_session, subject(Some(SessionRequest::default())));
