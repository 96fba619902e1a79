//! The contract suite (`bashtool_tests::contract`) against every
//! environment of the workspace: a stateless `LocalExec` and a persistent
//! `Session` keep every promise; env-mock keeps the port-level ones, on
//! tokio's paused clock. Each promise is one test per environment.

use std::sync::Arc;

use bashtool_tests::contract::{Subject, mock_subject};
use bashtool_tests::contract_suite;
use bashtool_tests::{new_session, test_config, workspace};

fn local() -> Subject {
    let (guard, dir) = workspace();
    let exec = bashtool_env_local::LocalExec::new(test_config(&dir));
    Subject {
        exec: Arc::new(exec.clone()),
        jobs: Arc::new(exec),
        dir,
        guard: Box::new(guard),
    }
}

fn session() -> Subject {
    let (guard, dir) = workspace();
    let session = new_session(&dir);
    Subject {
        exec: Arc::new(session.clone()),
        jobs: Arc::new(session),
        dir,
        guard: Box::new(guard),
    }
}

contract_suite!(local_exec, local());
contract_suite!(session, session());
contract_suite!(mock, mock_subject(), port, #[tokio::test(start_paused = true)]);
