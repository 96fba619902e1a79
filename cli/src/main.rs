//! `bashtool`: the command-line face of the bash tool. Thin: parsing and
//! printing here, everything else in `bashtool-core`, `bashtool-env-local`
//! and `bashtool-env-remote`.
//!
//! On Linux it is the whole tool. Elsewhere (macOS, Windows) it is a relay:
//! the same client side (the tool, its policy, the shortening, MCP over
//! stdio and HTTP) with commands run only in a Linux environment reached
//! with `--remote-shell` or `--remote`; the local environment, the sandbox
//! and `serve` are Linux dependencies that such a build leaves out
//! (`relay.rs`).

#![forbid(unsafe_code)]
// The doc comments on the clap structs are the `--help` text, written for a
// terminal rather than as Markdown: `[policy]` and `<pwd>` there are literal.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

mod approvals;
mod call;
mod check;
mod config;
mod environment;
mod exit;
mod generate;
mod jobs;
mod limits;
mod logging;
mod mcp;
mod options;
mod redact;
#[cfg(not(target_os = "linux"))]
mod relay;
mod remote;
mod run;
mod sandbox;
mod schema;
#[cfg(target_os = "linux")]
mod serve;
#[cfg(target_os = "linux")]
mod session;
mod signals;

use std::process::ExitCode;

use std::sync::LazyLock;

use clap::{CommandFactory as _, Parser, Subcommand};

/// A bash tool for LLM agents: runs commands without hanging, orphaning or
/// flooding the context, and refuses classic destructive mistakes.
#[derive(Debug, Parser)]
#[command(name = "bashtool", version, long_version = LONG_VERSION.as_str(), after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `bashtool --version` (`-V` is the version alone): the version and the protocols this binary speaks,
/// so that a mismatch with a client or a `--remote` peer can be seen at once.
static LONG_VERSION: LazyLock<String> = LazyLock::new(|| {
    let mcp: Vec<&str> = rmcp::model::ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .rev()
        .map(rmcp::model::ProtocolVersion::as_str)
        .collect();
    format!(
        "{}\nMCP protocol versions: {} (stdio; --http: those with sessions, {} and older)\n\
         serve protocol: {}",
        env!("CARGO_PKG_VERSION"),
        mcp.join(", "),
        rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE.as_str(),
        bashtool_env_remote::protocol::PROTOCOL_VERSION,
    )
});

const AFTER_HELP: &str = "Examples:\n  bashtool run -- cargo test\n  \
echo '{\"command\": \"ls\"}' | bashtool call\n  bashtool schema --format openai\n  \
bashtool check 'git push --force'\n  claude mcp add bashtool -- bashtool mcp\n\n\
Each subcommand has its own --help.";

#[derive(Debug, Subcommand)]
enum Command {
    Run(run::RunArgs),
    Call(call::CallArgs),
    Schema(schema::SchemaArgs),
    Check(check::CheckArgs),
    Mcp(mcp::McpArgs),
    Jobs(jobs::JobsArgs),
    #[cfg(target_os = "linux")]
    Sandbox(sandbox::SandboxCommandArgs),
    #[cfg(target_os = "linux")]
    Serve(serve::ServeArgs),
    Completions(generate::CompletionsArgs),
    Man(generate::ManArgs),
}

fn main() -> ExitCode {
    // A background job's output filter (see `redact`): before any parsing,
    // it is not a command a person runs. (Linux's: the relay build starts
    // no job here.)
    #[cfg(target_os = "linux")]
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(redact::FILTER_ARGUMENT))
    {
        return redact::run_filter();
    }
    let cli = Cli::parse();
    let name = match &cli.command {
        Command::Run(_) => "run",
        Command::Call(_) => "call",
        Command::Schema(_) => "schema",
        Command::Check(_) => "check",
        Command::Mcp(_) => "mcp",
        Command::Jobs(_) => "jobs",
        #[cfg(target_os = "linux")]
        Command::Sandbox(_) => "sandbox",
        #[cfg(target_os = "linux")]
        Command::Serve(_) => "serve",
        Command::Completions(_) => "completions",
        Command::Man(_) => "man",
    };
    let outcome = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Call(args) => call::run(&args),
        Command::Schema(args) => schema::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Mcp(args) => mcp::run(&args),
        Command::Jobs(args) => jobs::run(&args),
        #[cfg(target_os = "linux")]
        Command::Sandbox(args) => sandbox::run(&args),
        #[cfg(target_os = "linux")]
        Command::Serve(args) => serve::run(&args),
        Command::Completions(args) => generate::completions(&args, Cli::command()),
        Command::Man(args) => generate::man(&args, Cli::command()),
    };
    match outcome {
        Ok(code) => code,
        Err(error) if exit::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bashtool: error: {error:#}");
            eprintln!("hint: `bashtool {name} --help` shows the usage and examples");
            ExitCode::from(exit::USAGE)
        }
    }
}
