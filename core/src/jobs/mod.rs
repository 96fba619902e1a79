//! Background and interactive jobs: the [`Jobs`] port and the `bash_jobs`
//! tool over it.

mod port;
mod render;
mod tool;

#[cfg(feature = "mock")]
pub use port::MockJobs;
pub use port::{JobError, JobInfo, JobInput, JobOutput, JobState, Jobs, ReadFrom};
pub use render::{human_runtime, info_line, state_text};
pub use tool::{
    DEFAULT_TAIL_LINES, DEFAULT_WAIT_SECS, DEFAULT_YIELD_SECS, JOBS_TOOL_NAME, JobsTool,
    MAX_TAIL_LINES, MAX_WAIT_SECS, jobs_tool_spec,
};
