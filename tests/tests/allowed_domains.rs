//! The network limited to allowed domains, through the library: stateless
//! calls, a session's calls, its background and interactive jobs all go
//! through the sandbox's proxy, and what it refuses reaches the model as a
//! note naming the domain and the flag. A server of the test's on the
//! host's loopback decides what got through (it records every request
//! line); `localhost` is the allowed name, every other way must fail.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{
    BashTool, CommandExec as _, ExecMode, Jobs as _, SpawnOptions, ToolConfig, ToolResult,
};
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};
use bashtool_sandbox::SandboxConfig;
use bashtool_testkit::RecordingServer;
use bashtool_tests::{text, workspace};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn limited(dir: &Path) -> LocalConfig {
    LocalConfig {
        working_directory: dir.to_path_buf(),
        log_dir: Some(dir.join(".logs")),
        kill_grace: Duration::from_millis(500),
        confinement: SandboxConfig {
            allowed_domains: vec!["localhost".to_owned()],
            ..SandboxConfig::default()
        }
        .confinement(),
        ..LocalConfig::default()
    }
}

fn notes(result: &ToolResult) -> Vec<String> {
    result.details.notes.clone()
}

/// The note of a refused host, naming it and the flag.
fn refused(notes: &[String], host: &str) -> bool {
    notes.iter().any(|note| {
        note.contains(&format!("bashtool's proxy refused `{host}`"))
            && note.contains(&format!("`--allow-domain {host}`"))
    })
}

#[tokio::test]
async fn stateless_calls_reach_the_allowed_name_only_and_say_why_not() {
    let (_dir, root) = workspace();
    let server = RecordingServer::start("127.0.0.1:0", |path| {
        path.starts_with("/page").then(|| "pong\n".to_owned())
    });
    let port = server.port;
    let tool = BashTool::new(
        ToolConfig::default(),
        Arc::new(LocalExec::new(limited(&root))),
    );
    assert!(
        tool.spec()
            .description
            .contains("the network reaches only localhost through a proxy"),
        "{}",
        tool.spec().description
    );
    let result = tool
        .call(json!({"command": format!("curl -fsS http://localhost:{port}/page")}))
        .await;
    assert!(!result.is_error, "{}", result.text());
    assert!(result.text().contains("pong"), "{}", result.text());
    let sandbox = result.details.sandbox.clone().expect("sandbox details");
    assert_eq!(sandbox.network, "allowlist");
    assert_eq!(sandbox.allowed_domains, ["localhost"]);
    let details = serde_json::to_value(&result.details).expect("json");
    assert_eq!(details["sandbox"]["network"], "allowlist");
    assert_eq!(details["sandbox"]["allowed_domains"], json!(["localhost"]));

    let other = tool
        .call(json!({"command": "curl -fsS https://refused.example/"}))
        .await;
    assert!(other.is_error);
    assert!(
        refused(&notes(&other), "refused.example"),
        "{:?}",
        notes(&other)
    );
    assert!(
        other.text().contains("`--allow-domain refused.example`"),
        "{}",
        other.text()
    );

    // The proxy's note names the host; the general note on the network
    // would only repeat it.
    assert_eq!(notes(&other).len(), 1, "{:?}", notes(&other));

    // The address itself, the name without the proxy, a raw connect: no
    // route, and the note says what the network is and names the host.
    let network = "sandbox: the network reaches only the allowed domains (localhost), through \
                   bashtool's proxy (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at it); other \
                   hosts, addresses, direct connections and DNS lookups fail (servers the \
                   commands start on 127.0.0.1 or ::1 are reachable); ";
    let address = format!(
        "{network}a user who wants the command to reach `127.0.0.1` through the proxy runs \
         bashtool with `--allow-domain 127.0.0.1` (TOML: [sandbox] allowed_domains = \
         [\"127.0.0.1\"])"
    );
    let around = format!(
        "{network}`localhost` is allowed, but only through the proxy: the command went around \
         it (`--noproxy`, `NO_PROXY`, a raw socket or a tool that ignores the proxy variables); \
         use the proxy at http://127.0.0.1:3128 (or socks5h://127.0.0.1:3128)"
    );
    for (command, expected) in [
        (format!("curl -fsS http://127.0.0.1:{port}/page"), &address),
        (
            format!("curl -fsS --noproxy '*' http://localhost:{port}/page"),
            &around,
        ),
        (format!("echo x > /dev/tcp/127.0.0.1/{port}"), &address),
    ] {
        let result = tool.call(json!({ "command": command })).await;
        assert!(result.is_error, "{command}");
        assert_eq!(notes(&result), std::slice::from_ref(expected), "{command}");
    }
    assert_eq!(server.paths(), ["/page"]);
}

#[tokio::test]
async fn a_session_its_background_and_interactive_jobs_use_the_proxy() {
    let (_dir, root) = workspace();
    let server = RecordingServer::start("127.0.0.1:0", |path| {
        path.starts_with("/page").then(|| "pong\n".to_owned())
    });
    let port = server.port;
    let session = Session::new(SessionConfig {
        local: limited(&root),
        ..SessionConfig::default()
    })
    .expect("session");
    let run = |command: String, mode: ExecMode| {
        let session = session.clone();
        async move {
            session
                .spawn(
                    &command,
                    SpawnOptions::default()
                        .timeout(Duration::from_secs(30))
                        .mode(mode),
                )
                .await
                .expect("the command starts")
        }
    };
    // The shell itself got the variables.
    let result = run(
        format!("echo \"$HTTPS_PROXY $ALL_PROXY\"; curl -fsS http://localhost:{port}/page-session"),
        ExecMode::Foreground,
    )
    .await;
    assert_eq!(
        text(&result),
        "http://127.0.0.1:3128 socks5h://127.0.0.1:3128\npong",
        "{:?}",
        result.notes
    );
    // A direct connection from the session's shell: refused, and the note
    // names the host and the way round the proxy.
    let direct = run(
        format!("curl -fsS --noproxy '*' http://localhost:{port}/page-direct"),
        ExecMode::Foreground,
    )
    .await;
    assert!(!direct.success(), "{}", text(&direct));
    assert!(
        direct.notes.iter().any(|note| note.contains(
            "`localhost` is allowed, but only through the proxy: the command went around it"
        )),
        "{:?}",
        direct.notes
    );
    // A background job: what it reaches, and what it was refused comes
    // with the next call.
    let started = run(
        format!(
            "curl -fsS http://localhost:{port}/page-background; curl -fsS https://background.example/"
        ),
        ExecMode::Background,
    )
    .await;
    let job = started.background.expect("a job").id;
    session
        .wait(&job, Duration::from_secs(30), CancellationToken::new())
        .await
        .expect("the job ends");
    let next = run("true".to_owned(), ExecMode::Foreground).await;
    assert!(
        refused(&next.notes, "background.example"),
        "{:?}",
        next.notes
    );
    // An interactive job (a terminal): the same.
    let interactive = run(
        format!(
            "curl -fsS http://localhost:{port}/page-terminal; curl -fsS https://terminal.example/"
        ),
        ExecMode::Interactive,
    )
    .await;
    assert!(
        refused(&interactive.notes, "terminal.example"),
        "{:?}",
        interactive.notes
    );
    assert_eq!(
        server.paths(),
        ["/page-session", "/page-background", "/page-terminal"]
    );
}
