//! The allowed domains: what `--allow-domain` and `[sandbox]
//! allowed_domains` accept, the `registries` preset, and the decision the
//! proxy takes on a host a command asked for.
//!
//! An entry is a name (`example.com`: that name only), a wildcard
//! (`*.example.com`: its subdomains, not the name itself), an IP address
//! (`10.0.0.5`, `::1` or `[::1]`: that address only), or `registries`.
//! Only what a user named exactly (a name or an address) may lead to a
//! loopback, private or link-local address: a wildcard or the preset
//! matches names whose DNS the owner of any subdomain controls.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::Error;

/// The word that stands for [`REGISTRIES`].
pub const REGISTRIES_PRESET: &str = "registries";

/// The public package registries of cargo, pip, npm (and yarn) and apt:
/// what `--allow-domain registries` allows. Names only; none of them may
/// lead to a private address.
pub const REGISTRIES: &[&str] = &[
    // cargo: the sparse index, the API, and where downloads redirect.
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    // pip: the index and the files.
    "pypi.org",
    "files.pythonhosted.org",
    // npm and yarn (classic's registry is npm's).
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    // apt: Debian's CDN and security archive, Ubuntu's archives and
    // their country mirrors.
    "deb.debian.org",
    "security.debian.org",
    "archive.ubuntu.com",
    "*.archive.ubuntu.com",
    "security.ubuntu.com",
    "ports.ubuntu.com",
];

/// What the shape of an entry is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Pattern {
    /// This name, lowercase, without a trailing dot.
    Name(String),
    /// Every subdomain of this name (`*.` removed), not the name itself.
    Subdomains(String),
    /// This address only.
    Address(IpAddr),
}

/// One allowed entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Entry {
    pattern: Pattern,
    /// From the `registries` preset: never leads to a private address.
    preset: bool,
}

/// The allowed domains of a sandbox, parsed and expanded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllowList {
    entries: Vec<Entry>,
}

/// A host a command asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A name, lowercase, without a trailing dot.
    Name(String),
    /// An address literal.
    Address(IpAddr),
}

/// The proxy's decision on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed. `private`: it may lead to loopback, private and link-local
    /// addresses (named exactly by the user).
    Allowed { private: bool },
    /// Matches no entry.
    NotListed,
}

impl AllowList {
    /// Parses the entries as given (`registries` expands); the first bad
    /// one is an error naming it and what is allowed.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Self, Error> {
        let mut entries: Vec<Entry> = Vec::new();
        for item in items {
            for entry in parse_entry(item.as_ref()).map_err(|message| Error::Setting {
                setting: "allowed_domains",
                message,
            })? {
                if let Some(existing) = entries
                    .iter_mut()
                    .find(|existing| existing.pattern == entry.pattern)
                {
                    existing.preset &= entry.preset;
                } else {
                    entries.push(entry);
                }
            }
        }
        Ok(Self { entries })
    }

    /// No entry: the list allows nothing (and is not in force).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries as text (`example.com`, `*.example.com`, `10.0.0.5`),
    /// the preset expanded, in the order given.
    pub fn patterns(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|entry| entry.pattern.to_string())
            .collect()
    }

    /// Whether `host` is allowed, and whether it may lead to a private
    /// address.
    pub(crate) fn decide(&self, host: &Host) -> Decision {
        let mut decision = Decision::NotListed;
        for entry in &self.entries {
            let matched = match (&entry.pattern, host) {
                (Pattern::Name(name), Host::Name(asked)) => name == asked,
                (Pattern::Subdomains(suffix), Host::Name(asked)) => asked
                    .strip_suffix(suffix.as_str())
                    .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
                (Pattern::Address(address), Host::Address(asked)) => address == asked,
                _ => false,
            };
            if matched {
                let private = !entry.preset
                    && matches!(entry.pattern, Pattern::Name(_) | Pattern::Address(_));
                if private {
                    return Decision::Allowed { private: true };
                }
                decision = Decision::Allowed { private: false };
            }
        }
        decision
    }

    /// True when every entry of `other` is allowed by this list too (a
    /// server's list narrowed by a client's).
    pub fn covers(&self, other: &Self) -> bool {
        other.entries.iter().all(|entry| {
            self.entries.iter().any(|mine| {
                mine.pattern == entry.pattern
                    || match (&mine.pattern, &entry.pattern) {
                        (
                            Pattern::Subdomains(suffix),
                            Pattern::Name(name) | Pattern::Subdomains(name),
                        ) => name
                            .strip_suffix(suffix.as_str())
                            .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
                        _ => false,
                    }
            })
        })
    }

    /// True when `name` (`localhost`, `127.0.0.1`) is allowed exactly:
    /// requests for it then go through the proxy to the host.
    pub fn names_exactly(&self, name: &str) -> bool {
        Host::parse(name)
            .is_some_and(|host| self.decide(&host) == Decision::Allowed { private: true })
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => formatter.write_str(name),
            Self::Subdomains(suffix) => write!(formatter, "*.{suffix}"),
            Self::Address(address) => write!(formatter, "{address}"),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => formatter.write_str(name),
            Self::Address(address) => write!(formatter, "{address}"),
        }
    }
}

impl Host {
    /// The host of a request (`example.com`, `10.0.0.5`, `[::1]` or
    /// `::1`), `None` when it is neither a valid name nor an address.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let bracketed = text
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'));
        if let Some(inner) = bracketed {
            return inner
                .parse::<Ipv6Addr>()
                .ok()
                .map(|a| Self::Address(a.into()));
        }
        if let Ok(address) = text.parse::<IpAddr>() {
            return Some(Self::Address(address));
        }
        let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        name_problem(&name).is_none().then_some(Self::Name(name))
    }
}

/// What an entry may be, for error messages.
const ALLOWED: &str = "give a domain name such as `example.com`, `*.example.com` for its \
                       subdomains, an IP address such as `10.0.0.5`, or `registries` (the \
                       package registries of cargo, pip, npm and apt)";

/// Checks one entry as a user gave it and returns it normalized
/// (`Example.COM.` → `example.com`, `[::1]` → `::1`); `registries` stays.
/// The error names the entry, what is wrong and what is allowed.
pub fn normalize_domain(text: &str) -> Result<String, Error> {
    let entries = parse_entry(text).map_err(|message| Error::Setting {
        setting: "allowed_domains",
        message,
    })?;
    Ok(if text == REGISTRIES_PRESET {
        REGISTRIES_PRESET.to_owned()
    } else {
        entries
            .first()
            .map(|entry| entry.pattern.to_string())
            .unwrap_or_default()
    })
}

fn parse_entry(text: &str) -> Result<Vec<Entry>, String> {
    let refuse = |why: &str| {
        Err(format!(
            "`{text}` is not an allowed domain: {why}; {ALLOWED}"
        ))
    };
    if text == REGISTRIES_PRESET {
        return Ok(REGISTRIES
            .iter()
            .map(|name| Entry {
                pattern: parse_pattern(name).expect("the preset's names are valid"),
                preset: true,
            })
            .collect());
    }
    if text.is_empty() {
        return refuse("it is empty");
    }
    if text.chars().any(char::is_whitespace) {
        return refuse("it contains a space");
    }
    if text.contains("://") {
        return refuse(
            "it has a scheme; give the name alone (`example.com`, not `https://example.com`)",
        );
    }
    if text.contains('@') {
        return refuse("it has a user name; give the name alone");
    }
    if text.contains('/') {
        return refuse(
            "it has a path; give the name alone (every path of an allowed domain is allowed)",
        );
    }
    if has_port(text) {
        return refuse(
            "it has a port; give the name alone (every port of an allowed domain is allowed)",
        );
    }
    match parse_pattern(text) {
        Ok(pattern) => Ok(vec![Entry {
            pattern,
            preset: false,
        }]),
        Err(why) => refuse(&why),
    }
}

/// `host:80`, `[::1]:80`, `1.2.3.4:80`: a colon and digits after it that
/// do not make an IPv6 address.
fn has_port(text: &str) -> bool {
    if text.parse::<Ipv6Addr>().is_ok() {
        return false;
    }
    if let Some(rest) = text.strip_prefix('[') {
        return rest
            .split_once(']')
            .is_some_and(|(_, after)| after.starts_with(':'));
    }
    text.rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit()))
}

fn parse_pattern(text: &str) -> Result<Pattern, String> {
    if text == "*" {
        return Err("`*` alone would allow every host; that is `--network on`".to_owned());
    }
    if text == "*." {
        return Err("`*.` names no domain".to_owned());
    }
    if let Some(inner) = text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        return inner
            .parse::<Ipv6Addr>()
            .map(|address| Pattern::Address(address.into()))
            .map_err(|_| format!("`{inner}` is not an IPv6 address"));
    }
    if let Ok(address) = text.parse::<Ipv4Addr>() {
        return Ok(Pattern::Address(address.into()));
    }
    if let Ok(address) = text.parse::<Ipv6Addr>() {
        return Ok(Pattern::Address(address.into()));
    }
    let (wildcard, name) = match text.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if name.contains('*') {
        return Err("a wildcard may only be the whole first label (`*.example.com`)".to_owned());
    }
    if let Some(problem) = name_problem(&name) {
        return Err(problem);
    }
    if wildcard {
        if !name.contains('.') {
            return Err(format!(
                "`*.{name}` would allow a whole top-level domain; name the domains"
            ));
        }
        Ok(Pattern::Subdomains(name))
    } else {
        Ok(Pattern::Name(name))
    }
}

/// Why `name` (lowercase, no trailing dot) is not a host name, if it is not.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it names no domain".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
    {
        return Some(if bad.is_ascii() {
            format!("`{bad}` cannot appear in a domain name")
        } else {
            "it is not ASCII; give its `xn--` (punycode) form".to_owned()
        });
    }
    if name.len() > 253 {
        return Some("it is longer than 253 characters".to_owned());
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.iter().any(|label| label.is_empty()) {
        return Some("it has an empty label (`..`, or a dot at the start)".to_owned());
    }
    if labels.iter().any(|label| label.len() > 63) {
        return Some("a label is longer than 63 characters".to_owned());
    }
    if labels
        .last()
        .is_some_and(|last| last.bytes().all(|byte| byte.is_ascii_digit()))
    {
        return Some(
            "it is neither an IP address nor a domain name (a top-level domain is never a number)"
                .to_owned(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> AllowList {
        AllowList::parse(items).expect("valid")
    }

    fn name(text: &str) -> Host {
        Host::parse(text).expect("a host")
    }

    #[test]
    fn refuses_bad_entries_naming_what_is_wrong() {
        for (entry, why) in [
            ("", "it is empty"),
            (" example.com", "it contains a space"),
            ("exa mple.com", "it contains a space"),
            ("https://example.com", "it has a scheme"),
            ("user@example.com", "it has a user name"),
            ("example.com/path", "it has a path"),
            ("example.com:443", "it has a port"),
            ("[::1]:443", "it has a port"),
            ("10.0.0.5:22", "it has a port"),
            ("*", "`*` alone would allow every host"),
            ("*.", "`*.` names no domain"),
            ("*.com", "`*.com` would allow a whole top-level domain"),
            ("a.*.com", "a wildcard may only be the whole first label"),
            (
                "*example.com",
                "a wildcard may only be the whole first label",
            ),
            ("exa%mple.com", "`%` cannot appear in a domain name"),
            ("bücher.de", "it is not ASCII"),
            ("a..b", "it has an empty label"),
            (".example.com", "it has an empty label"),
            ("127.1", "it is neither an IP address nor a domain name"),
            ("[example.com]", "`example.com` is not an IPv6 address"),
        ] {
            let error = AllowList::parse(&[entry]).expect_err(entry).to_string();
            assert!(
                error.starts_with(&format!(
                    "sandbox setting `allowed_domains`: `{entry}` is not an allowed domain: {why}"
                )),
                "{entry}: {error}"
            );
            assert!(
                error.ends_with(
                    "or `registries` (the package registries of cargo, pip, npm and apt)"
                ),
                "{error}"
            );
        }
    }

    #[test]
    fn normalizes_names_and_addresses() {
        assert_eq!(
            normalize_domain("Example.COM.").expect("valid"),
            "example.com"
        );
        assert_eq!(
            normalize_domain("*.Example.com").expect("valid"),
            "*.example.com"
        );
        assert_eq!(normalize_domain("[::1]").expect("valid"), "::1");
        assert_eq!(normalize_domain("::1").expect("valid"), "::1");
        assert_eq!(normalize_domain("10.0.0.5").expect("valid"), "10.0.0.5");
        assert_eq!(normalize_domain("localhost").expect("valid"), "localhost");
        assert_eq!(normalize_domain("registries").expect("valid"), "registries");
    }

    #[test]
    fn a_wildcard_matches_subdomains_not_the_name_or_lookalikes() {
        let allowed = list(&["*.example.com"]);
        assert_eq!(
            allowed.decide(&name("a.example.com")),
            Decision::Allowed { private: false }
        );
        assert_eq!(
            allowed.decide(&name("a.b.EXAMPLE.com.")),
            Decision::Allowed { private: false }
        );
        for other in [
            "example.com",
            "badexample.com",
            "example.com.evil.org",
            ".example.com",
        ] {
            if let Some(host) = Host::parse(other) {
                assert_eq!(allowed.decide(&host), Decision::NotListed, "{other}");
            }
        }
    }

    #[test]
    fn only_exact_user_entries_may_lead_to_private_addresses() {
        let allowed = list(&["localhost", "*.corp.example", "registries", "10.0.0.5"]);
        assert_eq!(
            allowed.decide(&name("localhost")),
            Decision::Allowed { private: true }
        );
        assert_eq!(
            allowed.decide(&name("git.corp.example")),
            Decision::Allowed { private: false }
        );
        assert_eq!(
            allowed.decide(&name("pypi.org")),
            Decision::Allowed { private: false }
        );
        assert_eq!(
            allowed.decide(&name("10.0.0.5")),
            Decision::Allowed { private: true }
        );
        // An address is reached only as itself, never through a name.
        assert_eq!(allowed.decide(&name("127.0.0.1")), Decision::NotListed);
        assert_eq!(
            allowed.decide(&name("::ffff:10.0.0.5")),
            Decision::NotListed
        );
        // A user's exact entry wins over the preset's.
        let both = list(&["registries", "pypi.org"]);
        assert_eq!(
            both.decide(&name("pypi.org")),
            Decision::Allowed { private: true }
        );
    }

    #[test]
    fn the_preset_expands_and_duplicates_fold() {
        let allowed = list(&["registries", "crates.io", "example.com", "EXAMPLE.com"]);
        let patterns = allowed.patterns();
        assert_eq!(patterns.len(), REGISTRIES.len() + 1);
        assert_eq!(
            &patterns[..3],
            ["crates.io", "index.crates.io", "static.crates.io"]
        );
        assert_eq!(patterns.last().map(String::as_str), Some("example.com"));
    }

    #[test]
    fn request_hosts_are_names_or_addresses() {
        assert_eq!(
            Host::parse("[::1]"),
            Some(Host::Address("::1".parse().expect("v6")))
        );
        assert_eq!(
            Host::parse("127.0.0.1"),
            Some(Host::Address([127, 0, 0, 1].into()))
        );
        assert_eq!(
            Host::parse("Example.com."),
            Some(Host::Name("example.com".to_owned()))
        );
        for bad in [
            "",
            "a b",
            "a/b",
            "evil.com:80",
            "%00",
            "127.1",
            "[1.2.3.4]",
            "x\0y",
        ] {
            assert_eq!(Host::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_server_list_covers_a_narrower_client_list() {
        let server = list(&["*.example.com", "pypi.org"]);
        assert!(server.covers(&list(&["a.example.com", "*.b.example.com", "pypi.org"])));
        assert!(!server.covers(&list(&["example.com"])));
        assert!(!server.covers(&list(&["files.pythonhosted.org"])));
    }
}
