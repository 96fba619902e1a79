//! The proxy with real sockets on the host's loopback: a test server that
//! counts what reaches it decides whether a connection got through, not
//! the proxy's word. Names resolve through a table (a name that leads to
//! loopback, as DNS rebinding would make one).

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::*;

/// A server on the host's loopback: each connection is reported with the
/// bytes it sent before a blank line, and answered `pong` (an HTTP
/// response whose body is `pong`).
struct Server {
    port: u16,
    seen: mpsc::Receiver<Vec<u8>>,
}

impl Server {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let (sender, seen) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let sender = sender.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut received = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !received.windows(4).any(|window| window == b"\r\n\r\n") {
                        match stream.read(&mut chunk) {
                            Ok(0) | Err(_) => break,
                            Ok(count) => received.extend_from_slice(&chunk[..count]),
                        }
                    }
                    let _ = sender.send(received);
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\npong",
                    );
                });
            }
        });
        Self { port, seen }
    }

    /// What the next connection sent, if one arrives within 5 s.
    fn next(&self) -> Option<Vec<u8>> {
        self.seen.recv_timeout(Duration::from_secs(5)).ok()
    }

    /// True when no connection arrived (the proxy answered first, so a
    /// connection it made would already be reported).
    fn untouched(&self) -> bool {
        self.seen.try_recv().is_err()
    }
}

fn start_proxy(allowed: &[&str]) -> (Proxy, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let table = vec![
        (
            "rebind.example.com".to_owned(),
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        ),
        (
            "localhost".to_owned(),
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        ),
        (
            "metadata.example.com".to_owned(),
            vec!["169.254.169.254".parse().expect("ip")],
        ),
        (
            "neighbour.example.com".to_owned(),
            neighbour().into_iter().collect(),
        ),
    ];
    let proxy = Proxy::start_with(
        OwnedFd::from(listener),
        AllowList::parse(allowed).expect("valid"),
        Resolver::Table(table),
    )
    .expect("proxy");
    (proxy, port)
}

/// Another address on the network of one of this machine's interfaces
/// (not loopback), whatever range that network is in: its gateway or a
/// neighbour. `None` on a machine without one.
fn neighbour() -> Option<IpAddr> {
    super::address::own_networks()
        .into_iter()
        .find_map(|network| match network.address {
            IpAddr::V4(own) if !own.is_loopback() && network.prefix <= 30 => {
                Some(IpAddr::V4(Ipv4Addr::from_bits(own.to_bits() ^ 1)))
            }
            _ => None,
        })
}

fn client(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the proxy");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream
}

/// Everything until the proxy closes.
fn answer(mut stream: TcpStream, request: &[u8]) -> String {
    stream.write_all(request).expect("send");
    let mut text = Vec::new();
    let _ = stream.read_to_end(&mut text);
    String::from_utf8_lossy(&text).into_owned()
}

#[test]
fn connect_reaches_an_allowed_name_and_relays_both_ways() {
    let server = Server::start();
    let (_proxy, port) = start_proxy(&["localhost"]);
    let request = format!(
        "CONNECT localhost:{0} HTTP/1.1\r\nHost: localhost:{0}\r\n\r\nGET / HTTP/1.1\r\n\r\n",
        server.port
    );
    let text = answer(client(port), request.as_bytes());
    assert!(
        text.starts_with("HTTP/1.1 200 Connection established\r\n"),
        "{text}"
    );
    assert!(text.ends_with("\r\n\r\npong"), "{text}");
    // The bytes sent right behind the CONNECT went to the server.
    assert_eq!(
        server.next().as_deref(),
        Some(&b"GET / HTTP/1.1\r\n\r\n"[..])
    );
}

#[test]
fn addresses_and_other_names_are_refused_before_any_connection() {
    let server = Server::start();
    let (proxy, port) = start_proxy(&["localhost"]);
    for (host, reason) in [
        (
            format!("127.0.0.1:{}", server.port),
            "an IP address is reached only",
        ),
        (
            format!("[::1]:{}", server.port),
            "an IP address is reached only",
        ),
        (
            format!("other.example:{}", server.port),
            "it is not among the allowed domains",
        ),
        ("127.0.0.1:22".to_owned(), "an IP address is reached only"),
    ] {
        let text = answer(
            client(port),
            format!("CONNECT {host} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert!(
            text.starts_with("HTTP/1.1 403 Forbidden\r\n"),
            "{host}: {text}"
        );
        assert!(text.contains(reason), "{host}: {text}");
        assert!(text.contains("--allow-domain"), "{text}");
    }
    assert!(server.untouched(), "a refused host was reached");
    // One note per host, with its ports.
    let notes = proxy.take_notes();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(
        notes[0].contains(&format!("refused `127.0.0.1` (port {}, 22)", server.port)),
        "{}",
        notes[0]
    );
    assert!(notes[1].contains("refused `::1` (port "), "{}", notes[1]);
    assert!(
        notes[2].contains("`--allow-domain other.example`"),
        "{}",
        notes[2]
    );
}

#[test]
fn a_wildcard_never_leads_to_loopback_or_metadata_addresses() {
    let server = Server::start();
    let (proxy, port) = start_proxy(&["*.example.com"]);
    let mut hosts = vec!["rebind.example.com", "metadata.example.com"];
    if neighbour().is_some() {
        // Refused on its address: no packet leaves for it.
        hosts.push("neighbour.example.com");
    } else {
        eprintln!("skipped: no network interface but the loopback");
    }
    for host in &hosts {
        let text = answer(
            client(port),
            format!("CONNECT {host}:{} HTTP/1.1\r\n\r\n", server.port).as_bytes(),
        );
        assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
        assert!(
            text.contains("an address of this machine, of a network it is on, or of a private"),
            "{text}"
        );
    }
    assert!(
        server.untouched(),
        "a private address was reached through a wildcard"
    );
    assert_eq!(proxy.take_notes().len(), hosts.len());
    // Named exactly, the same name may.
    let (_exact, exact_port) = start_proxy(&["rebind.example.com"]);
    let text = answer(
        client(exact_port),
        format!(
            "CONNECT rebind.example.com:{} HTTP/1.1\r\n\r\n",
            server.port
        )
        .as_bytes(),
    );
    assert!(text.starts_with("HTTP/1.1 200 "), "{text}");
    assert!(server.next().is_some());
}

#[test]
fn plain_http_goes_to_the_urls_host_whatever_the_host_header_says() {
    let server = Server::start();
    let (_proxy, port) = start_proxy(&["localhost"]);
    let request = format!(
        "GET http://localhost:{}/simple/ HTTP/1.1\r\nHost: evil.example\r\nProxy-Authorization: x\r\nAccept: */*\r\n\r\n",
        server.port
    );
    let text = answer(client(port), request.as_bytes());
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("pong"), "{text}");
    assert_eq!(
        String::from_utf8(server.next().expect("forwarded")).expect("text"),
        format!(
            "GET /simple/ HTTP/1.1\r\nHost: localhost:{}\r\nAccept: */*\r\nConnection: close\r\n\r\n",
            server.port
        )
    );
    let refused = answer(
        client(port),
        format!(
            "GET http://127.0.0.1:{}/ HTTP/1.1\r\nHost: localhost\r\n\r\n",
            server.port
        )
        .as_bytes(),
    );
    assert!(
        refused.starts_with("HTTP/1.1 403 Forbidden\r\n"),
        "{refused}"
    );
    assert!(server.untouched());
}

/// A SOCKS5 CONNECT with the address part `address` (type byte first).
fn socks(port: u16, address: &[u8], target_port: u16) -> Vec<u8> {
    let mut stream = client(port);
    stream.write_all(&[5, 1, 0]).expect("greeting");
    let mut choice = [0u8; 2];
    stream.read_exact(&mut choice).expect("method");
    assert_eq!(choice, [5, 0]);
    let mut request = vec![5, 1, 0];
    request.extend_from_slice(address);
    request.extend_from_slice(&target_port.to_be_bytes());
    stream.write_all(&request).expect("request");
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).expect("reply");
    if reply[1] == 0 {
        stream.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("send");
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        let mut all = reply.to_vec();
        all.extend_from_slice(&rest);
        return all;
    }
    reply.to_vec()
}

#[test]
fn socks5_resolves_allowed_names_and_refuses_addresses() {
    let server = Server::start();
    let (_proxy, port) = start_proxy(&["localhost"]);
    let mut by_name = vec![3, 9];
    by_name.extend_from_slice(b"localhost");
    let reply = socks(port, &by_name, server.port);
    assert_eq!(reply[..2], [5, 0]);
    assert!(reply.ends_with(b"pong"));
    assert!(server.next().is_some());
    assert_eq!(socks(port, &[1, 127, 0, 0, 1], server.port)[..2], [5, 2]);
    let mut other = vec![3, 13];
    other.extend_from_slice(b"other.example");
    assert_eq!(socks(port, &other, server.port)[..2], [5, 2]);
    assert!(server.untouched());
    // Only CONNECT: UDP ASSOCIATE (DNS through the proxy) is refused.
    let mut stream = client(port);
    stream
        .write_all(&[5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 53])
        .expect("send");
    let mut reply = [0u8; 12];
    stream.read_exact(&mut reply).expect("reply");
    assert_eq!(reply[..4], [5, 0, 5, 7]);
}

#[test]
fn a_silent_or_huge_request_neither_stalls_others_nor_grows() {
    let server = Server::start();
    let (_proxy, port) = start_proxy(&["localhost"]);
    // Held open, sending nothing, and one dribbling a request line.
    let silent = client(port);
    let mut dribbling = client(port);
    dribbling.write_all(b"GET http://localhost/").expect("send");
    // Served meanwhile.
    let text = answer(
        client(port),
        format!(
            "CONNECT localhost:{} HTTP/1.1\r\n\r\nx\r\n\r\n",
            server.port
        )
        .as_bytes(),
    );
    assert!(text.starts_with("HTTP/1.1 200 "), "{text}");
    // The silent one is closed once its time is up.
    let started = Instant::now();
    let text = answer(silent, b"");
    assert!(
        text.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    drop(dribbling);
    // A request line longer than the limit is refused as it arrives.
    let mut huge = b"GET http://localhost/".to_vec();
    huge.resize(100_000, b'a');
    let mut stream = client(port);
    let _ = stream.write_all(&huge);
    let mut text = Vec::new();
    let _ = stream.read_to_end(&mut text);
    assert!(
        String::from_utf8_lossy(&text).starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{}",
        String::from_utf8_lossy(&text)
    );
}

#[test]
fn dropping_the_proxy_closes_its_socket() {
    let (proxy, port) = start_proxy(&["localhost"]);
    let text = answer(client(port), b"CONNECT other.example:1 HTTP/1.1\r\n\r\n");
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
    drop(proxy);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_err() {
            break;
        }
        assert!(Instant::now() < deadline, "still listening");
        std::thread::yield_now();
    }
}

#[test]
fn the_variables_point_every_tool_at_the_proxy() {
    let variables = variables(&AllowList::parse(&["registries"]).expect("valid"));
    let value = |name: &str| {
        variables
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.to_string_lossy().into_owned())
    };
    for name in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "PIP_PROXY",
        "CARGO_HTTP_PROXY",
        "YARN_HTTPS_PROXY",
    ] {
        assert_eq!(
            value(name).as_deref(),
            Some("http://127.0.0.1:3128"),
            "{name}"
        );
    }
    assert_eq!(
        value("ALL_PROXY").as_deref(),
        Some("socks5h://127.0.0.1:3128")
    );
    assert_eq!(
        value("no_proxy").as_deref(),
        Some("localhost,127.0.0.1,::1")
    );
    // Allowed exactly, localhost is the host's: through the proxy.
    let with_localhost = super::variables(&AllowList::parse(&["localhost"]).expect("valid"));
    assert!(with_localhost.contains(&("NO_PROXY".into(), "127.0.0.1,::1".into())));
}
