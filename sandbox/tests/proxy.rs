//! The network limited to allowed domains, with real processes and real
//! sockets: a server of the test's on the host's loopback decides whether
//! a sandboxed command reached it (it records every request line it gets),
//! never the proxy's word. Only loopback is used: a command reaches the
//! test's server through the proxy when `localhost` is allowed, and every
//! other way (an address, another name, `--noproxy`, a raw connect, the
//! host's own address) must fail.

use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::Output;
use std::sync::Arc;

use bashtool_process::Realm as _;
use bashtool_sandbox::{Sandbox, SandboxConfig};
use bashtool_testkit::RecordingServer;

mod support;
use support::host_address;

/// A workspace under the target directory (not a writable root of the
/// sandbox by accident).
struct Fixture {
    _base: tempfile::TempDir,
    workspace: PathBuf,
}

fn fixture() -> Fixture {
    let base = tempfile::Builder::new()
        .prefix("proxy-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp dir");
    let workspace = base
        .path()
        .canonicalize()
        .expect("canonical")
        .join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace");
    Fixture {
        _base: base,
        workspace,
    }
}

fn sandbox(fixture: &Fixture, allowed: &[&str]) -> Arc<Sandbox> {
    let config = SandboxConfig {
        allowed_domains: allowed.iter().map(|&domain| domain.to_owned()).collect(),
        ..SandboxConfig::default()
    };
    Sandbox::new(&config, &fixture.workspace, None).expect("sandbox")
}

/// Runs `script` with `bash -c` in the sandbox; its output and status.
fn run(sandbox: &Arc<Sandbox>, fixture: &Fixture, script: &str) -> Output {
    support::launch(
        sandbox,
        &fixture.workspace,
        std::env::vars_os().collect(),
        script,
    )
    .wait_with_output()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Notes the sandbox has for the call that just ended.
fn notes(sandbox: &Sandbox) -> Vec<String> {
    sandbox.after_call()
}

#[test]
fn an_allowed_name_is_reached_through_the_proxy_and_nothing_else_is() {
    let fixture = fixture();
    let server = RecordingServer::start("127.0.0.1:0", |path| {
        (path == "/page").then(|| "pong\n".to_owned())
    });
    let port = server.port;
    let sandbox = sandbox(&fixture, &["localhost"]);
    assert_eq!(sandbox.summary().network, "allowlist");
    assert_eq!(sandbox.summary().allowed_domains, ["localhost"]);

    // By its allowed name: through the proxy, plain HTTP, a CONNECT
    // tunnel, and SOCKS5 with the name resolved by the proxy.
    for (how, flags) in [
        ("plain", ""),
        ("tunnel", "--proxytunnel"),
        ("socks", "--proxy socks5h://127.0.0.1:3128"),
    ] {
        let output = run(
            &sandbox,
            &fixture,
            &format!("curl -fsS --max-time 10 {flags} http://localhost:{port}/page"),
        );
        assert_eq!(
            text(&output.stdout),
            "pong\n",
            "{how}: {}",
            text(&output.stderr)
        );
    }
    assert_eq!(server.requests().len(), 3, "{:?}", server.requests());
    assert!(notes(&sandbox).is_empty());

    // Every other way fails, and the server sees nothing more.
    let host = host_address();
    let outside = RecordingServer::start("0.0.0.0:0", |_| None);
    let attempts = [
        // The address directly: NO_PROXY keeps 127.0.0.1 the sandbox's own.
        format!("curl -fsS --max-time 5 http://127.0.0.1:{port}/page"),
        // The address through the proxy: only an allowed address may.
        format!(
            "curl -fsS --max-time 5 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{port}/page"
        ),
        format!(
            "curl -fsS --max-time 5 --noproxy '' --proxytunnel -x http://127.0.0.1:3128 http://[::1]:{port}/page"
        ),
        // Another name, and the name without the proxy.
        format!("curl -fsS --max-time 5 http://vm:{port}/page"),
        format!("curl -fsS --max-time 5 --noproxy '*' http://localhost:{port}/page"),
        // Raw connects to the host's loopback and to its own address.
        format!("echo x > /dev/tcp/127.0.0.1/{port}"),
        format!("echo x > /dev/tcp/{host}/{}", outside.port),
        format!(
            "python3 -c 'import socket; socket.create_connection((\"{host}\", {}), timeout=5)'",
            outside.port
        ),
        // SOCKS with an address.
        format!(
            "curl -fsS --max-time 5 --proxy socks5://127.0.0.1:3128 http://localhost:{port}/page"
        ),
    ];
    for script in &attempts {
        let output = run(&sandbox, &fixture, script);
        assert!(
            !output.status.success(),
            "{script}: {}",
            text(&output.stdout)
        );
    }
    assert_eq!(server.requests().len(), 3, "{:?}", server.requests());
    assert!(outside.requests().is_empty(), "{:?}", outside.requests());
    let notes = notes(&sandbox);
    let named = |host: &str| {
        notes.iter().any(|note| {
            note.contains(&format!("refused `{host}` "))
                && note.contains(&format!("--allow-domain {host}"))
        })
    };
    assert!(named("127.0.0.1"), "{notes:?}");
    assert!(named("::1"), "{notes:?}");
    assert!(named("vm"), "{notes:?}");
}

#[test]
fn dns_from_inside_reaches_no_resolver() {
    let fixture = fixture();
    let resolver = UdpSocket::bind("0.0.0.0:0").expect("udp");
    resolver.set_nonblocking(true).expect("nonblocking");
    let port = resolver.local_addr().expect("address").port();
    let sandbox = sandbox(&fixture, &["localhost"]);
    let output = run(
        &sandbox,
        &fixture,
        &format!(
            "python3 -c '
import socket
query = bytes.fromhex(\"abcd01000001000000000000076578616d706c6503636f6d0000010001\")
for host in (\"127.0.0.1\", \"{}\"):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(query, (host, {port}))
    except OSError as error:
        print(error)
'; getent ahosts example.com",
            host_address()
        ),
    );
    // The system resolver fails (not found) whether or not this machine
    // resolves names outside, and no datagram arrived.
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stdout));
    let mut buffer = [0u8; 64];
    assert!(resolver.recv(&mut buffer).is_err(), "a datagram got out");
}

/// Whether `program` runs here (`probe` succeeds); without it its part
/// is skipped, except under CI (which installs it: `.ci/packages`).
fn have(program: &str, probe: &str) -> bool {
    let found = std::process::Command::new("bash")
        .args(["-c", probe])
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is missing under CI"
        );
        eprintln!("skipped: {program} is not installed");
    }
    found
}

/// Whether the server was asked for `path`. The server records a request
/// before it answers, and the tool has ended: nothing is in flight.
fn saw(server: &RecordingServer, path: &str) -> bool {
    server
        .requests()
        .iter()
        .any(|line| line.split(' ').nth(1) == Some(path))
}

/// pip, npm, cargo and git take the proxy from the variables the sandbox
/// sets: each asks a registry stand-in on the host for its index, which a
/// direct connection could not reach.
#[test]
fn package_managers_and_git_go_through_the_proxy() {
    let fixture = fixture();
    // A registry stand-in: records every request line, answers 404
    // except for the crates index's configuration.
    let server = RecordingServer::start("127.0.0.1:0", |path| {
        (path == "/index/config.json").then(|| "{\"dl\": \"http://localhost/dl\"}".to_owned())
    });
    let port = server.port;
    let sandbox = sandbox(&fixture, &["localhost"]);
    let mut checked = Vec::new();
    if have("pip", "python3 -m pip --version") {
        let output = run(
            &sandbox,
            &fixture,
            &format!(
                "python3 -m pip download --no-cache-dir --disable-pip-version-check --retries 0 \
                 --timeout 5 --no-deps --dest /tmp/pip-dest --index-url http://localhost:{port}/simple/ \
                 bashtool-probe"
            ),
        );
        assert!(
            saw(&server, "/simple/bashtool-probe/"),
            "pip: {}",
            text(&output.stderr)
        );
        checked.push("pip");
    }
    if have("npm", "npm --version") {
        let output = run(
            &sandbox,
            &fixture,
            &format!(
                "npm_config_cache=/tmp/npm-cache npm view bashtool-probe --registry \
                 http://localhost:{port}/ --fetch-retries 0 --fetch-timeout 5000"
            ),
        );
        assert!(
            saw(&server, "/bashtool-probe"),
            "npm: {}",
            text(&output.stderr)
        );
        checked.push("npm");
    }
    if have("cargo", "cargo --version") {
        let project = fixture.workspace.join("app");
        std::fs::create_dir_all(project.join("src")).expect("src");
        std::fs::write(project.join("src/main.rs"), "fn main() {}\n").expect("main");
        std::fs::write(
            project.join("Cargo.toml"),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nprobe = { version = \"1\", registry = \"stand-in\" }\n\n[workspace]\n",
        )
        .expect("manifest");
        let output = run(
            &sandbox,
            &fixture,
            &format!(
                "cd app && CARGO_HOME=/tmp/cargo-home CARGO_NET_RETRY=0 \
                 CARGO_REGISTRIES_STAND_IN_INDEX=sparse+http://localhost:{port}/index/ \
                 cargo generate-lockfile"
            ),
        );
        assert!(
            saw(&server, "/index/config.json"),
            "cargo: {}",
            text(&output.stderr)
        );
        checked.push("cargo");
    }
    if have("git", "git --version") {
        let output = run(
            &sandbox,
            &fixture,
            &format!("GIT_TERMINAL_PROMPT=0 git ls-remote http://localhost:{port}/repo.git"),
        );
        assert!(
            saw(&server, "/repo.git/info/refs?service=git-upload-pack"),
            "git: {}",
            text(&output.stderr)
        );
        checked.push("git");
    }
    eprintln!("went through the proxy: {checked:?}");
}

#[test]
fn bad_domains_prepare_no_sandbox() {
    let fixture = fixture();
    for bad in [
        "",
        "https://example.com",
        "example.com/x",
        "example.com:443",
        "*",
        "*.",
        "a b",
    ] {
        let config = SandboxConfig {
            allowed_domains: vec![bad.to_owned()],
            ..SandboxConfig::default()
        };
        let error = Sandbox::new(&config, &fixture.workspace, None).expect_err(bad);
        assert!(
            error.to_string().starts_with(&format!(
                "sandbox setting `allowed_domains`: `{bad}` is not an allowed domain"
            )),
            "{error}"
        );
    }
}
