//! The note that explains a sandbox denial, so that the model (and the
//! user) can act without strace: which path, that the network is off or
//! limited to allowed domains, where writing is allowed, and which setting
//! a user would change.
//!
//! Pure text work on the retained output of a failed command; the caller
//! only asks when the command failed and a sandbox is in force.

use std::path::{Path, PathBuf};

use crate::environment::SandboxInfo;

/// Messages of a refused write, as programs print `EACCES`, `EROFS`,
/// `EPERM` and `EBUSY` (a protected mount point moved or removed).
const WRITE_DENIALS: &[&str] = &[
    "permission denied",
    "read-only file system",
    "operation not permitted",
    "device or resource busy",
    "eacces",
    "erofs",
    "ebusy",
];

/// Messages that only a mount can cause inside a writable root: a
/// read-only bind (`EROFS`) or a mount point that cannot be moved or
/// removed (`EBUSY`).
const MOUNT_DENIALS: &[&str] = &[
    "read-only file system",
    "erofs",
    "device or resource busy",
    "ebusy",
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
    "couldn't resolve",
    "unable to resolve host",
    "temporary failure resolving",
    "failed to resolve",
    "name does not resolve",
    "no such host",
    "nodename nor servname",
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

fn is_proxy_refusal(lower: &str) -> bool {
    PROXY_REFUSALS.iter().any(|text| lower.contains(text))
}

/// Domains the allow-list note names at most.
const NAMED_DOMAINS: usize = 8;

/// One note for the first denial in `output_lines` that the sandbox
/// explains, `None` when nothing in the output points at it. Only
/// absolute paths are understood; [`explain_denial_at`] also reads the
/// relative ones.
pub fn explain_denial(output_lines: &[&str], info: &SandboxInfo) -> Option<String> {
    explain_denial_at(output_lines, info, None)
}

/// [`explain_denial`] for a command that ran in `cwd`: a relative path in
/// a message (`rm: cannot remove '.git': Device or resource busy`) is
/// taken from there.
pub fn explain_denial_at(
    output_lines: &[&str],
    info: &SandboxInfo,
    cwd: Option<&Path>,
) -> Option<String> {
    for line in output_lines {
        let lower = line.to_lowercase();
        let network_failure = NETWORK_FAILURES.iter().any(|text| lower.contains(text));
        if info.network == "off" && network_failure {
            return Some(network_note());
        }
        if info.network == "allowlist" && (network_failure || is_proxy_refusal(&lower)) {
            // The host may be named on a later line of the same failure
            // (`connect: Network is unreachable`, then the path).
            let host = output_lines.iter().find_map(|line| {
                let lower = line.to_lowercase();
                let failure = NETWORK_FAILURES.iter().any(|text| lower.contains(text))
                    || is_proxy_refusal(&lower);
                failure.then(|| named_host(line)).flatten()
            });
            return Some(allowlist_note(info, host.as_deref()));
        }
        if WRITE_DENIALS.iter().any(|text| lower.contains(text))
            && let Some(path) = denied_path(line, cwd)
        {
            let mount = MOUNT_DENIALS.iter().any(|text| lower.contains(text));
            if let Some(note) = write_note(&normalized(&path), mount, info) {
                return Some(note);
            }
        }
    }
    None
}

/// `path` without `.` components, and with each `..` taking away the
/// component before it (as the kernel would, barring symlinks).
fn normalized(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

fn network_note() -> String {
    "sandbox: the network is off, so nothing outside the sandbox is reachable \
     (servers the commands start on 127.0.0.1 or ::1 are); a user who wants the command \
     to reach the network runs bashtool with `--network on` (TOML: [sandbox] network = \"on\")"
        .to_owned()
}

fn allowlist_note(info: &SandboxInfo, host: Option<&str>) -> String {
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
    let network = format!(
        "sandbox: the network reaches only the allowed domains ({domains}), through bashtool's \
         proxy (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at it); other hosts, addresses, \
         direct connections and DNS lookups fail (servers the commands start on 127.0.0.1 or \
         ::1 are reachable)"
    );
    match host {
        Some(host) if is_allowed(host, &info.allowed_domains) => format!(
            "{network}; `{host}` is allowed, but only through the proxy: the command went \
             around it (`--noproxy`, `NO_PROXY`, a raw socket or a tool that ignores the proxy \
             variables); use the proxy at http://127.0.0.1:3128 (or socks5h://127.0.0.1:3128)"
        ),
        Some(host) => format!(
            "{network}; a user who wants the command to reach `{host}` through the proxy runs \
             bashtool with `--allow-domain {host}` (TOML: [sandbox] allowed_domains = \
             [\"{host}\"])"
        ),
        None => format!(
            "{network}; a user who wants the command to reach another domain runs bashtool \
             with `--allow-domain DOMAIN` (TOML: [sandbox] allowed_domains = [\"DOMAIN\"])"
        ),
    }
}

/// The host a network error line names, as curl (`Failed to connect to
/// HOST port`, `Could not resolve host: HOST`, `SOCKS5 connection to
/// HOST.`), bash (`/dev/tcp/HOST/PORT`) and tools that print the URL
/// (`unable to access 'https://HOST/…'`) say it; `None` when none does.
fn named_host(line: &str) -> Option<String> {
    let lower = line.to_lowercase();
    let after = |marker: &str| {
        lower
            .find(marker)
            .map(|start| &line[start + marker.len()..])
    };
    let candidates = [
        // Python's urllib3: `HTTPSConnectionPool(host='pypi.org', port=443)`.
        after("host='").and_then(|rest| rest.split('\'').next()),
        after("failed to connect to ").and_then(|rest| rest.split(" port ").next()),
        after("could not resolve host: "),
        after("socks5 connection to "),
        after("/dev/tcp/")
            .or_else(|| after("/dev/udp/"))
            .and_then(|rest| rest.split('/').next()),
        lower.find("://").map(|start| url_host(&line[start + 3..])),
    ];
    candidates.into_iter().flatten().find_map(|candidate| {
        let candidate = match candidate.find("://") {
            Some(start) => url_host(&candidate[start + 3..]),
            None => candidate,
        };
        plausible_host(candidate)
    })
}

/// The host of what follows a URL's `://`: no user, no port, no path.
fn url_host(rest: &str) -> &str {
    let authority = rest
        .split(|character: char| "/?#'\"` \t".contains(character))
        .next()
        .unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    if authority.starts_with('[') {
        authority.split_inclusive(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    }
}

/// `candidate`'s first word as a host name or address, lowercase and
/// without the punctuation around it; `None` when it cannot be one.
fn plausible_host(candidate: &str) -> Option<String> {
    let host = candidate
        .split_whitespace()
        .next()?
        .trim_end_matches(['.', ',', ';', ':', ')', '\'', '"'])
        .trim_start_matches(['(', '\'', '"'])
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_lowercase();
    let plausible = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "-._:".contains(character))
        && host
            .chars()
            .any(|character| character.is_ascii_alphanumeric());
    plausible.then_some(host)
}

/// Whether `allowed` lets `host` through the proxy: the same name or
/// address, or a `*.` entry it is a subdomain of.
fn is_allowed(host: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|entry| {
        let entry = entry
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_lowercase();
        match entry.strip_prefix("*.") {
            Some(parent) => host
                .strip_suffix(parent)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            None => entry == host,
        }
    })
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

/// Files of a git directory the sandbox keeps read-only (see the sandbox
/// crate's `git.rs`).
const GIT_CONTROL_FILES: &[&str] = &["config", "config.worktree", "commondir"];

/// Paths the sandbox keeps read-only (or in place) inside writable roots:
/// a `.git` (directory or file) itself, its hooks and control files, and
/// those of the git directories under its `worktrees/` and `modules/`.
fn is_protected(path: &Path) -> bool {
    let names: Vec<&str> = path
        .components()
        .filter_map(|component| match component {
            std::path::Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    let Some(git) = names.iter().position(|name| *name == ".git") else {
        return false;
    };
    let inside = &names[git + 1..];
    match inside {
        [] | ["hooks", ..] => true,
        [name] => GIT_CONTROL_FILES.contains(name),
        ["worktrees" | "modules", .., last] => {
            GIT_CONTROL_FILES.contains(last) || inside.contains(&"hooks")
        }
        _ => false,
    }
}

fn write_note(path: &Path, mount: bool, info: &SandboxInfo) -> Option<String> {
    let inside = info.writable.iter().any(|root| path.starts_with(root));
    if inside {
        // Inside a writable root, only the protected paths are the
        // sandbox's doing; anything else is ordinary file permissions.
        return (is_protected(path) || mount).then(|| {
            format!(
                "sandbox: `{}` is protected: the workspace and its .git cannot be moved or \
                 removed, and git's hooks and control files (config, config.worktree, commondir) \
                 and bashtool's own state stay read-only, even inside the writable roots; no \
                 setting makes them writable short of `--sandbox off`",
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

/// The path an error line names: an absolute one, quoted first (`'/x'`,
/// `‘/x’`, `"/x"`, `` `/x` ``), else a `: `-separated field (`bash: /x:
/// Permission denied`), else a word; with `cwd`, else a relative one,
/// quoted or a field (the program's name and the message left out), taken
/// from `cwd`.
fn denied_path(line: &str, cwd: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = absolute_path(line) {
        return Some(path);
    }
    let cwd = cwd?;
    if let Some(quoted) = quoted_candidates(line)
        .into_iter()
        .find(|candidate| !candidate.is_empty())
    {
        return Some(cwd.join(quoted));
    }
    let fields: Vec<&str> = line.split(": ").map(str::trim).collect();
    let middle = fields.get(1..fields.len().saturating_sub(1)).unwrap_or(&[]);
    if let Some(field) = middle
        .iter()
        .find(|field| !field.is_empty() && !field.contains(' '))
    {
        return Some(cwd.join(field));
    }
    // A word with a slash in it (`could not write config file
    // .git/config: ...`).
    line.split_whitespace()
        .map(|word| word.trim_matches(|character: char| ",;:()[]".contains(character)))
        .find(|word| word.contains('/') && !word.contains("://"))
        .map(|word| cwd.join(word))
}

/// What `line` quotes, in order.
fn quoted_candidates(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
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
            found.push(&after[..end]);
            rest = &after[end + close.len_utf8()..];
        }
    }
    found
}

/// The absolute path an error line names (see [`denied_path`]).
fn absolute_path(line: &str) -> Option<PathBuf> {
    if let Some(quoted) = quoted_candidates(line)
        .into_iter()
        .find(|candidate| candidate.starts_with('/'))
    {
        return Some(PathBuf::from(quoted));
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
            assert_eq!(denied_path(line, None), Some(PathBuf::from(path)), "{line}");
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
    fn reads_relative_paths_from_the_working_directory() {
        let cwd = Path::new("/home/me/project");
        for line in [
            "rm: cannot remove '.git': Device or resource busy",
            "mv: cannot move '.git' to 'elsewhere': Device or resource busy",
            "bash: .git/hooks/pre-commit: Read-only file system",
            "touch: cannot touch './.git/config': Read-only file system",
            "rm: cannot remove 'src/../.git/hooks/x.sample': Read-only file system",
            "error: could not write config file .git/config: Device or resource busy",
        ] {
            let note = explain_denial_at(&[line], &info("on"), Some(cwd)).unwrap_or_default();
            assert!(note.contains("` is protected"), "{line}: {note}");
            assert!(note.contains("/home/me/project/.git"), "{line}: {note}");
        }
        // Relative to a directory outside the roots: outside.
        let note = explain_denial_at(
            &["touch: cannot touch 'x': Permission denied"],
            &info("on"),
            Some(Path::new("/etc")),
        )
        .expect("a note");
        assert!(note.contains("writing `/etc/x` was refused"), "{note}");
        // The program's name is not a path.
        assert_eq!(
            explain_denial_at(&["bash: x: Permission denied"], &info("on"), Some(cwd)),
            None
        );
    }

    #[test]
    fn the_workspace_and_its_git_directory_cannot_be_removed() {
        let note = explain_denial(
            &["rm: cannot remove '/home/me/project': Device or resource busy"],
            &info("on"),
        )
        .expect("a note");
        assert!(note.contains("cannot be moved or removed"), "{note}");
        assert!(is_protected(Path::new("/w/.git/worktrees/a/config")));
        assert!(is_protected(Path::new(
            "/w/.git/modules/m/hooks/post-checkout"
        )));
        assert!(is_protected(Path::new("/w/.git/commondir")));
        assert!(!is_protected(Path::new("/w/.git/objects/ab/cd")));
        assert!(!is_protected(Path::new("/w/src/config")));
    }

    #[test]
    fn explains_every_resolver_failure_with_the_network_off() {
        for line in [
            "curl: (6) Could not resolve host: example.com",
            "socket.gaierror: [Errno -3] Temporary failure in name resolution",
            "npm error getaddrinfo EAI_AGAIN registry.npmjs.org",
            "wget: unable to resolve host address 'example.com'",
            "W: Failed to fetch http://deb.debian.org/x  Temporary failure resolving 'deb.debian.org'",
            "ssh: Could not resolve hostname github.com: Name or service not known",
            "dial tcp: lookup proxy.golang.org: no such host",
            "ping: example.com: Name does not resolve",
            "HTTPSConnectionPool: Failed to resolve 'pypi.org' ([Errno -3] Temporary failure)",
        ] {
            assert!(
                explain_denial(&[line], &info("off"))
                    .is_some_and(|note| note.contains("network is off")),
                "{line}"
            );
            assert_eq!(explain_denial(&[line], &info("on")), None, "{line}");
        }
    }

    #[test]
    fn explains_refused_connections_when_the_network_is_an_allow_list() {
        let network = "sandbox: the network reaches only the allowed domains (pypi.org, \
                       *.example.com), through bashtool's proxy (HTTP_PROXY, HTTPS_PROXY and \
                       ALL_PROXY point at it); other hosts, addresses, direct connections and \
                       DNS lookups fail (servers the commands start on 127.0.0.1 or ::1 are \
                       reachable); ";
        let to = |host: &str| {
            format!(
                "{network}a user who wants the command to reach `{host}` through the proxy runs \
                 bashtool with `--allow-domain {host}` (TOML: [sandbox] allowed_domains = \
                 [\"{host}\"])"
            )
        };
        let around = |host: &str| {
            format!(
                "{network}`{host}` is allowed, but only through the proxy: the command went \
                 around it (`--noproxy`, `NO_PROXY`, a raw socket or a tool that ignores the \
                 proxy variables); use the proxy at http://127.0.0.1:3128 (or \
                 socks5h://127.0.0.1:3128)"
            )
        };
        let unnamed = format!(
            "{network}a user who wants the command to reach another domain runs bashtool with \
             `--allow-domain DOMAIN` (TOML: [sandbox] allowed_domains = [\"DOMAIN\"])"
        );
        for (lines, expected) in [
            (
                vec!["curl: (56) CONNECT tunnel failed, response 403"],
                unnamed.clone(),
            ),
            (
                vec!["curl: (6) Could not resolve host: example.org"],
                to("example.org"),
            ),
            (
                vec![
                    "curl: (7) Failed to connect to 127.0.0.1 port 8000 after 0 ms: Couldn't \
                     connect to server",
                ],
                to("127.0.0.1"),
            ),
            (
                vec!["curl: (7) Failed to connect to ::1 port 8000 after 0 ms: Couldn't connect"],
                to("::1"),
            ),
            (
                vec![
                    "fatal: unable to access 'https://github.com/x/y/': CONNECT tunnel failed, \
                     response 403",
                ],
                to("github.com"),
            ),
            (
                vec![
                    "WARNING: Retrying after connection broken by 'ProxyError('Cannot connect to \
                     proxy.', OSError('Tunnel connection failed: 403 Forbidden'))'",
                    "ERROR: HTTPSConnectionPool(host='files.example.net', port=443): Max \
                     retries exceeded (Caused by ProxyError('Cannot connect to proxy.'))",
                ],
                to("files.example.net"),
            ),
            (
                vec!["curl: (97) Can't complete SOCKS5 connection to evil.test. (2)"],
                to("evil.test"),
            ),
            (
                vec![
                    "bash: connect: Network is unreachable",
                    "bash: line 1: /dev/tcp/10.0.0.7/22: Network is unreachable",
                ],
                to("10.0.0.7"),
            ),
            (
                vec!["error: failed to connect to http://user@[fd00::1]:8080/x"],
                to("fd00::1"),
            ),
            (
                vec!["bash: connect: Network is unreachable"],
                unnamed.clone(),
            ),
            // Allowed, reached directly: the note says to use the proxy.
            (
                vec!["curl: (7) Failed to connect to pypi.org port 443 after 0 ms"],
                around("pypi.org"),
            ),
            (
                vec!["curl: (6) Could not resolve host: a.b.example.com"],
                around("a.b.example.com"),
            ),
            // `*.example.com` is its subdomains, not itself.
            (
                vec!["curl: (6) Could not resolve host: example.com"],
                to("example.com"),
            ),
        ] {
            assert_eq!(
                explain_denial(&lines, &info("allowlist")).as_deref(),
                Some(expected.as_str()),
                "{lines:?}"
            );
        }
        assert_eq!(
            explain_denial(&["CONNECT tunnel failed"], &info("on")),
            None
        );
        assert_eq!(explain_denial(&["all good"], &info("allowlist")), None);
    }
}
