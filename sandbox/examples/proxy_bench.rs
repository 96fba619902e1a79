//! Prints what the allowed-domains network costs: a sandbox's creation
//! with the network on, off and limited (the proxy's socket and thread);
//! a request on a new connection through the proxy (plain HTTP, CONNECT,
//! CONNECT to an address: no lookup) against the same request made
//! directly from a sandbox with the network on; and 1 GiB through it with
//! curl. Interleaved, medians; numbers and ratios only, nothing asserted.
//! A server of its own on the host's loopback answers.
//! `cargo run --release -p bashtool-sandbox --example proxy_bench`

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bashtool_process::{ChildIo, Launch, Sink, Wrapper};
use bashtool_sandbox::{NetworkMode, Sandbox, SandboxConfig};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The stdout of `script`, run with `bash -c` in `sandbox`.
fn output(sandbox: &Arc<Sandbox>, workspace: &Path, script: &str) -> String {
    let launch = Launch {
        argv: vec!["bash".into(), "-c".into(), script.into()],
        env: std::env::vars_os().collect(),
        cwd: workspace.to_path_buf(),
    };
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).expect("pipe");
    let wrappers: Vec<Arc<dyn Wrapper>> = vec![Arc::clone(sandbox) as Arc<dyn Wrapper>];
    let io = ChildIo {
        stdout: Sink::Fd(write),
        ..ChildIo::null()
    };
    let launched = bashtool_process::launch(launch, &wrappers, io, None).expect("launch");
    let mut text = String::new();
    std::fs::File::from(read)
        .read_to_string(&mut text)
        .expect("read");
    launched.root.wait_blocking();
    text
}

fn number(sandbox: &Arc<Sandbox>, workspace: &Path, script: &str) -> f64 {
    let text = output(sandbox, workspace, script);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {text:?}"))
}

/// Answers `/big` with 1 GiB, anything else with 5 bytes; one
/// connection per request.
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                if String::from_utf8_lossy(&head).contains("/big") {
                    let size: usize = 1 << 30;
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
                    );
                    let chunk = vec![b'x'; 1 << 20];
                    for _ in 0..(size >> 20) {
                        if stream.write_all(&chunk).is_err() {
                            return;
                        }
                    }
                } else {
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\npong\n",
                    );
                }
            });
        }
    });
    port
}

/// A Python client timing 300 requests, each on a new connection: to
/// `port` directly, or through the proxy (`via` = `plain` or `connect`)
/// to `target:port`. Prints the median in µs.
fn requests(port: u16, via: &str, target: &str) -> String {
    format!(
        "python3 - <<'EOF'
import socket, time
def once():
    if '{via}' == 'direct':
        s = socket.create_connection(('127.0.0.1', {port}))
        s.sendall(b'GET /small HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')
    else:
        s = socket.create_connection(('127.0.0.1', 3128))
        if '{via}' == 'connect':
            s.sendall(b'CONNECT {target}:{port} HTTP/1.1\\r\\n\\r\\n')
            answer = b''
            while b'\\r\\n\\r\\n' not in answer:
                answer += s.recv(4096)
            s.sendall(b'GET /small HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')
        else:
            s.sendall(b'GET http://{target}:{port}/small HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
    while s.recv(4096):
        pass
    s.close()
for _ in range(30):
    once()
times = []
for _ in range(300):
    started = time.perf_counter(); once(); times.append(time.perf_counter() - started)
times.sort()
print(times[150] * 1e6)
EOF"
    )
}

fn main() {
    let directory = tempfile::tempdir().expect("temp dir");
    let workspace = directory.path().canonicalize().expect("canonical");
    let config = |network, domains: &[&str]| SandboxConfig {
        network,
        allowed_domains: domains.iter().map(|&domain| domain.to_owned()).collect(),
        ..SandboxConfig::default()
    };
    let configs = [
        ("on", config(NetworkMode::On, &[])),
        ("off", config(NetworkMode::Off, &[])),
        (
            "allowlist",
            config(NetworkMode::On, &["localhost", "127.0.0.1"]),
        ),
    ];
    let mut made: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for round in 0..65 {
        for (index, (_, config)) in configs.iter().enumerate() {
            let started = Instant::now();
            let sandbox = Sandbox::new(config, &workspace, None).expect("sandbox");
            if round >= 5 {
                made[index].push(started.elapsed().as_secs_f64() * 1000.0);
            }
            drop(sandbox);
        }
    }
    let on = median(made[0].clone());
    for (index, (name, _)) in configs.iter().enumerate() {
        let time = median(made[index].clone());
        println!(
            "a sandbox, network {name}: {time:.2} ms ({:.2}x network on)",
            time / on
        );
    }

    let port = serve();
    let open = Sandbox::new(&configs[0].1, &workspace, None).expect("sandbox");
    let limited = Sandbox::new(&configs[2].1, &workspace, None).expect("sandbox");
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); 4];
    for _ in 0..5 {
        samples[0].push(number(&open, &workspace, &requests(port, "direct", "")));
        samples[1].push(number(
            &limited,
            &workspace,
            &requests(port, "plain", "localhost"),
        ));
        samples[2].push(number(
            &limited,
            &workspace,
            &requests(port, "connect", "localhost"),
        ));
        samples[3].push(number(
            &limited,
            &workspace,
            &requests(port, "connect", "127.0.0.1"),
        ));
    }
    let direct = median(samples[0].clone());
    println!("a request on a new connection, direct (network on): {direct:.0} µs");
    for (index, name) in [
        (1, "plain HTTP through the proxy"),
        (2, "CONNECT through the proxy"),
        (3, "CONNECT to an address (no lookup)"),
    ] {
        let time = median(samples[index].clone());
        println!(
            "  {name}: {time:.0} µs (+{:.0} µs, {:.2}x)",
            time - direct,
            time / direct
        );
    }

    let curl = |flags: &str| {
        format!("curl -s -o /dev/null -w '%{{time_total}}' {flags} http://localhost:{port}/big")
    };
    let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); 3];
    for _ in 0..3 {
        seconds[0].push(number(&open, &workspace, &curl("--noproxy '*'")));
        seconds[1].push(number(&limited, &workspace, &curl("")));
        seconds[2].push(number(&limited, &workspace, &curl("--proxytunnel")));
    }
    let direct = median(seconds[0].clone());
    println!("1 GiB with curl, direct: {:.2} GiB/s", 1.0 / direct);
    for (index, name) in [
        (1, "plain HTTP through the proxy"),
        (2, "CONNECT through the proxy"),
    ] {
        let time = median(seconds[index].clone());
        println!(
            "  {name}: {:.2} GiB/s ({:.0}% of direct)",
            1.0 / time,
            100.0 * direct / time
        );
    }
}
