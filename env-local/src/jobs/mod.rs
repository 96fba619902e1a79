//! Background jobs (`mode: "background"`): detached from the
//! call, run by a supervisor that records how they ended, output to a file,
//! read by cursor; the [`bashtool_core::Jobs`] port over them, in this
//! process ([`JobTable`]) and across processes ([`RecordedJobs`]).

pub(crate) mod copier;
mod interactive;
mod recorded;
mod records;
mod supervisor;
mod table;
mod window;

pub use interactive::InteractiveJobs;
pub(crate) use interactive::{detection_note, port_state};
pub use recorded::RecordedJobs;
pub use records::JobStore;
pub(crate) use supervisor::LimitCheck;
pub use supervisor::supervised_argv;
pub use table::JobTable;
pub(crate) use table::{StartedJob, new_job_id, not_stopped};
