//! What an environment tells the tool about itself.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The sandbox an environment enforces, as the model is told about it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SandboxInfo {
    /// `read-only` or `workspace-write` (`off` is reported as no sandbox).
    pub mode: String,
    /// `on`, `off`, or `allowlist` (only `allowed_domains`, through a
    /// proxy).
    pub network: String,
    /// The roots a command may write to.
    pub writable: Vec<PathBuf>,
    /// With the network `allowlist`: the domains commands may reach
    /// (`example.com`, `*.example.com` for its subdomains, addresses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
}

/// What an environment says about itself: where commands run, what
/// contains them, what tools it has. The spec's description and each
/// result's details are built from it, so the model is told what is real.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EnvironmentInfo {
    /// Where commands run: `local`, `remote: ssh devbox`, `mock`.
    pub name: String,
    /// The sandbox in force; `None` when commands run unconfined.
    pub sandbox: Option<SandboxInfo>,
    /// Programs worth recommending that exist there (`rg`, `fd`).
    pub tools: Vec<String>,
    /// The resource limits each command runs under (`None`: the
    /// environment does not say).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limits: Option<crate::limits::LimitsInfo>,
}
