//! What an MCP server runs its calls with: the `bash` and `bash_jobs`
//! tools over one environment, and what `initialize` tells the model
//! about it.

use bashtool_core::{BashTool, JobsTool};
use rmcp::model::Tool;

use super::instructions::instructions;
use super::options::Settings;
use super::order::ArrivalOrder;
use super::tools::OutputSchema;
use crate::environment::Exec;

/// What the server runs commands with.
pub struct Backend {
    pub tool: BashTool,
    /// Set when all calls go into one persistent session.
    pub order: Option<ArrivalOrder>,
    /// Set when the environment keeps background jobs the model can reach.
    pub jobs: Option<JobsTool>,
    /// What `initialize` tells the model (see [`super::instructions`]).
    pub instructions: String,
    /// How much the tools' output schema spells out.
    pub output_schema: OutputSchema,
}

impl Backend {
    /// The tools over `environment`, as an MCP server offers them.
    pub fn new(settings: &Settings, environment: &Exec) -> Self {
        let mut tool_config = settings.tool.clone();
        tool_config.jobs_tool = true;
        // Interactive jobs live in this server, which holds their terminals.
        tool_config.fields.interactive = true;
        let exec = environment.command_exec();
        Self {
            instructions: instructions(
                &exec.environment(),
                tool_config.persistent_session,
                tool_config.fields.interactive,
            ),
            tool: BashTool::new(tool_config.clone(), exec),
            // Calls into the session must reach it in the order they arrived.
            order: tool_config.persistent_session.then(ArrivalOrder::default),
            jobs: Some(JobsTool::new(tool_config, environment.jobs())),
            output_schema: settings.output_schema,
        }
    }

    /// Tells the client, in the instructions, why the environment could
    /// not be opened (each call says it too); a remote one is tried again
    /// by every call.
    pub fn explain_problem(&mut self, problem: &str, remote: bool) {
        self.instructions.push_str("\nUnavailable: ");
        self.instructions.push_str(problem);
        self.instructions.push_str(if remote {
            "\nEvery call tries to reach the remote environment again, and fails with the reason \
             while it cannot; the user has to fix the setup (see the reason)."
        } else {
            "\nEvery call fails with this reason until the user fixes the setup and restarts the \
             server."
        });
    }

    /// The tools as `tools/list` shows them (and `bashtool schema --format
    /// mcp` prints the first): the bash tool's spec is the environment's.
    pub fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![super::tools::bash_tool_from(
            self.tool.spec(),
            self.output_schema,
        )];
        if let Some(jobs) = &self.jobs {
            tools.push(super::tools::jobs_tool(&jobs.spec(), self.output_schema));
        }
        tools
    }
}
