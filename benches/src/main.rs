//! `bashtool-bench`: the benchmark suite. Every figure is a ratio against a
//! baseline measured in the same run, with absolute numbers for context.
//!
//! `benches/run [--quick] [--only 1,3b,7,12]` installs the MCP servers item 7
//! compares against, builds `bashtool` and this suite with the `dist` profile, and prints
//! the table.

mod clients;
mod cpu;
mod default_bench;
mod effort;
mod external_client;
mod format_bench;
mod http_bench;
mod interactive_bench;
mod mcp_bench;
mod mcp_client;
mod memory_bench;
mod pipe_bench;
mod policy_bench;
mod remote_bench;
mod rounds;
mod run_info;
mod servers;
mod session_bench;
mod spawn_bench;
mod ssh_loopback;
mod stats;
mod table;
mod throughput;
mod timeout_bench;

use std::process::ExitCode;

use effort::Effort;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(throughput::CHILD_FLAG) {
        return throughput::child_main(&args[1..]);
    }
    let effort = Effort {
        quick: args.iter().any(|arg| arg == "--quick"),
    };
    // `--only 1,3`: run just those items.
    let only: Option<Vec<String>> = args
        .iter()
        .position(|arg| arg == "--only")
        .and_then(|index| args.get(index + 1))
        .map(|list| list.split(',').map(str::to_owned).collect());
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bashtool-bench: {error}");
            return ExitCode::FAILURE;
        }
    };
    let header = run_info::Header::at_start();
    // On a worker of the runtime, as the MCP server runs its handlers (the
    // thread that blocks on the runtime is woken by a worker for each event:
    // ~60 µs more per session call in turns, measured).
    let suite = async move {
        let wanted = |item: &str| {
            only.as_ref()
                .is_none_or(|items| items.iter().any(|wanted| wanted == item))
        };
        let mut rows = Vec::new();
        if wanted("1") {
            rows.extend(spawn_bench::run(effort).await?);
        }
        if wanted("2") {
            rows.extend(session_bench::run(effort).await?);
        }
        if wanted("3") {
            rows.extend(throughput::run(effort).await?);
        }
        if wanted("3b") {
            rows.extend(pipe_bench::run(effort).await?);
        }
        if wanted("4") {
            rows.extend(timeout_bench::run(effort).await?);
        }
        if wanted("5") {
            rows.extend(policy_bench::run(effort));
        }
        if wanted("6") {
            rows.extend(format_bench::run(effort));
        }
        if wanted("7") {
            rows.extend(mcp_bench::run(effort).await?);
        }
        if wanted("8") {
            rows.extend(memory_bench::run(effort).await?);
        }
        if wanted("9") {
            rows.extend(interactive_bench::run(effort).await?);
        }
        if wanted("10") {
            rows.extend(remote_bench::run(effort).await?);
        }
        if wanted("11") {
            rows.extend(http_bench::run(effort).await?);
        }
        if wanted("12") {
            rows.extend(default_bench::run(effort).await?);
        }
        anyhow::Ok(rows)
    };
    let result = runtime.block_on(async {
        tokio::spawn(suite)
            .await
            .unwrap_or_else(|error| Err(anyhow::anyhow!("the suite panicked: {error}")))
    });
    match result {
        Ok(rows) => {
            let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
            table::print(&rows, &header.lines(cores));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("bashtool-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}
