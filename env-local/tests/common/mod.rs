//! What the interactive test binaries share: starting a job the way
//! `LocalExec` does, in `/tmp`, with the default configuration.

use std::collections::BTreeMap;
use std::path::Path;

use bashtool_env_local::{InteractiveJob, InteractiveOptions, LocalConfig, interactive_launch};
use bashtool_process::RunMarker;

/// Starts `command` in a terminal with the call's variables `env`.
pub fn start_job(
    command: &str,
    env: &[(&str, &str)],
    options: InteractiveOptions,
) -> InteractiveJob {
    let marker = RunMarker::new();
    let call_env: BTreeMap<String, String> = env
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    let launch = interactive_launch(
        &LocalConfig::default(),
        command,
        Path::new("/tmp"),
        &call_env,
        &marker,
    );
    InteractiveJob::start(launch, &[], marker, options).expect("job starts")
}
