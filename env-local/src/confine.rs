//! The environment's sandbox: made from [`LocalConfig::confinement`] for
//! this environment (and for each session, with the session's directory in
//! it), with bashtool's own state hidden from commands and the logs shown.

use std::path::PathBuf;
use std::sync::Arc;

use bashtool_core::SandboxInfo;
use bashtool_process::{RealmRequest, Wrapper};

use crate::config::LocalConfig;

/// The realm `config` asks for, in its terms: the workspace, bashtool's own
/// state hidden (the state directory, the job records), the log directory
/// (the model reads its logs) and the editors' stand-ins shown read-only,
/// and `private` (a session's own directory) visible to it alone.
fn with_request<R>(
    config: &LocalConfig,
    private: &[PathBuf],
    use_request: impl FnOnce(&RealmRequest<'_>) -> R,
) -> R {
    let state_dir = crate::default_state_dir().ok();
    let hidden: Vec<PathBuf> = state_dir
        .iter()
        .cloned()
        .chain(config.job_records.iter().cloned())
        .collect();
    // A log directory that cannot be made is not written to either (calls
    // run without logs): nothing to show then.
    let mut shown: Vec<PathBuf> = config
        .effective_log_dir()
        .ok()
        .filter(|dir| crate::state_dir::ensure_private_dir(dir).is_ok())
        .into_iter()
        .collect();
    shown.extend(
        state_dir
            .iter()
            .map(|dir| dir.join(crate::editor_guards::DIRECTORY_NAME)),
    );
    use_request(&RealmRequest {
        workspace: &config.working_directory,
        hidden: &hidden,
        shown: &shown,
        private,
        kept: config.keep_jobs_on_drop,
    })
}

/// The sandbox of `config`, if it asks for one.
fn sandbox_for(
    config: &LocalConfig,
    private: &[PathBuf],
) -> Result<Option<Arc<dyn Wrapper>>, bashtool_process::Error> {
    let Some(confinement) = &config.confinement else {
        return Ok(None);
    };
    with_request(config, private, |request| confinement.confine(request)).map(Some)
}

/// What the sandbox of `config` would be, for a person (`bashtool
/// sandbox`): `Ok(None)` without one, an error when it cannot be enforced.
pub fn describe_sandbox(config: &LocalConfig) -> Result<Option<String>, String> {
    let Some(confinement) = &config.confinement else {
        return Ok(None);
    };
    with_request(config, &[], |request| confinement.describe(request))
        .map(Some)
        .map_err(|error| error.to_string())
}

/// `config` with its sandbox made and put last among the wrappers (its
/// seccomp filter, installed last, refuses calls other steps make), what it
/// is, or why it cannot be had.
pub(crate) fn with_sandbox(
    mut config: LocalConfig,
    private: &[PathBuf],
) -> (LocalConfig, Option<SandboxInfo>, Option<String>) {
    match sandbox_for(&config, private) {
        Ok(Some(sandbox)) => {
            let info = sandbox_info(&config);
            config.wrappers.push(sandbox);
            (config, info, None)
        }
        Ok(None) => (config, None, None),
        Err(error) => (config, None, Some(error.to_string())),
    }
}

/// What the sandbox of `config` is, without making it (for descriptions
/// built before the environment): `None` without one.
pub fn sandbox_info(config: &LocalConfig) -> Option<SandboxInfo> {
    let summary = config
        .confinement
        .as_ref()?
        .summary(&config.working_directory);
    Some(SandboxInfo {
        mode: summary.mode,
        network: summary.network,
        writable: summary.writable,
        allowed_domains: summary.allowed_domains,
    })
}
