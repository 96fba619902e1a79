//! What a client sends the proxy, parsed from bytes: an HTTP request head
//! (`CONNECT host:port`, or an absolute-form `GET http://host/path` that
//! is forwarded), or SOCKS5's greeting and request. Pure functions on the
//! bytes received so far: each says it needs more, what it found and how
//! many bytes that took, or why the client is refused.

/// Longest request line.
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// Longest request head (request line and headers).
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header lines.
const MAX_HEADERS: usize = 100;

/// The outcome of parsing what arrived so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<T> {
    /// More bytes are needed.
    Incomplete,
    /// Found, with the number of bytes it took.
    Done(T, usize),
    /// The client is refused: why, for its answer.
    Bad(String),
}

/// Where a client wants to go, and how.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    /// The host as asked (a name or an address literal, brackets removed).
    pub host: String,
    pub port: u16,
}

/// An HTTP request to the proxy.
#[derive(Debug, PartialEq, Eq)]
pub enum HttpRequest {
    /// `CONNECT host:port`: a tunnel.
    Connect(Target),
    /// A plain HTTP request, its head rewritten for the origin server:
    /// origin-form target, `Host` from the URL, hop-by-hop and proxy
    /// headers removed, `Connection: close`.
    Forward { target: Target, head: Vec<u8> },
}

/// Parses an HTTP request head from `bytes`.
pub fn parse_http(bytes: &[u8]) -> Parsed<HttpRequest> {
    let Some(end) = head_end(bytes) else {
        let first_line_too_long = !bytes[..bytes.len().min(MAX_REQUEST_LINE + 1)].contains(&b'\n')
            && bytes.len() > MAX_REQUEST_LINE;
        if first_line_too_long {
            return Parsed::Bad("the request line is longer than 8 KiB".to_owned());
        }
        if bytes.len() >= MAX_HEAD {
            return Parsed::Bad("the request head is longer than 64 KiB".to_owned());
        }
        return Parsed::Incomplete;
    };
    let head = &bytes[..end];
    let mut lines = head
        .split(|&byte| byte == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    let request_line = lines.next().unwrap_or_default();
    if request_line.len() > MAX_REQUEST_LINE {
        return Parsed::Bad("the request line is longer than 8 KiB".to_owned());
    }
    if request_line.iter().any(|byte| !(0x20..0x7f).contains(byte)) {
        return Parsed::Bad("the request line has a control or non-ASCII byte".to_owned());
    }
    let Ok(request_line) = std::str::from_utf8(request_line) else {
        return Parsed::Bad("the request line is not text".to_owned());
    };
    let parts: Vec<&str> = request_line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Parsed::Bad(format!(
            "`{}` is not an HTTP request line",
            shorten(request_line)
        ));
    };
    if method.is_empty() || !method.bytes().all(is_token) {
        return Parsed::Bad(format!("`{}` is not an HTTP method", shorten(method)));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Parsed::Bad(format!(
            "`{}` is not HTTP/1.0 or HTTP/1.1",
            shorten(version)
        ));
    }
    let mut headers: Vec<(&str, &[u8])> = Vec::new();
    for line in lines.take_while(|line| !line.is_empty()) {
        if headers.len() == MAX_HEADERS {
            return Parsed::Bad("more than 100 header lines".to_owned());
        }
        if line
            .first()
            .is_some_and(|&byte| byte == b' ' || byte == b'\t')
        {
            return Parsed::Bad("a folded header line".to_owned());
        }
        let Some(colon) = line.iter().position(|&byte| byte == b':') else {
            return Parsed::Bad("a header line without a colon".to_owned());
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().copied().all(is_token) {
            return Parsed::Bad("a header name that is not a token".to_owned());
        }
        if value.iter().any(|&byte| byte == b'\r' || byte == 0) {
            return Parsed::Bad("a header value with a bare CR or NUL".to_owned());
        }
        let name = std::str::from_utf8(name).unwrap_or_default();
        headers.push((name, value));
    }
    let request = if method.eq_ignore_ascii_case("CONNECT") {
        match parse_authority(target, None) {
            Ok(target) => HttpRequest::Connect(target),
            Err(why) => return Parsed::Bad(why),
        }
    } else {
        match forward(method, target, version, &headers) {
            Ok(request) => request,
            Err(why) => return Parsed::Bad(why),
        }
    };
    Parsed::Done(request, end)
}

/// The end of the head (just past its empty line), if it arrived.
fn head_end(bytes: &[u8]) -> Option<usize> {
    let limit = bytes.len().min(MAX_HEAD);
    let mut line_start = 0;
    for (index, &byte) in bytes[..limit].iter().enumerate() {
        if byte == b'\n' {
            let line = &bytes[line_start..index];
            if line.is_empty() || line == b"\r" {
                return Some(index + 1);
            }
            line_start = index + 1;
        }
    }
    None
}

fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// `text` cut to 100 chars for a message.
fn shorten(text: &str) -> String {
    let mut cut: String = text.chars().take(100).collect();
    if cut.len() < text.len() {
        cut.push_str("...");
    }
    cut.escape_debug().to_string()
}

/// `host:port` or `[v6]:port`; `default_port` when the port may be left out.
fn parse_authority(authority: &str, default_port: Option<u16>) -> Result<Target, String> {
    let bad = || format!("`{}` is not HOST:PORT", shorten(authority));
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or_else(bad)?;
        match after.strip_prefix(':') {
            Some(port) => (inside, Some(port)),
            None if after.is_empty() => (inside, None),
            None => return Err(bad()),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host, Some(port)),
            Some(_) => return Err(bad()),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(port) if !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit()) => port
            .parse::<u16>()
            .ok()
            .filter(|&port| port != 0)
            .ok_or_else(bad)?,
        None => default_port.ok_or_else(bad)?,
        Some(_) => return Err(bad()),
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok(Target {
        host: host.to_owned(),
        port,
    })
}

/// Headers that concern one hop or the proxy, never forwarded.
const HOP_HEADERS: &[&str] = &[
    "host",
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

/// An absolute-form request rewritten for the origin server.
fn forward(
    method: &str,
    target: &str,
    version: &str,
    headers: &[(&str, &[u8])],
) -> Result<HttpRequest, String> {
    let Some(rest) = target
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &target[7..])
    else {
        return Err(if target.starts_with('/') {
            "this is bashtool's sandbox proxy: send it absolute-form requests \
             (`GET http://host/path`) or CONNECT"
                .to_owned()
        } else {
            format!(
                "`{}`: only http:// URLs are forwarded; use CONNECT for https",
                shorten(target)
            )
        });
    };
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if authority.contains('@') {
        return Err("user names in a URL are not forwarded".to_owned());
    }
    let path = path.split('#').next().unwrap_or_default();
    let path = match path.chars().next() {
        None => "/".to_owned(),
        Some('?') => format!("/{path}"),
        Some(_) => path.to_owned(),
    };
    let target = parse_authority(authority, Some(80))?;
    // Tokens the Connection header names are hop-by-hop too.
    let named: Vec<String> = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, value)| {
            String::from_utf8_lossy(value)
                .split(',')
                .map(|token| token.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut head = format!("{method} {path} {version}\r\nHost: {authority}\r\n").into_bytes();
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if HOP_HEADERS.contains(&lower.as_str()) || named.contains(&lower) {
            continue;
        }
        head.extend_from_slice(name.as_bytes());
        head.push(b':');
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(HttpRequest::Forward { target, head })
}

/// SOCKS5 reply codes.
pub mod socks_reply {
    pub const SUCCEEDED: u8 = 0;
    pub const GENERAL_FAILURE: u8 = 1;
    pub const NOT_ALLOWED: u8 = 2;
    pub const HOST_UNREACHABLE: u8 = 4;
    pub const CONNECTION_REFUSED: u8 = 5;
    pub const COMMAND_NOT_SUPPORTED: u8 = 7;
    pub const ADDRESS_NOT_SUPPORTED: u8 = 8;
}

/// SOCKS5's greeting: whether "no authentication" is offered.
pub fn parse_socks_greeting(bytes: &[u8]) -> Parsed<bool> {
    match bytes {
        [] | [_] => Parsed::Incomplete,
        [5, count, methods @ ..] => {
            let count = usize::from(*count);
            if methods.len() < count {
                Parsed::Incomplete
            } else {
                Parsed::Done(methods[..count].contains(&0), 2 + count)
            }
        }
        _ => Parsed::Bad("not SOCKS version 5".to_owned()),
    }
}

/// SOCKS5's request: a CONNECT target, or the reply code that refuses it.
pub fn parse_socks_request(bytes: &[u8]) -> Parsed<Result<Target, u8>> {
    let [version, command, _reserved, kind, rest @ ..] = bytes else {
        return Parsed::Incomplete;
    };
    if *version != 5 {
        return Parsed::Bad("not SOCKS version 5".to_owned());
    }
    let (host, length) = match kind {
        1 => {
            let Some(octets) = rest.get(..4) else {
                return Parsed::Incomplete;
            };
            (
                std::net::Ipv4Addr::new(octets[0], octets[1], octets[2], octets[3]).to_string(),
                4,
            )
        }
        4 => {
            let Some(octets) = rest.get(..16) else {
                return Parsed::Incomplete;
            };
            let mut address = [0u8; 16];
            address.copy_from_slice(octets);
            (std::net::Ipv6Addr::from(address).to_string(), 16)
        }
        3 => {
            let Some((&length, name)) = rest.split_first() else {
                return Parsed::Incomplete;
            };
            let Some(name) = name.get(..usize::from(length)) else {
                return Parsed::Incomplete;
            };
            (
                String::from_utf8_lossy(name).into_owned(),
                1 + usize::from(length),
            )
        }
        _ => return Parsed::Done(Err(socks_reply::ADDRESS_NOT_SUPPORTED), bytes.len()),
    };
    let Some(port) = rest.get(length..length + 2) else {
        return Parsed::Incomplete;
    };
    let used = 4 + length + 2;
    if *command != 1 {
        return Parsed::Done(Err(socks_reply::COMMAND_NOT_SUPPORTED), used);
    }
    let port = u16::from_be_bytes([port[0], port[1]]);
    if port == 0 {
        return Parsed::Done(Err(socks_reply::GENERAL_FAILURE), used);
    }
    Parsed::Done(Ok(Target { host, port }), used)
}

/// A SOCKS5 reply with an empty bound address.
pub fn socks_answer(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

/// A complete HTTP response with a text body, closing the connection.
pub fn http_answer(status: u16, reason: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nProxy-Agent: bashtool\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, port: u16) -> Target {
        Target {
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn parses_connect_with_names_and_addresses() {
        let request = b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nTLS";
        assert_eq!(
            parse_http(request),
            Parsed::Done(
                HttpRequest::Connect(target("example.com", 443)),
                request.len() - 3
            )
        );
        assert_eq!(
            parse_http(b"CONNECT [::1]:22 HTTP/1.1\n\n"),
            Parsed::Done(HttpRequest::Connect(target("::1", 22)), 27)
        );
        for bad in [
            &b"CONNECT example.com HTTP/1.1\r\n\r\n"[..],
            b"CONNECT example.com:0 HTTP/1.1\r\n\r\n",
            b"CONNECT example.com:99999 HTTP/1.1\r\n\r\n",
            b"CONNECT ::1:22 HTTP/1.1\r\n\r\n",
            b"CONNECT :443 HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                matches!(parse_http(bad), Parsed::Bad(_)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn waits_for_the_whole_head_and_bounds_it() {
        assert_eq!(
            parse_http(b"CONNECT example.com:443 HTTP/1.1\r\n"),
            Parsed::Incomplete
        );
        assert_eq!(parse_http(b"GET http://a/ HTT"), Parsed::Incomplete);
        let long_line = vec![b'A'; MAX_REQUEST_LINE + 1];
        assert_eq!(
            parse_http(&long_line),
            Parsed::Bad("the request line is longer than 8 KiB".to_owned())
        );
        let mut long_head = b"GET http://a/ HTTP/1.1\r\n".to_vec();
        while long_head.len() < MAX_HEAD {
            long_head.extend_from_slice(b"X-Filler: yes\r\n");
        }
        assert!(matches!(parse_http(&long_head), Parsed::Bad(_)));
    }

    #[test]
    fn forwards_plain_http_with_the_urls_host_and_no_proxy_headers() {
        let request = b"GET http://Example.com:8080/a/b?c=d#frag HTTP/1.1\r\n\
                        Host: evil.org\r\nProxy-Authorization: Basic eA==\r\n\
                        Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\n\
                        X-Hop: 1\r\nAccept: */*\r\n\r\nbody";
        let Parsed::Done(HttpRequest::Forward { target: to, head }, used) = parse_http(request)
        else {
            panic!("a forward");
        };
        assert_eq!(to, target("Example.com", 8080));
        assert_eq!(used, request.len() - 4);
        assert_eq!(
            String::from_utf8(head).expect("text"),
            "GET /a/b?c=d HTTP/1.1\r\nHost: Example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let Parsed::Done(HttpRequest::Forward { target: to, head }, _) =
            parse_http(b"HEAD http://a.org?x HTTP/1.0\r\n\r\n")
        else {
            panic!("a forward");
        };
        assert_eq!(to, target("a.org", 80));
        assert!(head.starts_with(b"HEAD /?x HTTP/1.0\r\nHost: a.org\r\n"));
    }

    #[test]
    fn refuses_what_it_cannot_forward() {
        for (request, why) in [
            (
                &b"GET / HTTP/1.1\r\n\r\n"[..],
                "this is bashtool's sandbox proxy",
            ),
            (b"GET https://a.org/ HTTP/1.1\r\n\r\n", "only http:// URLs"),
            (b"GET ftp://a.org/ HTTP/1.1\r\n\r\n", "only http:// URLs"),
            (b"GET http://u:p@a.org/ HTTP/1.1\r\n\r\n", "user names"),
            (b"GET http://a.org/ HTTP/2\r\n\r\n", "is not HTTP/1.0"),
            (
                b"GET  http://a.org/ HTTP/1.1\r\n\r\n",
                "is not an HTTP request line",
            ),
            (b"GET http://a.org/ HTTP/1.1\r\n folded\r\n\r\n", "folded"),
            (
                b"GET http://a.org/ HTTP/1.1\r\nNo colon\r\n\r\n",
                "without a colon",
            ),
            (
                b"GET http://a.org/ HTTP/1.1\r\nBad Name: x\r\n\r\n",
                "not a token",
            ),
            (b"GET http://a.org/ HTTP/1.1\r\nX: a\rb\r\n\r\n", "bare CR"),
            (b"GET http://a.org/x\ry HTTP/1.1\r\n\r\n", "control"),
            (
                b"\r\nGET http://a.org/ HTTP/1.1\r\n\r\n",
                "is not an HTTP request line",
            ),
        ] {
            match parse_http(request) {
                Parsed::Bad(message) => assert!(message.contains(why), "{message}"),
                other => panic!("{}: {other:?}", String::from_utf8_lossy(request)),
            }
        }
    }

    #[test]
    fn parses_socks5_greetings_and_requests() {
        assert_eq!(parse_socks_greeting(&[5]), Parsed::Incomplete);
        assert_eq!(parse_socks_greeting(&[5, 2, 0]), Parsed::Incomplete);
        assert_eq!(parse_socks_greeting(&[5, 2, 2, 0]), Parsed::Done(true, 4));
        assert_eq!(parse_socks_greeting(&[5, 1, 2]), Parsed::Done(false, 3));
        let mut by_name = vec![5, 1, 0, 3, 11];
        by_name.extend_from_slice(b"example.com");
        by_name.extend_from_slice(&443u16.to_be_bytes());
        assert_eq!(
            parse_socks_request(&by_name),
            Parsed::Done(Ok(target("example.com", 443)), by_name.len())
        );
        assert_eq!(parse_socks_request(&by_name[..8]), Parsed::Incomplete);
        assert_eq!(
            parse_socks_request(&[5, 1, 0, 1, 127, 0, 0, 1, 0, 22]),
            Parsed::Done(Ok(target("127.0.0.1", 22)), 10)
        );
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[0, 80]);
        assert_eq!(
            parse_socks_request(&v6),
            Parsed::Done(Ok(target("::1", 80)), 22)
        );
        assert_eq!(
            parse_socks_request(&[5, 3, 0, 1, 1, 2, 3, 4, 0, 53]),
            Parsed::Done(Err(socks_reply::COMMAND_NOT_SUPPORTED), 10)
        );
        assert_eq!(
            parse_socks_request(&[5, 1, 0, 9, 0, 0]),
            Parsed::Done(Err(socks_reply::ADDRESS_NOT_SUPPORTED), 6)
        );
    }
}
