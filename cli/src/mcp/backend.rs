//! What an MCP server runs its calls with: the `bash` and `bash_jobs`
//! tools over one environment, and what `initialize` tells the model
//! about it.

use bashtool_core::{BashTool, JobsTool};

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
}
