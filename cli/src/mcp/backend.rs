//! What an MCP server runs its calls with: the `bash` and `bash_jobs`
//! tools over one environment, and what `initialize` tells the model
//! about it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bashtool_core::{Approval, BashTool, JobsTool};
use rmcp::RoleServer;
use rmcp::model::Tool;
use rmcp::service::RequestContext;

use super::elicitation::{ElicitationApproval, can_ask};
use super::instructions::instructions;
use super::options::Settings;
use super::order::ArrivalOrder;
use super::tools::OutputSchema;
use crate::approvals::{ApprovalLog, Asking, Logged, RESTART_HINT};
use crate::environment::Exec;

/// Numbers the backends of this process, for the approvals log.
static BACKENDS: AtomicU64 = AtomicU64::new(1);

/// How this server's calls ask the person: through the client, when it
/// declared elicitation, each answer logged.
pub struct Asker {
    pub timeout: Duration,
    pub log: ApprovalLog,
}

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
    /// `None`: nobody is ever asked (`--approvals off`, or no log).
    pub asker: Option<Asker>,
}

impl Backend {
    /// The tools over `environment`, as an MCP server offers them.
    pub fn new(settings: &Settings, environment: &Exec) -> Self {
        let mut tool_config = settings.tool.clone();
        tool_config.jobs_tool = true;
        // Interactive jobs live in this server, which holds their terminals.
        tool_config.fields.interactive = true;
        let exec = environment.command_exec();
        let asker = asker(settings);
        let mut tool = BashTool::new(tool_config.clone(), exec);
        if asker.is_some() {
            // The relay build has no local environment: `outside_sandbox`
            // is not offered there.
            #[cfg(target_os = "linux")]
            if matches!(environment, Exec::Stateless(_) | Exec::Session(_))
                && let Some(unsandboxed) =
                    crate::approvals::unsandboxed_exec(&settings.environment.local)
            {
                tool = tool.with_unsandboxed(Arc::new(unsandboxed));
            }
            tool = tool.with_no_approval_hint(format!(
                "the user could not be asked: this MCP client does not support elicitation; {RESTART_HINT}"
            ));
        } else if settings.approvals.asking == Asking::Off {
            tool = tool.with_no_approval_hint(format!(
                "asking the user is off in this server (--approvals off); {RESTART_HINT}"
            ));
        } else {
            tool = tool.with_no_approval_hint(format!(
                "nobody can be asked: the approvals log cannot be kept (the server's log says \
                 why); {RESTART_HINT}"
            ));
        }
        Self {
            instructions: instructions(
                &tool.environment(),
                tool_config.persistent_session,
                tool_config.fields.interactive,
            ),
            tool,
            // Calls into the session must reach it in the order they arrived.
            order: tool_config.persistent_session.then(ArrivalOrder::default),
            jobs: Some(JobsTool::new(tool_config, environment.jobs())),
            output_schema: settings.output_schema,
            asker,
        }
    }

    /// Who the request in `context` asks: the person behind the client,
    /// when asking is on and the client can be asked; else nobody.
    pub fn approval_for(&self, context: &RequestContext<RoleServer>) -> Option<Arc<dyn Approval>> {
        let asker = self.asker.as_ref()?;
        can_ask(context).then(|| {
            Arc::new(Logged {
                inner: ElicitationApproval {
                    peer: context.peer.clone(),
                    timeout: asker.timeout,
                },
                log: asker.log.clone(),
            }) as Arc<dyn Approval>
        })
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
        self.tools_for(false)
    }

    /// The tools for a client that can be asked (`asking`: the bash tool
    /// offers `outside_sandbox` and `justification`) or not.
    pub fn tools_for(&self, asking: bool) -> Vec<Tool> {
        let mut tools = vec![super::tools::bash_tool_from(
            self.tool.spec_for(asking && self.asker.is_some()),
            self.output_schema,
        )];
        if let Some(jobs) = &self.jobs {
            tools.push(super::tools::jobs_tool(&jobs.spec(), self.output_schema));
        }
        tools
    }
}

/// The asker of a server whose flags allow asking, with its log; `None`
/// when asking is off, or when the log cannot be kept (then nobody is
/// asked: an answer must be on record).
fn asker(settings: &Settings) -> Option<Asker> {
    if settings.approvals.asking == Asking::Off {
        return None;
    }
    let number = BACKENDS.fetch_add(1, Ordering::Relaxed);
    let mut label = format!("mcp pid {} session {number}", std::process::id());
    if let Some(name) = &settings.environment.session_name {
        label.push_str(&format!(" (--session {name})"));
    }
    match ApprovalLog::open(label) {
        Ok(log) => Some(Asker {
            timeout: settings.approvals.timeout,
            log,
        }),
        Err(error) => {
            tracing::error!(%error, "the approvals log cannot be kept: nobody will be asked");
            None
        }
    }
}
