//! The note that explains a sandbox denial, so that the model (and the
//! user) can act without strace: which path, that the network is off or
//! limited to allowed domains, where writing is allowed, and which setting
//! a user would change.
//!
//! Pure text work on the retained output of a failed command; the caller
//! only asks when the command failed and a sandbox is in force.

use std::path::{Path, PathBuf};

use crate::environment::SandboxInfo;

/// Messages of a refused write, as programs print `EACCES`, `EROFS` and
/// `EPERM`.
const WRITE_DENIALS: &[&str] = &[
    "permission denied",
    "read-only file system",
    "operation not permitted",
    "eacces",
    "erofs",
];

/// Messages of an unreachable network, resolver failures included.
const NETWORK_FAILURES: &[&str] = &[
    "network is unreachable",
    "connection refused",
    "could not resolve host",
    "couldn't resolve host",
    "temporary failure in name resolution",
    "name or service not known",
    "no address associated with hostname",
    "failed to lookup address",
    "could not resolve",
    "getaddrinfo",
    "enetunreach",
    "econnrefused",
    "eai_again",
    "couldn't connect to server",
    "failed to connect",
];

/// How clients report that the sandbox's proxy refused them (`curl`,
/// git and cargo through libcurl, pip through urllib3, SOCKS clients).
const PROXY_REFUSALS: &[&str] = &[
    "connect tunnel failed",
    "tunnel connection failed",
    "from proxy after connect",
    "proxyerror",
    "proxy error",
    "bashtool's proxy refused",
    "bashtool's sandbox proxy",
    "connection not allowed by ruleset",
    "can't complete socks5 connection",
    "unable to connect to proxy",
];

/// Domains the allow-list note names at most.
const NAMED_DOMAINS: usize = 8;

/// One note for the first denial in `output_lines` that the sandbox
/// explains, `None` when nothing in the output points at it.
pub fn explain_denial(output_lines: &[&str], info: &SandboxInfo) -> Option<String> {
    for line in output_lines {
        let lower = line.to_lowercase();
        let network_failure = NETWORK_FAILURES.iter().any(|text| lower.contains(text));
        if info.network == "off" && network_failure {
            return Some(network_note());
        }
        if info.network == "allowlist"
            && (network_failure || PROXY_REFUSALS.iter().any(|text| lower.contains(text)))
        {
            return Some(allowlist_note(info));
        }
        if WRITE_DENIALS.iter().any(|text| lower.contains(text))
            && let Some(path) = denied_path(line)
        {
            let read_only_mount =
                lower.contains("read-only file system") || lower.contains("erofs");
            if let Some(note) = write_note(&path, read_only_mount, info) {
                return Some(note);
            }
        }
    }
    None
}

fn network_note() -> String {
    "sandbox: the network is off, so nothing outside the sandbox is reachable \
     (servers the commands start on 127.0.0.1 or ::1 are); a user who wants the command \
     to reach the network runs bashtool with `--network on` (TOML: [sandbox] network = \"on\")"
        .to_owned()
}

fn allowlist_note(info: &SandboxInfo) -> String {
    let mut domains = info
        .allowed_domains
        .iter()
        .take(NAMED_DOMAINS)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if info.allowed_domains.len() > NAMED_DOMAINS {
        domains.push_str(&format!(
            " and {} more",
            info.allowed_domains.len() - NAMED_DOMAINS
        ));
    }
    format!(
        "sandbox: the network reaches only the allowed domains ({domains}), through bashtool's \
         proxy (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at it); other hosts, addresses, \
         direct connections and DNS lookups fail (servers the commands start on 127.0.0.1 or \
         ::1 are reachable); a user who wants the command to reach another domain runs \
         bashtool with `--allow-domain DOMAIN` (TOML: [sandbox] allowed_domains = [\"DOMAIN\"])"
    )
}

fn roots_text(info: &SandboxInfo) -> String {
    if info.writable.is_empty() {
        return "nothing".to_owned();
    }
    info.writable
        .iter()
        .map(|root| root.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Paths the sandbox keeps read-only inside writable roots.
fn is_protected(path: &Path) -> bool {
    let text = path.to_string_lossy();
    text.contains("/.git/hooks") || text.ends_with("/.git/config") || text.ends_with("/.git/hooks")
}

fn write_note(path: &Path, read_only_mount: bool, info: &SandboxInfo) -> Option<String> {
    let inside = info.writable.iter().any(|root| path.starts_with(root));
    if inside {
        // Inside a writable root, only the protected paths are the
        // sandbox's doing; anything else is ordinary file permissions.
        return (is_protected(path) || read_only_mount).then(|| {
            format!(
                "sandbox: `{}` is protected: git hooks and config and bashtool's own state stay \
                 read-only even inside the writable roots, and no setting makes them writable \
                 short of `--sandbox off`",
                path.display()
            )
        });
    }
    Some(format!(
        "sandbox ({}): writing `{}` was refused because it is outside the writable roots ({}); \
         write inside them (temporary files in /tmp), or a user adds the directory with \
         `--writable DIR` (TOML: [sandbox] writable = [\"DIR\"]) or changes `--sandbox`",
        info.mode,
        path.display(),
        roots_text(info)
    ))
}

/// The absolute path an error line names: a quoted one first (`'/x'`,
/// `‘/x’`, `"/x"`, `` `/x` ``), else a `: `-separated field (`bash: /x:
/// Permission denied`), else a word.
fn denied_path(line: &str) -> Option<PathBuf> {
    for (open, close) in [
        ('\'', '\''),
        ('‘', '’'),
        ('"', '"'),
        ('`', '`'),
        ('`', '\''),
    ] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else {
                break;
            };
            let candidate = &after[..end];
            if candidate.starts_with('/') {
                return Some(PathBuf::from(candidate));
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    if let Some(field) = line
        .split(": ")
        .map(str::trim)
        .find(|field| field.starts_with('/') && !field.contains(' '))
    {
        return Some(PathBuf::from(field));
    }
    line.split_whitespace()
        .map(|word| word.trim_matches(|character: char| ",;:()[]".contains(character)))
        .find(|word| word.starts_with('/') && word.len() > 1)
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(network: &str) -> SandboxInfo {
        SandboxInfo {
            mode: "workspace-write".to_owned(),
            network: network.to_owned(),
            writable: vec![PathBuf::from("/home/me/project"), PathBuf::from("/tmp")],
            allowed_domains: if network == "allowlist" {
                vec!["pypi.org".to_owned(), "*.example.com".to_owned()]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn names_a_refused_path_outside_the_roots() {
        let note = explain_denial(
            &["building...", "bash: /etc/hosts: Permission denied"],
            &info("on"),
        );
        assert_eq!(
            note.as_deref(),
            Some(
                "sandbox (workspace-write): writing `/etc/hosts` was refused because it is outside \
                 the writable roots (/home/me/project, /tmp); write inside them (temporary files in \
                 /tmp), or a user adds the directory with `--writable DIR` (TOML: [sandbox] \
                 writable = [\"DIR\"]) or changes `--sandbox`"
            )
        );
    }

    #[test]
    fn finds_paths_in_the_usual_error_formats() {
        for (line, path) in [
            ("touch: cannot touch '/etc/x': Permission denied", "/etc/x"),
            (
                "mkdir: cannot create directory ‘/opt/y’: Permission denied",
                "/opt/y",
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/usr/lib/z'",
                "/usr/lib/z",
            ),
            (
                "npm ERR! Error: EACCES: permission denied, mkdir '/usr/lib/node_modules'",
                "/usr/lib/node_modules",
            ),
            (
                "error: failed to open: /root/.cargo/bin/x (os error 13) Permission denied",
                "/root/.cargo/bin/x",
            ),
        ] {
            assert_eq!(denied_path(line), Some(PathBuf::from(path)), "{line}");
        }
    }

    #[test]
    fn calls_git_hooks_protected_inside_the_workspace() {
        let note = explain_denial(
            &["bash: /home/me/project/.git/hooks/pre-commit: Read-only file system"],
            &info("on"),
        )
        .expect("a note");
        assert!(
            note.starts_with("sandbox: `/home/me/project/.git/hooks/pre-commit` is protected"),
            "{note}"
        );
    }

    #[test]
    fn leaves_ordinary_permission_errors_inside_the_roots_alone() {
        assert_eq!(
            explain_denial(
                &["cat: /home/me/project/secret: Permission denied"],
                &info("off")
            ),
            None
        );
        assert_eq!(explain_denial(&["everything is fine"], &info("off")), None);
    }

    #[test]
    fn explains_network_failures_only_when_the_network_is_off() {
        let lines = ["curl: (6) Could not resolve host: example.com"];
        assert_eq!(explain_denial(&lines, &info("on")), None);
        let note = explain_denial(&lines, &info("off")).expect("a note");
        assert!(note.starts_with("sandbox: the network is off"), "{note}");
        assert!(note.contains("--network on"));
        assert!(explain_denial(&["connect: Network is unreachable"], &info("off")).is_some());
    }

    #[test]
    fn explains_refused_connections_when_the_network_is_an_allow_list() {
        let expected = "sandbox: the network reaches only the allowed domains (pypi.org, \
                        *.example.com), through bashtool's proxy (HTTP_PROXY, HTTPS_PROXY and \
                        ALL_PROXY point at it); other hosts, addresses, direct connections and \
                        DNS lookups fail (servers the commands start on 127.0.0.1 or ::1 are \
                        reachable); a user who wants the command to reach another domain runs \
                        bashtool with `--allow-domain DOMAIN` (TOML: [sandbox] allowed_domains = \
                        [\"DOMAIN\"])";
        for line in [
            "curl: (56) CONNECT tunnel failed, response 403",
            "curl: (6) Could not resolve host: example.org",
            "curl: (7) Failed to connect to 127.0.0.1 port 8000 after 0 ms: Couldn't connect to server",
            "fatal: unable to access 'https://github.com/x/y/': CONNECT tunnel failed, response 403",
            "ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden'))",
            "curl: (97) Can't complete SOCKS5 connection to 127.0.0.1. (2)",
            "bash: connect: Network is unreachable",
        ] {
            assert_eq!(
                explain_denial(&[line], &info("allowlist")).as_deref(),
                Some(expected),
                "{line}"
            );
        }
        assert_eq!(
            explain_denial(&["CONNECT tunnel failed"], &info("on")),
            None
        );
        assert_eq!(explain_denial(&["all good"], &info("allowlist")), None);
    }
}
