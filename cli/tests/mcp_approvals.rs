//! Approvals through MCP elicitation, end to end: the real binary driven by
//! the rmcp client over stdio, as a person behind it would answer (allow
//! once, allow for this session, deny, decline, cancel, silence). What ran
//! is decided by the test from the files and git refs it reads itself,
//! never from what the server says.

use std::collections::VecDeque;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RequestHandle, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::timeout;

mod mcp_support;
use mcp_support::{DEADLINE, answer, send_call, text};

/// What the person does with the next question.
#[derive(Debug, Clone, Copy)]
enum Act {
    Choose(&'static str),
    Decline,
    Cancel,
    /// Never answers.
    Silence,
}

/// A client that declares elicitation (or not) and answers its questions
/// as scripted, sending each question's text to the test.
#[derive(Clone)]
struct Person {
    elicitation: bool,
    acts: Arc<Mutex<VecDeque<Act>>>,
    questions: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Person {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            panic!("a form was expected");
        };
        let schema = serde_json::to_value(&requested_schema).expect("schema");
        assert_eq!(schema["required"], json!(["decision"]), "{schema}");
        let _ = self.questions.send(message);
        let act = self
            .acts
            .lock()
            .expect("lock")
            .pop_front()
            .expect("a question the test did not expect");
        match act {
            Act::Choose(choice) => Ok(ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"decision": choice}))),
            Act::Decline => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Act::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Act::Silence => std::future::pending().await,
        }
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = if self.elicitation {
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities")
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("approvals-test", "1.0"))
    }
}

struct Server {
    client: RunningService<RoleClient, Person>,
    acts: Arc<Mutex<VecDeque<Act>>>,
    questions: mpsc::UnboundedReceiver<String>,
    dir: tempfile::TempDir,
    /// A directory outside every writable root of the sandbox (not under
    /// /tmp, not the workspace).
    outside: tempfile::TempDir,
}

async fn start(elicitation: bool, args: &[&str]) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let outside =
        bashtool_tests::outside_the_writable_roots(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_bashtool"));
    command
        .arg("mcp")
        .arg("--cwd")
        .arg(dir.path())
        .args(args)
        .env("XDG_CONFIG_HOME", dir.path())
        .env("BASHTOOL_STATE_DIR", dir.path().join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG");
    let transport = TokioChildProcess::new(command).expect("spawn bashtool mcp");
    let acts = Arc::new(Mutex::new(VecDeque::new()));
    let (sender, questions) = mpsc::unbounded_channel();
    let person = Person {
        elicitation,
        acts: Arc::clone(&acts),
        questions: sender,
    };
    let client = timeout(DEADLINE, person.serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize");
    Server {
        client,
        acts,
        questions,
        dir,
        outside,
    }
}

impl Server {
    fn will(&self, acts: &[Act]) {
        self.acts.lock().expect("lock").extend(acts.iter().copied());
    }

    async fn send(&self, arguments: Value) -> RequestHandle<RoleClient> {
        send_call(&self.client, "bash", arguments).await
    }

    async fn call(&self, arguments: Value) -> CallToolResult {
        answer(self.send(arguments).await).await
    }

    /// The next question the person was asked.
    async fn question(&mut self) -> String {
        timeout(DEADLINE, self.questions.recv())
            .await
            .expect("a question in time")
            .expect("client open")
    }

    fn no_more_questions(&mut self) {
        assert_eq!(self.questions.try_recv().ok(), None);
    }

    async fn bash_schema(&self) -> (Value, String) {
        let tools = self.client.list_all_tools().await.expect("tools/list");
        let bash = tools.iter().find(|tool| tool.name == "bash").expect("bash");
        (
            Value::Object((*bash.input_schema).clone()),
            bash.description.clone().unwrap_or_default().to_string(),
        )
    }

    fn target(&self) -> PathBuf {
        self.outside.path().join("written")
    }

    fn log(&self) -> Vec<Value> {
        let path = self.dir.path().join("state").join("approvals.jsonl");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }
}

fn details(result: &CallToolResult) -> Value {
    result.structured_content.clone().expect("details")
}

const REFUSED_TAIL: &str = "so nothing ran. Do not retry the same command or a way around it; \
    change the approach, or ask the user what they want.";

#[tokio::test]
async fn a_client_without_elicitation_is_offered_neither_field_and_told_who_could_allow() {
    let server = start(false, &["--stateless"]).await;
    let (schema, description) = server.bash_schema().await;
    assert!(
        schema["properties"].get("outside_sandbox").is_none(),
        "{schema}"
    );
    assert!(
        schema["properties"].get("justification").is_none(),
        "{schema}"
    );
    assert!(!description.contains("outside_sandbox"), "{description}");
    let refused = server
        .call(json!({"command": "ls", "outside_sandbox": true}))
        .await;
    assert_eq!(details(&refused)["field"], "outside_sandbox");
    assert!(
        text(&refused)
            .contains("the user could not be asked: this MCP client does not support elicitation"),
        "{}",
        text(&refused)
    );
    let blocked = server.call(json!({"command": "git push --force"})).await;
    assert_eq!(blocked.is_error, Some(true));
    assert_eq!(details(&blocked)["error_kind"], "blocked");
    assert!(
        text(&blocked).contains("this MCP client does not support elicitation; the user could restart bashtool with --no-policy"),
        "{}",
        text(&blocked)
    );
    assert!(server.log().is_empty());
}

#[tokio::test]
async fn approvals_off_offers_neither_field_and_asks_nothing() {
    let mut server = start(true, &["--stateless", "--approvals", "off"]).await;
    let (schema, description) = server.bash_schema().await;
    assert!(
        schema["properties"].get("outside_sandbox").is_none(),
        "{schema}"
    );
    assert!(
        schema["properties"].get("justification").is_none(),
        "{schema}"
    );
    assert!(!description.contains("justification"), "{description}");
    let blocked = server.call(json!({"command": "git push --force"})).await;
    assert!(
        text(&blocked).contains("asking the user is off in this server (--approvals off)"),
        "{}",
        text(&blocked)
    );
    server.no_more_questions();
}

/// The first case, in the persistent session (the default) and
/// stateless: a write the sandbox refuses; retried with `outside_sandbox`,
/// it runs after *allow once*; the next call asks again, and a *deny*
/// runs nothing.
#[tokio::test]
async fn a_refused_write_runs_outside_the_sandbox_after_allow_once_only() {
    for flags in [&[][..], &["--stateless"][..]] {
        let mut server = start(true, flags).await;
        let (schema, description) = server.bash_schema().await;
        assert_eq!(schema["properties"]["outside_sandbox"]["type"], "boolean");
        assert_eq!(schema["properties"]["justification"]["type"], "string");
        assert!(
            description.contains("outside_sandbox: true"),
            "{description}"
        );
        let target = server.target();
        let command = format!("echo first > {}", target.display());
        let refused = server.call(json!({"command": command})).await;
        assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
        assert!(!target.exists());
        assert!(
            details(&refused)["notes"]
                .as_array()
                .is_some_and(
                    |notes| notes.iter().any(|note| note.as_str().is_some_and(
                        |note| note.starts_with("You may call again with outside_sandbox")
                    ))
                ),
            "{}",
            details(&refused)
        );

        server.will(&[Act::Choose("allow_once")]);
        let allowed = server
            .call(json!({
                "command": command,
                "outside_sandbox": true,
                "justification": "the task writes the report outside the workspace",
            }))
            .await;
        let question = server.question().await;
        assert!(
            question.contains(&format!("Command:\n  | {command}\n")),
            "{question}"
        );
        assert!(
            question.contains(&format!("Directory: {}", server.dir.path().display())),
            "{question}"
        );
        assert!(
            question.contains("Reason: the task writes the report outside the workspace"),
            "{question}"
        );
        assert!(question.contains("OUTSIDE the sandbox"), "{question}");
        assert_eq!(allowed.is_error, Some(false), "{}", text(&allowed));
        assert_eq!(
            std::fs::read_to_string(&target).expect("written"),
            "first\n"
        );
        assert!(
            text(&allowed).ends_with(
                "[ran outside the sandbox, in a fresh shell: approved once by the user, asked through the MCP client]"
            ),
            "{}",
            text(&allowed)
        );
        let approvals = &details(&allowed)["approvals"];
        assert_eq!(approvals[0]["kind"], "sandbox");
        assert_eq!(approvals[0]["answer"], "allow_once");
        assert_eq!(approvals[0]["by"], "the user, asked through the MCP client");

        // Once: the next call outside the sandbox is asked again.
        server.will(&[Act::Choose("deny")]);
        let second = format!("echo second > {}", target.display());
        let denied = server
            .call(json!({"command": second, "outside_sandbox": true}))
            .await;
        let question = server.question().await;
        assert!(
            question.contains(
                "Reason: the model asks to run it without the sandbox and gave no justification"
            ),
            "{question}"
        );
        assert_eq!(denied.is_error, Some(true));
        assert_eq!(
            text(&denied),
            format!(
                "Not run: the user refused to run this command outside the sandbox, {REFUSED_TAIL}"
            )
        );
        assert_eq!(details(&denied)["error_kind"], "not_approved");
        assert_eq!(std::fs::read_to_string(&target).expect("kept"), "first\n");
        // And in the sandbox, as before.
        let again = server.call(json!({"command": second})).await;
        assert_eq!(again.is_error, Some(true));
        assert_eq!(std::fs::read_to_string(&target).expect("kept"), "first\n");
        server.no_more_questions();

        let log = server.log();
        let answers: Vec<&str> = log
            .iter()
            .filter_map(|line| line["answer"].as_str())
            .collect();
        assert_eq!(answers, ["allow_once", "denied"]);
        assert_eq!(log[0]["command"], command);
        assert_eq!(log[0]["kind"], "sandbox");
        let state = server.dir.path().join("state");
        let mode = |path: &Path| {
            std::fs::metadata(path)
                .expect("metadata")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&state.join("approvals.jsonl")), 0o600);
    }
}

#[tokio::test]
async fn allow_for_this_session_covers_the_next_identical_command_and_ends_with_the_session() {
    let mut server = start(true, &["--stateless"]).await;
    let target = server.target();
    let command = format!("echo line >> {}", target.display());
    let input = json!({"command": command, "outside_sandbox": true});
    server.will(&[Act::Choose("allow_session")]);
    let first = server.call(input.clone()).await;
    assert_eq!(first.is_error, Some(false), "{}", text(&first));
    server.question().await;
    let second = server.call(input.clone()).await;
    assert_eq!(second.is_error, Some(false), "{}", text(&second));
    assert!(
        text(&second).ends_with(
            "approved earlier for this session by the user, asked through the MCP client]"
        ),
        "{}",
        text(&second)
    );
    server.no_more_questions();
    assert_eq!(
        std::fs::read_to_string(&target).expect("written"),
        "line\nline\n"
    );
    // Another command is another question.
    server.will(&[Act::Decline]);
    let other = server
        .call(json!({"command": format!("echo other >> {}", target.display()), "outside_sandbox": true}))
        .await;
    server.question().await;
    assert_eq!(
        text(&other),
        format!(
            "Not run: the user refused to run this command outside the sandbox, {REFUSED_TAIL}"
        )
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("kept"),
        "line\nline\n"
    );
    // A new MCP session (a new server) does not inherit the answer.
    let Server { outside, .. } = server;
    let mut next = start(true, &["--stateless"]).await;
    next.will(&[Act::Cancel]);
    let result = next.call(input).await;
    next.question().await;
    assert_eq!(
        text(&result),
        format!(
            "Not run: the user cancelled the question to run this command outside the sandbox, \
             {REFUSED_TAIL}"
        )
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("kept"),
        "line\nline\n"
    );
    drop(outside);
}

/// A real `git push --force` to a bare repository the test made (where
/// the sandbox lets it write): refused
/// on *deny*, pushed on *allow once*; the test reads the pushed ref.
#[tokio::test]
async fn a_blocked_git_push_force_runs_only_after_approval() {
    let mut server = start(true, &["--stateless"]).await;
    let work = server.dir.path().to_owned();
    let work = work.as_path();
    // Under /tmp: writable in the sandbox, where the approved push runs.
    let remote = tempfile::tempdir().expect("remote dir");
    let bare = remote.path().join("remote.git");
    let git = |args: &[&str], dir: &Path| {
        let status = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "--bare", &bare.display().to_string()], work);
    git(&["init", "-q", "-b", "main", "repo"], work);
    let repo = work.join("repo");
    git(&["commit", "-q", "--allow-empty", "-m", "one"], &repo);
    let head = |dir: &Path, name: &str| {
        let output = std::process::Command::new("git")
            .args(["rev-parse", "--verify", "-q", name])
            .current_dir(dir)
            .output()
            .expect("git rev-parse");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    let command = format!("git push -q --force {} main", bare.display());
    let input = json!({
        "command": command,
        "working_directory": "repo",
        "justification": "the user rewrote the branch on purpose",
    });

    server.will(&[Act::Choose("deny")]);
    let denied = server.call(input.clone()).await;
    let question = server.question().await;
    assert!(
        question.contains("safety policy blocks (rule git_push_force)"),
        "{question}"
    );
    assert!(
        question.contains("The model says: the user rewrote the branch on purpose"),
        "{question}"
    );
    assert!(
        question.contains(&format!("Directory: {}", work.join("repo").display())),
        "{question}"
    );
    assert_eq!(
        text(&denied),
        format!(
            "Not run: the user refused to run this command past the safety policy (rule \
             git_push_force), {REFUSED_TAIL}"
        )
    );
    assert_eq!(details(&denied)["rule"], "git_push_force");
    assert_eq!(head(&bare, "main"), "");

    server.will(&[Act::Choose("allow_once")]);
    let pushed = server.call(input).await;
    server.question().await;
    assert_eq!(pushed.is_error, Some(false), "{}", text(&pushed));
    assert_eq!(head(&bare, "main"), head(&repo, "HEAD"));
    assert!(
        text(&pushed).ends_with(
            "[ran past the safety policy rule git_push_force: approved once by the user, asked through the MCP client]"
        ),
        "{}",
        text(&pushed)
    );
    // Past the policy, the command still ran in the sandbox.
    assert_eq!(details(&pushed)["sandbox"]["mode"], "workspace-write");
}

#[tokio::test]
async fn no_answer_within_the_timeout_runs_nothing() {
    let mut server = start(true, &["--stateless", "--approval-timeout", "1"]).await;
    let target = server.target();
    server.will(&[Act::Silence]);
    let result = server
        .call(json!({"command": format!("touch {}", target.display()), "outside_sandbox": true}))
        .await;
    server.question().await;
    assert_eq!(
        text(&result),
        format!(
            "Not run: the user did not answer in time to run this command outside the sandbox, \
             {REFUSED_TAIL}"
        )
    );
    assert!(!target.exists());
    assert_eq!(server.log()[0]["answer"], "no_answer");
}

#[tokio::test]
async fn cancelling_the_call_during_the_question_runs_nothing() {
    let mut server = start(true, &["--stateless"]).await;
    let target = server.target();
    server.will(&[Act::Silence]);
    let handle = server
        .send(json!({"command": format!("touch {}", target.display()), "outside_sandbox": true}))
        .await;
    server.question().await;
    handle
        .cancel(Some("the user pressed stop".to_owned()))
        .await
        .expect("cancel sent");
    // The answer is logged before the call could run anything; after a
    // refusal it never runs.
    let log_has_answer = bashtool_tests::wait_until(DEADLINE, || !server.log().is_empty()).await;
    assert!(log_has_answer, "the cancelled question was not logged");
    assert_eq!(server.log()[0]["answer"], "not_asked");
    let after = server.call(json!({"command": "echo still-serving"})).await;
    assert_eq!(text(&after).lines().nth(1), Some("still-serving"));
    assert!(!target.exists());
}

/// Over HTTP each MCP session has its own standing answers: *allow for
/// this session* in one is asked again in the next.
#[tokio::test]
async fn over_http_a_session_answer_stays_in_its_own_mcp_session() {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use tokio::io::{AsyncBufReadExt as _, BufReader};

    let dir = tempfile::tempdir().expect("temp dir");
    let outside =
        bashtool_tests::outside_the_writable_roots(env!("CARGO_TARGET_TMPDIR"), "outside-");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_bashtool"))
        .args(["mcp", "--stateless", "--http", "127.0.0.1:0", "--cwd"])
        .arg(dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .env("BASHTOOL_STATE_DIR", dir.path().join("state"))
        .env_remove("BASHTOOL_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn bashtool mcp --http");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let (mut url, mut token) = (None, None);
    while url.is_none() || token.is_none() {
        let line = timeout(DEADLINE, lines.next_line())
            .await
            .expect("announced in time")
            .expect("stderr")
            .expect("running");
        if let Some(rest) = line.strip_prefix("bashtool: MCP over HTTP at ") {
            url = Some(rest.to_owned());
        } else if let Some(rest) = line.strip_prefix("bashtool: bearer token (also in ") {
            token = Some(rest.split_once("): ").expect("token line").1.to_owned());
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let (url, token) = (url.expect("url"), token.expect("token"));
    let connect = |acts: &[Act]| {
        let transport = StreamableHttpClientTransport::with_client(
            reqwest::Client::new(),
            StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(token.clone()),
        );
        let (sender, questions) = mpsc::unbounded_channel();
        let person = Person {
            elicitation: true,
            acts: Arc::new(Mutex::new(acts.iter().copied().collect())),
            questions: sender,
        };
        async move {
            let client = timeout(DEADLINE, person.serve(transport))
                .await
                .expect("initialize in time")
                .expect("initialize");
            (client, questions)
        }
    };
    let target = outside.path().join("written");
    let input =
        json!({"command": format!("echo x >> {}", target.display()), "outside_sandbox": true});
    let (first, mut first_questions) = connect(&[Act::Choose("allow_session")]).await;
    let (second, mut second_questions) = connect(&[Act::Decline]).await;
    for _ in 0..2 {
        let result = answer(send_call(&first, "bash", input.clone()).await).await;
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
    }
    assert!(first_questions.recv().await.is_some());
    assert!(
        first_questions.try_recv().is_err(),
        "asked twice in one session"
    );
    let refused = answer(send_call(&second, "bash", input.clone()).await).await;
    assert!(second_questions.recv().await.is_some());
    assert_eq!(
        text(&refused),
        format!(
            "Not run: the user refused to run this command outside the sandbox, {REFUSED_TAIL}"
        )
    );
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "x\nx\n");
    drop(child);
}
