//! The server's `instructions` (sent with `initialize`): what the model
//! should know before its first call, built from what the environment says
//! of itself, so that it is never told about a sandbox or a shell that is
//! not there.

use bashtool_core::EnvironmentInfo;

const BASE: &str = "Run shell commands with the bash tool: output comes back shortened so \
    that errors stay visible, commands never hang, and their whole process tree is stopped on \
    timeout or cancel. Start servers and watchers with mode \"background\" and manage them with \
    bash_jobs.";

/// The instructions for a server whose commands run in `environment`.
/// `persistent`: one shell keeps its state between calls; `interactive`:
/// `mode: "interactive"` is offered.
pub fn instructions(environment: &EnvironmentInfo, persistent: bool, interactive: bool) -> String {
    let mut text = String::from(BASE);
    text.push_str("\nEnvironment: ");
    if environment.name == "local" {
        text.push_str("local (commands run on the machine of this server).");
    } else {
        text.push_str(&format!(
            "{} (commands run there, not on the machine of this server).",
            environment.name
        ));
    }
    text.push_str("\nSandbox: ");
    match &environment.sandbox {
        Some(sandbox) => {
            let writable: Vec<String> = sandbox
                .writable
                .iter()
                .map(|path| path.display().to_string())
                .collect();
            let network = if sandbox.network == "allowlist" {
                format!(
                    "network only to {} (through a proxy the usual *_PROXY variables name)",
                    sandbox.allowed_domains.join(", ")
                )
            } else {
                format!("network {}", sandbox.network)
            };
            text.push_str(&format!(
                "{}, {network}; writes outside {} fail with \"Permission denied\".",
                sandbox.mode,
                if writable.is_empty() {
                    "the temp space".to_owned()
                } else {
                    writable.join(", ")
                }
            ));
        }
        None => text.push_str("off (commands run with the full rights of the user)."),
    }
    if let Some(line) = environment.limits.as_ref().and_then(limits_line) {
        text.push_str("\nLimits: ");
        text.push_str(&line);
    }
    text.push_str(if persistent {
        "\nSession: one persistent shell; the working directory, exported variables, functions \
         and aliases carry over between calls."
    } else {
        "\nSession: none; each call runs in a fresh shell and nothing carries over."
    });
    if interactive {
        text.push_str(
            "\nInteractive: programs that prompt (REPLs, installers, TUIs) run with mode \
             \"interactive\" in a terminal; answer them with bash_jobs write.",
        );
    }
    text
}

/// What each command may use, when something limits it.
fn limits_line(limits: &bashtool_core::LimitsInfo) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(pids) = limits.pids {
        parts.push(format!("{pids} processes"));
    }
    if let Some(memory) = limits.memory {
        parts.push(format!("{} of memory", bashtool_core::format_size(memory)));
    }
    if let Some(cpu) = limits.cpu {
        let unit = if cpu.millis() == 1000 { "CPU" } else { "CPUs" };
        parts.push(format!("{cpu} {unit}"));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "each command may use at most {}; a command past a limit is stopped or slowed, and its result says which.",
        parts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use bashtool_core::SandboxInfo;

    use super::*;

    #[test]
    fn names_a_remote_environment_its_sandbox_and_a_fresh_shell() {
        let environment = EnvironmentInfo {
            name: "remote: ssh devbox bashtool serve".to_owned(),
            sandbox: Some(SandboxInfo {
                mode: "workspace-write".to_owned(),
                network: "off".to_owned(),
                writable: vec!["/work".into(), "/tmp".into()],
                allowed_domains: Vec::new(),
            }),
            tools: Vec::new(),
            limits: Some(bashtool_core::LimitsInfo {
                pids: Some(4096),
                memory: Some(2 << 30),
                ..bashtool_core::LimitsInfo::default()
            }),
        };
        let text = instructions(&environment, false, false);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "Environment: remote: ssh devbox bashtool serve (commands run there, not on the machine of this server).",
                "Sandbox: workspace-write, network off; writes outside /work, /tmp fail with \"Permission denied\".",
                "Limits: each command may use at most 4096 processes, 2 GiB of memory; a command past a limit is stopped or slowed, and its result says which.",
                "Session: none; each call runs in a fresh shell and nothing carries over.",
            ]
        );
    }

    #[test]
    fn names_the_allowed_domains() {
        let environment = EnvironmentInfo {
            name: "local".to_owned(),
            sandbox: Some(SandboxInfo {
                mode: "workspace-write".to_owned(),
                network: "allowlist".to_owned(),
                writable: vec!["/work".into()],
                allowed_domains: vec!["pypi.org".to_owned(), "*.example.com".to_owned()],
            }),
            tools: Vec::new(),
            limits: None,
        };
        let text = instructions(&environment, true, false);
        assert!(
            text.contains(
                "\nSandbox: workspace-write, network only to pypi.org, *.example.com (through a \
                 proxy the usual *_PROXY variables name); writes outside /work fail"
            ),
            "{text}"
        );
    }
}
