//! `bashtool`: the command-line face of the bash tool. Thin: parsing and
//! printing here, everything else in `bashtool-core` and `bashtool-env-local`.

mod call;
mod check;
mod exit;
mod jobs;
mod mcp;
mod options;
mod remote;
mod run;
mod schema;
mod serve;
mod session;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A bash tool for LLM agents: runs commands without hanging, orphaning or
/// flooding the context, and refuses classic destructive mistakes.
#[derive(Debug, Parser)]
#[command(name = "bashtool", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

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
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let name = match &cli.command {
        Command::Run(_) => "run",
        Command::Call(_) => "call",
        Command::Schema(_) => "schema",
        Command::Check(_) => "check",
        Command::Mcp(_) => "mcp",
        Command::Jobs(_) => "jobs",
        Command::Serve(_) => "serve",
    };
    let outcome = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Call(args) => call::run(&args),
        Command::Schema(args) => schema::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Mcp(args) => mcp::run(&args),
        Command::Jobs(args) => jobs::run(&args),
        Command::Serve(args) => serve::run(&args),
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
