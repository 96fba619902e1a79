//! Who may talk to the HTTP server: the checks every request passes before
//! rmcp sees it. Pure: a path and headers in, a verdict out.
//!
//! - Only `/mcp` is served (404 otherwise).
//! - DNS rebinding: a web page whose domain the attacker re-points at
//!   127.0.0.1 makes the browser send `Host: evil.example`, and its
//!   `Origin` names the page. A server bound to loopback therefore accepts
//!   only loopback `Host` names, and any server only loopback `Origin`s (or
//!   none: non-browser clients send none). Refused with 403.
//! - The bearer token (401 without it or with another one), compared in
//!   constant time so that the answer's timing does not reveal how much of
//!   a guess was right.

use hyper::HeaderMap;
use hyper::header::{AUTHORIZATION, HOST, ORIGIN};

/// Why a request is refused, with the message its body carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    NotFound,
    Forbidden(String),
    Unauthorized(String),
}

/// The request checks of one server.
#[derive(Clone)]
pub struct Guard {
    token: String,
    /// Bound to a loopback address: only loopback `Host` names are valid.
    loopback: bool,
}

impl std::fmt::Debug for Guard {
    // The token never reaches a log.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Guard")
            .field("loopback", &self.loopback)
            .finish_non_exhaustive()
    }
}

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

impl Guard {
    pub fn new(token: String, loopback: bool) -> Self {
        Self { token, loopback }
    }

    pub fn check(&self, path: &str, headers: &HeaderMap) -> Result<(), Refusal> {
        if path != PATH {
            return Err(Refusal::NotFound);
        }
        if self.loopback {
            let host = headers.get(HOST).and_then(|value| value.to_str().ok());
            if !host.is_some_and(is_loopback_host) {
                return Err(Refusal::Forbidden(format!(
                    "the Host header {host:?} is not a loopback name; this server is bound to \
                     loopback and answers only localhost, 127.0.0.1 and [::1]"
                )));
            }
        }
        if let Some(origin) = headers.get(ORIGIN) {
            let origin = origin.to_str().unwrap_or("(not ASCII)");
            if !is_loopback_origin(origin) {
                return Err(Refusal::Forbidden(format!(
                    "the Origin {origin:?} is not allowed; only http://localhost, \
                     http://127.0.0.1 and http://[::1] (any port) may call this server"
                )));
            }
        }
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer);
        match presented {
            None => Err(Refusal::Unauthorized(
                "send the token as `Authorization: Bearer TOKEN` (the token was printed when the \
                 server started, or is in its --token-file)"
                    .to_owned(),
            )),
            Some(token) if !constant_time_eq(token.as_bytes(), self.token.as_bytes()) => Err(
                Refusal::Unauthorized("the bearer token is not this server's".to_owned()),
            ),
            Some(_) => Ok(()),
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` value (scheme in any case).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

/// Equal bytes, in a time that depends only on the lengths.
fn constant_time_eq(left: &[u8], right: &[u8]) -> bool {
    if left.len() != right.len() {
        return false;
    }
    left.iter()
        .zip(right)
        .fold(0u8, |difference, (a, b)| difference | (a ^ b))
        == 0
}

/// The host of `host`, `host:port`, `[v6]` or `[v6]:port`, if the port (when
/// there is one) is a number that fits a port.
fn host_of(authority: &str) -> Option<&str> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']')?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':')?)),
            }
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    port.is_none_or(|port| port.parse::<u16>().is_ok())
        .then_some(host)
}

fn is_loopback_host(authority: &str) -> bool {
    host_of(authority).is_some_and(|host| {
        host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
    })
}

/// `http://localhost`, `http://127.0.0.1` or `http://[::1]`, with any port.
fn is_loopback_origin(origin: &str) -> bool {
    origin.strip_prefix("http://").is_some_and(is_loopback_host)
}

#[cfg(test)]
mod tests {
    use hyper::header::HeaderValue;

    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        map
    }

    fn verdict(loopback: bool, pairs: &[(&str, &str)]) -> Result<(), Refusal> {
        Guard::new(TOKEN.to_owned(), loopback).check(PATH, &headers(pairs))
    }

    const AUTH: (&str, &str) = ("authorization", "Bearer 0123456789abcdef0123456789abcdef");

    #[test]
    fn accepts_the_token_with_or_without_a_loopback_origin() {
        assert_eq!(verdict(true, &[("host", "127.0.0.1:8080"), AUTH]), Ok(()));
        for origin in [
            "http://localhost",
            "http://localhost:3000",
            "http://127.0.0.1:8080",
            "http://[::1]:9",
            "http://[::1]",
        ] {
            assert_eq!(
                verdict(true, &[("host", "localhost"), ("origin", origin), AUTH]),
                Ok(()),
                "{origin}"
            );
        }
        let lower = ("authorization", "bearer 0123456789abcdef0123456789abcdef");
        assert_eq!(verdict(true, &[("host", "[::1]:80"), lower]), Ok(()));
    }

    #[test]
    fn refuses_a_missing_or_wrong_token_with_401() {
        assert!(matches!(
            verdict(true, &[("host", "localhost")]),
            Err(Refusal::Unauthorized(_))
        ));
        for wrong in [
            "Bearer 0123456789abcdef0123456789abcdeX",
            "Bearer short",
            "Basic 0123456789abcdef0123456789abcdef",
            "Bearer ",
        ] {
            assert!(
                matches!(
                    verdict(true, &[("host", "localhost"), ("authorization", wrong)]),
                    Err(Refusal::Unauthorized(_))
                ),
                "{wrong}"
            );
        }
    }

    #[test]
    fn refuses_foreign_origins_and_hosts_with_403() {
        for origin in [
            "http://evil.example",
            "https://localhost",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:80",
            "http://localhost:80x",
            "http://localhost:99999",
            "http://[::1]x",
            "http://[::2]:80",
            "null",
        ] {
            assert!(
                matches!(
                    verdict(false, &[("origin", origin), AUTH]),
                    Err(Refusal::Forbidden(_))
                ),
                "{origin}"
            );
        }
        for host in ["evil.example", "evil.example:8080", "192.168.1.4"] {
            assert!(
                matches!(
                    verdict(true, &[("host", host), AUTH]),
                    Err(Refusal::Forbidden(_))
                ),
                "{host}"
            );
        }
        assert!(matches!(verdict(true, &[AUTH]), Err(Refusal::Forbidden(_))));
        // Bound to another address, any Host name is fine: the token guards.
        assert_eq!(verdict(false, &[("host", "devbox.lan:8080"), AUTH]), Ok(()));
    }

    #[test]
    fn serves_only_the_mcp_path() {
        let guard = Guard::new(TOKEN.to_owned(), true);
        let allowed = headers(&[("host", "localhost"), AUTH]);
        assert_eq!(guard.check("/", &allowed), Err(Refusal::NotFound));
        assert_eq!(guard.check("/mcp/", &allowed), Err(Refusal::NotFound));
        assert_eq!(guard.check("/mcp", &allowed), Ok(()));
    }

    #[test]
    fn compares_in_constant_time_shape() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
