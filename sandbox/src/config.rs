//! What the user asks of the sandbox: a mode, extra writable roots, the
//! network (on, off, or the allowed domains only). Plain data with serde names shared by the CLI flags, the TOML
//! file and the library.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::domains::AllowList;
use crate::error::Error;

/// How much a command may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox: commands run with the caller's rights.
    Off,
    /// Reads anywhere; writes only to the temp space and `/dev/null`-like
    /// devices.
    ReadOnly,
    /// Reads anywhere; writes to the workspace, the temp space, the package
    /// caches and the configured roots. The default.
    #[default]
    WorkspaceWrite,
}

/// Whether a command reaches the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// The host's network, as without a sandbox. The default.
    #[default]
    On,
    /// Only a private loopback: nothing outside the sandbox is reachable
    /// over TCP or UDP (IPv4 or IPv6), the host's loopback services
    /// included; servers the commands start are.
    Off,
}

/// The sandbox settings: a mode, extra writable roots, the network.
///
/// ```
/// use bashtool_sandbox::{NetworkMode, SandboxConfig, SandboxMode};
/// let config = SandboxConfig { network: NetworkMode::Off, ..SandboxConfig::default() };
/// assert_eq!(config.mode, SandboxMode::WorkspaceWrite);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// What commands may write.
    pub mode: SandboxMode,
    /// Roots writable in `workspace-write` mode besides the workspace, the
    /// temp space and the caches. Absolute, existing directories or files.
    pub writable: Vec<PathBuf>,
    /// Whether commands reach the network.
    pub network: NetworkMode,
    /// Paths kept read-only even inside a writable root, besides the
    /// workspace's `.git/hooks`, `.git/config` and bashtool's state.
    pub protected: Vec<PathBuf>,
    /// When not empty, commands reach these domains only, through a proxy
    /// outside the sandbox (`example.com`, `*.example.com`, an IP address,
    /// or `registries`); `network` must then be `on` (the default). See
    /// `docs/sandbox.md`.
    pub allowed_domains: Vec<String>,
}

/// What the network of a sandbox is, settings combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// The host's network.
    On,
    /// Only a private loopback.
    Off,
    /// A private loopback and the proxy to the allowed domains.
    Allowlist,
}

impl Network {
    /// The name reports use: `on`, `off`, `allowlist`.
    pub fn name(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
            Self::Allowlist => "allowlist",
        }
    }
}

impl SandboxConfig {
    /// This configuration as what an environment confines its commands
    /// with: `None` when the mode is `off`.
    #[cfg(target_os = "linux")]
    pub fn confinement(&self) -> Option<std::sync::Arc<dyn bashtool_process::Confinement>> {
        (self.mode != SandboxMode::Off).then(|| {
            std::sync::Arc::new(self.clone()) as std::sync::Arc<dyn bashtool_process::Confinement>
        })
    }

    /// The configuration without a sandbox.
    pub fn off() -> Self {
        Self {
            mode: SandboxMode::Off,
            ..Self::default()
        }
    }

    /// The network, the allowed domains taken into account.
    pub fn effective_network(&self) -> Network {
        match self.network {
            NetworkMode::Off => Network::Off,
            NetworkMode::On if self.allowed_domains.is_empty() => Network::On,
            NetworkMode::On => Network::Allowlist,
        }
    }

    /// The allowed domains, parsed and the preset expanded (empty when
    /// the network is not limited to them).
    pub fn allow_list(&self) -> Result<AllowList, Error> {
        AllowList::parse(&self.allowed_domains)
    }

    /// Checks the paths: absolute, existing, not `/` (a writable `/` is no
    /// sandbox: say `--sandbox off` instead); and the allowed domains:
    /// each a valid entry, with a sandbox and a network to limit.
    pub fn validate(&self) -> Result<(), Error> {
        self.allow_list()?;
        if !self.allowed_domains.is_empty() {
            if self.network == NetworkMode::Off {
                return Err(Error::Setting {
                    setting: "allowed_domains",
                    message: "the network is off, which reaches nothing at all; allowed domains \
                              need `--network on` (the default): drop `--network off` \
                              (network = \"off\") or the allowed domains"
                        .to_owned(),
                });
            }
            if self.mode == SandboxMode::Off {
                return Err(Error::Setting {
                    setting: "allowed_domains",
                    message: "allowed domains are enforced by the sandbox, and `--sandbox off` \
                              (mode = \"off\") runs without one; choose workspace-write or \
                              read-only, or drop the allowed domains"
                        .to_owned(),
                });
            }
        }
        for path in &self.writable {
            check_path("writable", path)?;
            if path == Path::new("/") {
                return Err(Error::Setting {
                    setting: "writable",
                    message: "`/` makes everything writable; use `--sandbox off` (mode = \"off\") to run without a sandbox".to_owned(),
                });
            }
        }
        for path in &self.protected {
            if !path.is_absolute() {
                return Err(Error::Setting {
                    setting: "protected",
                    message: format!("`{}` is not an absolute path", path.display()),
                });
            }
        }
        Ok(())
    }
}

fn check_path(setting: &'static str, path: &Path) -> Result<(), Error> {
    if !path.is_absolute() {
        return Err(Error::Setting {
            setting,
            message: format!(
                "`{}` is not an absolute path; give the full path",
                path.display()
            ),
        });
    }
    if !path.exists() {
        return Err(Error::Setting {
            setting,
            message: format!(
                "`{}` does not exist; create it first or remove it from the list",
                path.display()
            ),
        });
    }
    Ok(())
}

impl SandboxMode {
    /// The name settings and reports use (`workspace-write`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
        }
    }
}

impl NetworkMode {
    /// The name settings and reports use (`on`, `off`).
    pub fn name(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl fmt::Display for NetworkMode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for SandboxMode {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "off" => Ok(Self::Off),
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            _ => Err(Error::Setting {
                setting: "sandbox",
                message: format!("`{text}` is not a mode; use off, read-only or workspace-write"),
            }),
        }
    }
}

impl FromStr for NetworkMode {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            _ => Err(Error::Setting {
                setting: "network",
                message: format!("`{text}` is not a network setting; use on or off"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_workspace_write_with_network() {
        let config = SandboxConfig::default();
        assert_eq!(config.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(config.network, NetworkMode::On);
        assert!(config.writable.is_empty());
        assert_eq!(config.effective_network(), Network::On);
    }

    #[test]
    fn allowed_domains_limit_the_network_and_need_a_sandbox_and_a_network() {
        let config: SandboxConfig =
            serde_json::from_str(r#"{"allowed_domains": ["registries", "example.com"]}"#)
                .expect("valid");
        config.validate().expect("valid");
        assert_eq!(config.effective_network(), Network::Allowlist);
        assert_eq!(config.effective_network().name(), "allowlist");
        let off = SandboxConfig {
            network: NetworkMode::Off,
            ..config.clone()
        };
        assert!(
            off.validate()
                .expect_err("off")
                .to_string()
                .starts_with("sandbox setting `allowed_domains`: the network is off"),
        );
        let unsandboxed = SandboxConfig {
            mode: SandboxMode::Off,
            ..config.clone()
        };
        assert!(
            unsandboxed
                .validate()
                .expect_err("no sandbox")
                .to_string()
                .contains("`--sandbox off` (mode = \"off\") runs without one")
        );
        let bad = SandboxConfig {
            allowed_domains: vec!["example.com:443".to_owned()],
            ..SandboxConfig::default()
        };
        assert!(
            bad.validate()
                .expect_err("port")
                .to_string()
                .contains("`example.com:443` is not an allowed domain: it has a port")
        );
    }

    #[test]
    fn parses_the_serde_names() {
        let config: SandboxConfig = serde_json::from_str(
            r#"{"mode": "read-only", "writable": ["/tmp"], "network": "off"}"#,
        )
        .expect("valid");
        assert_eq!(config.mode, SandboxMode::ReadOnly);
        assert_eq!(config.network, NetworkMode::Off);
        assert_eq!(config.writable, [PathBuf::from("/tmp")]);
        let error = serde_json::from_str::<SandboxConfig>(r#"{"mode": "strict"}"#)
            .expect_err("unknown mode");
        assert!(
            error.to_string().contains("unknown variant `strict`"),
            "{error}"
        );
    }

    #[test]
    fn names_round_trip_through_from_str() {
        for mode in [
            SandboxMode::Off,
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
        ] {
            assert_eq!(mode.name().parse::<SandboxMode>().expect("valid"), mode);
        }
        let error = "ro".parse::<SandboxMode>().expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "sandbox setting `sandbox`: `ro` is not a mode; use off, read-only or workspace-write"
        );
        assert_eq!(
            "off".parse::<NetworkMode>().expect("valid"),
            NetworkMode::Off
        );
    }

    #[test]
    fn refuses_relative_missing_and_root_writable_paths() {
        let relative = SandboxConfig {
            writable: vec![PathBuf::from("build")],
            ..SandboxConfig::default()
        };
        assert_eq!(
            relative.validate().expect_err("relative").to_string(),
            "sandbox setting `writable`: `build` is not an absolute path; give the full path"
        );
        let missing = SandboxConfig {
            writable: vec![PathBuf::from("/no/such/dir")],
            ..SandboxConfig::default()
        };
        assert!(
            missing
                .validate()
                .expect_err("missing")
                .to_string()
                .contains("does not exist")
        );
        let root = SandboxConfig {
            writable: vec![PathBuf::from("/")],
            ..SandboxConfig::default()
        };
        assert!(
            root.validate()
                .expect_err("root")
                .to_string()
                .contains("--sandbox off")
        );
    }
}
