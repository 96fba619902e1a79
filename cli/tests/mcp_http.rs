//! End-to-end tests of `bashtool mcp --http`: the real binary driven over
//! real HTTP, by rmcp's streamable-HTTP client (reqwest) and by plain
//! requests for what a client must be refused. Process deaths are decided
//! from `/proc`, never by the code under test; waits have deadlines.
//!
//! The 100 concurrent calls go through one MCP session: once into its
//! persistent shell (where they run one after the other, and all must come
//! back), once with `--stateless` (each in its own shell, all at once).

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::{RequestHandle, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

mod mcp_support;
use bashtool_tests::{pid_alive, read_pids};
use mcp_support::{
    DEADLINE, ProgressClient, answer, progress_with, send_call, text, tree_script, wait_until_dead,
};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;

/// A running `bashtool mcp --http` on a free loopback port.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
    token: String,
    /// The generated token's file, as the server announced it.
    token_file: Option<PathBuf>,
    dir: tempfile::TempDir,
}

fn command(dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command
        .arg("mcp")
        .arg("--cwd")
        .arg(dir)
        .args(args)
        .env("XDG_CONFIG_HOME", dir)
        .env("BASHTOOL_STATE_DIR", dir.join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Starts a server and reads its address (and generated token) from stderr.
async fn start(args: &[&str]) -> HttpServer {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = command(dir.path(), &[&["--http", "127.0.0.1:0"], args].concat())
        .spawn()
        .expect("spawn bashtool mcp --http");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let deadline = Instant::now() + DEADLINE;
    let mut url = None;
    let mut token = None;
    let mut token_file = None;
    let given_token = args.contains(&"--token-file");
    while url.is_none() || (token.is_none() && !given_token) {
        let line = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .expect("server announced itself in time")
            .expect("stderr readable")
            .expect("server running");
        if let Some(rest) = line.strip_prefix("bashtool: MCP over HTTP at ") {
            url = Some(rest.to_owned());
        } else if let Some(rest) = line.strip_prefix("bashtool: bearer token (also in ") {
            let (path, value) = rest.split_once("): ").expect("token line");
            token_file = Some(PathBuf::from(path));
            token = Some(value.to_owned());
        }
    }
    // The rest of stderr is drained, so the server never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    HttpServer {
        child,
        url: url.expect("url"),
        token: token.unwrap_or_default(),
        token_file,
        dir,
    }
}

struct Connection {
    client: RunningService<RoleClient, ProgressClient>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
}

impl HttpServer {
    async fn connect(&self) -> Connection {
        self.connect_with_token(&self.token)
            .await
            .expect("initialize")
    }

    async fn connect_with_token(&self, token: &str) -> Result<Connection, String> {
        let transport = StreamableHttpClientTransport::with_client(
            reqwest::Client::new(),
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str()).auth_header(token),
        );
        let (sender, progress) = mpsc::unbounded_channel();
        let client = timeout(
            DEADLINE,
            ProgressClient { progress: sender }.serve(transport),
        )
        .await
        .expect("initialize in time")
        .map_err(|error| error.to_string())?;
        Ok(Connection { client, progress })
    }

    /// A raw `initialize` POST with the given extra headers.
    async fn post(&self, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = reqwest::Client::new()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INITIALIZE);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        timeout(DEADLINE, request.send())
            .await
            .expect("answer in time")
            .expect("HTTP answer")
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("server pid")
    }
}

impl Connection {
    async fn send(&self, arguments: Value) -> RequestHandle<RoleClient> {
        send_call(&self.client, "bash", arguments).await
    }

    async fn call(&self, arguments: Value) -> CallToolResult {
        answer(self.send(arguments).await).await
    }

    async fn progress_with(&mut self, needle: &str) -> ProgressNotificationParam {
        progress_with(&mut self.progress, needle).await
    }
}

/// The shell's pid, from the shell itself.
async fn shell_pid(connection: &Connection) -> u32 {
    let result = connection
        .call(json!({"command": format!("echo {}", bashtool_tests::qualified_pid("$$"))}))
        .await;
    let text = text(&result);
    text.lines()
        .nth(1)
        .and_then(bashtool_tests::parse_pid)
        .unwrap_or_else(|| panic!("no pid in {text:?}"))
}

#[tokio::test]
async fn initialize_list_and_call_in_a_persistent_session() {
    let server = start(&[]).await;
    let connection = server.connect().await;
    let info = connection.client.peer_info().expect("server info");
    let implementation = info.server_info.as_ref().expect("implementation");
    assert_eq!(implementation.name, "bashtool");
    assert_eq!(info.protocol_version.as_str(), "2025-11-25");
    let tools = connection
        .client
        .list_all_tools()
        .await
        .expect("tools/list");
    let titles: Vec<(&str, Option<&str>)> = tools
        .iter()
        .map(|tool| (tool.name.as_ref(), tool.title.as_deref()))
        .collect();
    assert_eq!(
        titles,
        [
            ("bash", Some("Run a shell command")),
            ("bash_jobs", Some("Background and interactive jobs"))
        ]
    );
    let result = connection.call(json!({"command": "cd / && echo hi"})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), "stdout:\nhi\nexit code 0\n[cwd: /]");
    let result = connection.call(json!({"command": "pwd"})).await;
    assert_eq!(text(&result), "stdout:\n/\nexit code 0\n[cwd: /]");
}

#[tokio::test]
async fn progress_arrives_and_cancel_kills_the_command_tree() {
    let server = start(&[]).await;
    let mut connection = server.connect().await;
    let pids = server.dir.path().join("pids");
    let handle = connection
        .send(json!({"command": tree_script(&pids)}))
        .await;
    connection.progress_with("started").await;
    let pids = read_pids(&pids, 2).await;
    assert!(pids.iter().all(|&pid| pid_alive(pid)));
    handle
        .cancel(Some("test".to_owned()))
        .await
        .expect("cancelled");
    wait_until_dead(&pids).await;
    // The session goes on after the cancel.
    let result = connection.call(json!({"command": "echo after"})).await;
    assert!(
        text(&result).starts_with("stdout:\nafter\n"),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn requests_without_the_token_or_from_a_foreign_origin_are_refused() {
    let server = start(&[]).await;
    let bearer = format!("Bearer {}", server.token);

    let missing = server.post(&[]).await;
    assert_eq!(missing.status(), 401);
    assert_eq!(
        missing.headers()["www-authenticate"],
        "Bearer realm=\"bashtool\""
    );
    // A refused peer keeps no connection open.
    assert_eq!(missing.headers()["connection"], "close");
    let wrong = server
        .post(&[("authorization", "Bearer 0000000000000000000000000000000000")])
        .await;
    assert_eq!(wrong.status(), 401);
    assert_eq!(
        wrong.text().await.expect("body"),
        "unauthorized: the bearer token is not this server's\n"
    );
    let foreign = server
        .post(&[
            ("authorization", &bearer),
            ("origin", "http://evil.example"),
        ])
        .await;
    assert_eq!(foreign.status(), 403);
    let rebound = server
        .post(&[("authorization", &bearer), ("host", "evil.example:80")])
        .await;
    assert_eq!(rebound.status(), 403);
    let local_page = server
        .post(&[
            ("authorization", &bearer),
            ("origin", "http://localhost:3000"),
        ])
        .await;
    assert_eq!(local_page.status(), 200);
    assert!(local_page.headers().contains_key("mcp-session-id"));

    // The real client, with a wrong token, does not get a session either.
    let error = server
        .connect_with_token("not-the-token-at-all")
        .await
        .err()
        .expect("refused");
    assert!(error.contains("Auth required"), "{error}");
}

#[tokio::test]
async fn the_generated_token_is_private_and_goes_with_the_server() {
    let mut server = start(&[]).await;
    let path = server.token_file.clone().expect("a generated token file");
    let state = server.dir.path().join("state");
    assert_eq!(path.parent(), Some(state.as_path()));
    let file = std::fs::metadata(&path).expect("token file");
    assert_eq!(file.mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(&state).expect("state dir").mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        format!("{}\n", server.token)
    );
    assert_eq!(server.token.len(), 64);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let status = timeout(DEADLINE, server.child.wait())
        .await
        .expect("exits in time")
        .expect("status");
    assert!(status.success());
    assert!(!path.exists(), "the token file outlived its server");
}

#[tokio::test]
async fn a_token_file_is_used_and_an_open_one_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("token");
    std::fs::write(&file, "my-own-token-0123456789\n").expect("written");
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    let file_arg = file.to_str().expect("UTF-8");
    let output = command(
        dir.path(),
        &["--http", "127.0.0.1:0", "--token-file", file_arg],
    )
    .output()
    .await
    .expect("ran");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "bashtool: error: --token-file {file_arg}: group or others may access it (mode 644); run `chmod 600 {file_arg}`\n"
        )),
        "{stderr}"
    );

    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    let mut server = start(&["--token-file", file_arg]).await;
    assert_eq!(server.token_file, None);
    server.token = "my-own-token-0123456789".to_owned();
    let connection = server.connect().await;
    let result = connection.call(json!({"command": "echo ok"})).await;
    assert_eq!(result.is_error, Some(false));
}

#[tokio::test]
async fn each_session_has_its_own_shell_which_ends_with_the_session() {
    let server = start(&[]).await;
    let first = server.connect().await;
    let second = server.connect().await;
    first.call(json!({"command": "cd /"})).await;
    let result = second.call(json!({"command": "pwd"})).await;
    assert_eq!(
        text(&result),
        format!(
            "stdout:\n{dir}\nexit code 0\n[cwd: {dir}]",
            dir = server.dir.path().display()
        )
    );
    let first_shell = shell_pid(&first).await;
    let second_shell = shell_pid(&second).await;
    assert_ne!(first_shell, second_shell);
    // Closing the client ends its session (DELETE): its shell goes, the
    // other session's stays.
    first.client.cancel().await.expect("closed");
    wait_until_dead(&[first_shell]).await;
    assert!(pid_alive(second_shell));
    let result = second.call(json!({"command": "echo still"})).await;
    assert!(text(&result).starts_with("stdout:\nstill\n"));
}

/// Issue 35, item 7: `DELETE /mcp` ends a session with `204 No Content`
/// (the Python SDK takes `202` for a failure and says so on every clean
/// close), and answers `404` for an id that names no open session.
#[tokio::test]
async fn delete_ends_a_session_with_204_and_an_unknown_one_gets_404() {
    let server = start(&[]).await;
    let bearer = format!("Bearer {}", server.token);
    let opened = server.post(&[("authorization", bearer.as_str())]).await;
    assert_eq!(opened.status(), reqwest::StatusCode::OK);
    let id = opened
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .expect("ASCII")
        .to_owned();
    drop(opened);
    let delete = |id: String| {
        let request = reqwest::Client::new()
            .delete(&server.url)
            .header("authorization", bearer.as_str())
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-11-25");
        async move {
            timeout(DEADLINE, request.send())
                .await
                .expect("answer in time")
                .expect("HTTP answer")
        }
    };
    let ended = delete(id.clone()).await;
    assert_eq!(ended.status(), reqwest::StatusCode::NO_CONTENT);
    assert_eq!(ended.bytes().await.expect("body").len(), 0);
    for unknown in [id, "no-such-session".to_owned()] {
        let answer = delete(unknown.clone()).await;
        assert_eq!(answer.status(), reqwest::StatusCode::NOT_FOUND, "{unknown}");
        let body = answer.text().await.expect("body");
        assert!(
            body.contains("no MCP session has this Mcp-Session-Id"),
            "{body}"
        );
    }
    // A real client's clean close still works, and its shell goes.
    let connection = server.connect().await;
    let shell = shell_pid(&connection).await;
    connection.client.cancel().await.expect("closed");
    wait_until_dead(&[shell]).await;
}

#[tokio::test]
async fn sigterm_stops_running_commands_and_shells() {
    let mut server = start(&[]).await;
    let mut connection = server.connect().await;
    let shell = shell_pid(&connection).await;
    let pids = server.dir.path().join("pids");
    let _handle = connection
        .send(json!({"command": tree_script(&pids)}))
        .await;
    connection.progress_with("started").await;
    let mut pids = read_pids(&pids, 2).await;
    pids.push(shell);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    wait_until_dead(&pids).await;
    let status = timeout(DEADLINE, server.child.wait())
        .await
        .expect("exits in time")
        .expect("status");
    assert!(status.success());
}

#[tokio::test]
async fn a_hundred_concurrent_calls_in_one_session_all_succeed() {
    hundred_concurrent_calls(&[]).await;
}

#[tokio::test]
async fn a_hundred_concurrent_stateless_calls_all_succeed() {
    hundred_concurrent_calls(&["--stateless"]).await;
}

async fn hundred_concurrent_calls(flags: &[&str]) {
    let server = start(flags).await;
    let connection = server.connect().await;
    let mut handles = Vec::new();
    for index in 0..100 {
        handles.push(
            connection
                .send(json!({"command": format!("echo call-{index}")}))
                .await,
        );
    }
    let mut answers = Vec::new();
    for handle in handles {
        answers.push(answer(handle).await);
    }
    for (index, result) in answers.iter().enumerate() {
        assert_eq!(result.is_error, Some(false), "call {index}");
        assert!(
            text(result).starts_with(&format!("stdout:\ncall-{index}\nexit code 0")),
            "call {index}: {}",
            text(result)
        );
    }
}

impl HttpServer {
    /// The address the server listens on.
    fn address(&self) -> std::net::SocketAddr {
        self.url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|address| address.parse().ok())
            .unwrap_or_else(|| panic!("an address in {}", self.url))
    }

    /// How many descriptors the server has open.
    fn open_descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .expect("the server's descriptors")
            .count()
    }

    /// Waits until the server has at most `most` descriptors open.
    async fn descriptors_fall_to(&self, most: usize) {
        let mut open = 0;
        let fell = bashtool_tests::wait_until(DEADLINE, || {
            open = self.open_descriptors();
            open <= most
        })
        .await;
        assert!(
            fell,
            "the server still has {open} descriptors open, more than {most}"
        );
    }
}

/// A connection that sends the start of a request and never the rest.
async fn partial_request(address: std::net::SocketAddr) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
        .await
        .expect("write");
    stream
}

/// Resolves when the server closes `stream` (whatever it writes first).
async fn closed_by_server(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt as _;
    let mut buffer = [0_u8; 1024];
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            return;
        }
    }
}

/// Each of `streams` watched for the server closing it; the instant it
/// did arrives on the channel.
fn watch_closing(streams: Vec<tokio::net::TcpStream>) -> mpsc::UnboundedReceiver<Instant> {
    let (closed, closings) = mpsc::unbounded_channel();
    for stream in streams {
        let closed = closed.clone();
        tokio::spawn(async move {
            closed_by_server(stream).await;
            let _ = closed.send(Instant::now());
        });
    }
    closings
}

/// Waits for `count` closings; fails the test after [`DEADLINE`].
async fn closings(receiver: &mut mpsc::UnboundedReceiver<Instant>, count: usize) -> Vec<Instant> {
    let deadline = Instant::now() + DEADLINE;
    let mut instants = Vec::with_capacity(count);
    while instants.len() < count {
        let instant = tokio::time::timeout_at(deadline, receiver.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "only {} of {count} connections were closed by the server in time",
                    instants.len()
                )
            })
            .expect("watchers running");
        instants.push(instant);
    }
    instants
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_requests_are_closed_once_the_header_timeout_passes() {
    let server = start(&["--http-header-timeout", "2"]).await;
    let baseline = server.open_descriptors();
    let opened = Instant::now();
    let mut partials = Vec::new();
    for _ in 0..100 {
        partials.push(partial_request(server.address()).await);
    }
    let mut closing = watch_closing(partials);
    for closed in closings(&mut closing, 100).await {
        assert!(
            closed.duration_since(opened) >= std::time::Duration::from_secs(2),
            "closed after {:?}, before the timeout",
            closed.duration_since(opened)
        );
    }
    server.descriptors_fall_to(baseline).await;
    // The server still serves.
    let connection = server.connect().await;
    let result = connection.call(json!({"command": "echo served"})).await;
    assert_eq!(
        text(&result),
        "stdout:\nserved\nexit code 0\n[cwd: /tmp]"
            .replace("/tmp", &server.dir.path().display().to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_partial_requests_stays_under_the_cap_and_never_locks_out_a_client() {
    const CAP: usize = 50;
    const FLOOD: usize = 400;
    let server = start(&[
        "--http-max-connections",
        "50",
        "--http-header-timeout",
        "60",
    ])
    .await;
    let baseline = server.open_descriptors();
    let mut partials = Vec::new();
    for _ in 0..FLOOD {
        partials.push(partial_request(server.address()).await);
    }
    // Each connection beyond the cap closed the oldest partial one.
    let mut closing = watch_closing(partials);
    closings(&mut closing, FLOOD - CAP).await;
    server.descriptors_fall_to(baseline + CAP).await;
    // The cap is reached by connections without the token, which have 60 s
    // left: a client with the token is served now, not in a minute.
    let connection = server.connect().await;
    let result = connection.call(json!({"command": "echo while-full"})).await;
    assert!(
        text(&result).starts_with("stdout:\nwhile-full\nexit code 0"),
        "{}",
        text(&result)
    );
    // Its connections took the room of more partial requests.
    closings(&mut closing, 1).await;
    // And after: a second client, and the first one again.
    let second = server.connect().await;
    let result = second.call(json!({"command": "echo after"})).await;
    assert!(text(&result).starts_with("stdout:\nafter\nexit code 0"));
    let result = connection.call(json!({"command": "echo again"})).await;
    assert!(text(&result).starts_with("stdout:\nagain\nexit code 0"));
}

#[tokio::test]
async fn a_server_full_of_clients_with_the_token_turns_a_new_connection_away_at_once() {
    use tokio::io::AsyncReadExt as _;
    let server = start(&["--http-max-connections", "1"]).await;
    // A client with the token holds the only connection (kept alive).
    let client = reqwest::Client::new();
    let response = timeout(
        DEADLINE,
        client
            .post(&server.url)
            .header("authorization", format!("Bearer {}", server.token))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INITIALIZE)
            .send(),
    )
    .await
    .expect("answer in time")
    .expect("HTTP answer");
    assert_eq!(response.status(), 200);
    let _ = response.bytes().await;
    let mut turned_away = tokio::net::TcpStream::connect(server.address())
        .await
        .expect("connect");
    let mut answer = Vec::new();
    timeout(DEADLINE, turned_away.read_to_end(&mut answer))
        .await
        .expect("closed in time")
        .expect("read");
    assert_eq!(
        String::from_utf8_lossy(&answer),
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
         connection: close\r\nretry-after: 1\r\ncontent-length: 73\r\n\r\n\
         service unavailable: this server has as many connections as it takes now\n"
    );
    // Held to here, so that its connection stayed open throughout.
    drop(client);
}

/// `--http` with `--remote-shell` (what the macOS and Windows relay builds
/// serve): each MCP session gets its own `serve` over there, uploaded once
/// into the shell's home and found there by every later session, and its
/// own persistent shell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_http_session_gets_its_own_remote_shell_session() {
    let remote = tempfile::tempdir().expect("temp dir");
    let remote_root = remote.path().canonicalize().expect("canonical");
    for sub in ["home", "tmp", "state"] {
        std::fs::create_dir(remote_root.join(sub)).expect("mkdir");
    }
    let line = format!(
        "HOME={root}/home TMPDIR={root}/tmp BASHTOOL_STATE_DIR={root}/state XDG_CACHE_HOME= exec sh",
        root = remote_root.display()
    );
    let server = start(&["--remote-shell", &line]).await;
    let installed = remote_root.join(format!(
        "home/.cache/bashtool/{}/bashtool",
        env!("CARGO_PKG_VERSION")
    ));
    assert!(
        installed.is_file(),
        "the server connected (and uploaded) before it announced its address"
    );
    let first = server.connect().await;
    let second = server.connect().await;
    let result = first
        .call(json!({"command": "export MARK=first; echo set"}))
        .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let details = result
        .structured_content
        .clone()
        .expect("structured content");
    assert_eq!(details["environment"], format!("remote: {line}"));
    let result = second
        .call(json!({"command": "echo \"[${MARK:-unset}]\""}))
        .await;
    assert!(text(&result).contains("[unset]"), "{}", text(&result));
    let result = first.call(json!({"command": "echo \"[$MARK]\""})).await;
    assert!(text(&result).contains("[first]"), "{}", text(&result));
}

/// `--http` with a remote whose far side refuses after the server started:
/// a new MCP session still gets a server, whose instructions and every call
/// say why (issue 35's unavailable environment, per HTTP session), instead
/// of a failed session; once the far side answers again, the same
/// session's next call connects and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_session_whose_remote_refuses_says_why_and_recovers() {
    let remote = tempfile::tempdir().expect("temp dir");
    let remote_root = remote.path().canonicalize().expect("canonical");
    for sub in ["home", "tmp", "state"] {
        std::fs::create_dir(remote_root.join(sub)).expect("mkdir");
    }
    let closed = remote_root.join("closed");
    let line = format!(
        "if test -e {closed}; then echo 'the far side is closed' >&2; exit 3; fi; \
         HOME={root}/home TMPDIR={root}/tmp BASHTOOL_STATE_DIR={root}/state XDG_CACHE_HOME= exec sh",
        closed = closed.display(),
        root = remote_root.display()
    );
    let server = start(&["--remote-shell", &line]).await;
    std::fs::write(&closed, "").expect("close the far side");

    let session = server.connect().await;
    let info = session.client.peer_info().expect("server info");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(instructions.contains("\nUnavailable: "), "{instructions}");
    let refused = session.call(json!({"command": "echo never"})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(!text(&refused).contains("never\n"), "{}", text(&refused));

    std::fs::remove_file(&closed).expect("open the far side again");
    let result = session.call(json!({"command": "echo back"})).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert!(text(&result).contains("back"), "{}", text(&result));
}
