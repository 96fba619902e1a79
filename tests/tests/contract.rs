//! The contract suite (`bashtool_tests::contract`) against every
//! environment of the workspace: a stateless `LocalExec` and a persistent
//! `Session`. Each promise is one test per environment.

use std::sync::Arc;

use bashtool_tests::contract::{self, Subject};
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

macro_rules! contract_suite {
    ($environment:ident, $subject:expr) => {
        mod $environment {
            use super::*;

            contract_suite!(@tests $subject;
                exit_codes, signals, interleaving, huge_output_is_bounded,
                timeout_stops_the_tree, cancel_stops_the_tree, drop_stops_the_tree,
                no_hang_on_a_leftover, cwd_and_env_per_call, background_job_lifecycle,
                background_job_stop, a_stopped_command_is_detected, cancel_wins_over_a_flood);
        }
    };
    (@tests $subject:expr; $($promise:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $promise() {
                contract::$promise($subject).await;
            }
        )*
    };
}

contract_suite!(local_exec, local());
contract_suite!(session, session());
