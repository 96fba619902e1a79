//! The resource limits of an environment's commands ([`LocalConfig::limits`]):
//! a cgroup per stateless call (kept for the next call once empty), per
//! background and interactive job, and per session (a session's calls run
//! in its shell itself, without a fork, so they share the shell's cgroup:
//! moving the shell into a cgroup of each call would cost two cgroup
//! migrations per call, more than the call). What a limit refused or
//! killed becomes a note in the call's result.
//!
//! Limits asked for ([`bashtool_core::LimitSettings::required`]) that this
//! machine cannot enforce make every call fail with the reason; the
//! default `pids` limit is kept only where cgroups can be had, and the
//! environment says when it is not in force.
//!
//! [`LocalConfig::limits`]: crate::LocalConfig::limits

use std::sync::Arc;

use bashtool_core::{ExecError, LimitEvents, LimitSettings, LimitsInfo, limit_notes};
use bashtool_process::{
    CgroupContainment, CgroupHost, CgroupLimits, Cgroups, CommandCgroup, Containment, Controller,
    Wrapper, join_first,
};

/// The limits of one environment.
#[derive(Debug)]
pub(crate) struct Limits {
    cgroups: Option<Arc<Cgroups>>,
    info: Option<LimitsInfo>,
    /// Why limits asked for cannot be enforced here: every call fails.
    error: Option<String>,
}

impl Limits {
    /// Prepares the cgroups `settings` need, on this machine.
    pub(crate) fn prepare(settings: &LimitSettings) -> Self {
        match prepare(settings) {
            Ok((cgroups, info)) => Self {
                cgroups,
                info: Some(info),
                error: None,
            },
            Err(error) => Self {
                cgroups: None,
                info: None,
                error: Some(error),
            },
        }
    }

    /// What the model is told about the limits (`details.limits`).
    pub(crate) fn info(&self) -> Option<LimitsInfo> {
        self.info.clone()
    }

    /// Why the limits asked for cannot be enforced, if they cannot.
    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// A cgroup for a stateless call (from the pool), or `None` when
    /// commands get none.
    pub(crate) fn for_call(&self) -> Result<Option<CallCgroup>, ExecError> {
        self.cgroup(Cgroups::take, true)
    }

    /// A cgroup of its own for a job or a session's shell.
    pub(crate) fn for_job(&self) -> Result<Option<CallCgroup>, ExecError> {
        self.cgroup(Cgroups::create, false)
    }

    fn cgroup(
        &self,
        make: impl FnOnce(&Cgroups) -> Result<Arc<CommandCgroup>, bashtool_process::Error>,
        pooled: bool,
    ) -> Result<Option<CallCgroup>, ExecError> {
        if let Some(message) = &self.error {
            return Err(ExecError::Other {
                message: message.clone(),
            });
        }
        let Some(cgroups) = &self.cgroups else {
            return Ok(None);
        };
        let cgroup = make(cgroups).map_err(crate::error::exec_error)?;
        Ok(Some(CallCgroup {
            cgroup: Some(cgroup),
            cgroups: Arc::clone(cgroups),
            info: self.info.clone().unwrap_or_default(),
            pooled,
        }))
    }
}

/// The cgroups for `settings` and what is in force, or why limits asked
/// for cannot be had.
fn prepare(settings: &LimitSettings) -> Result<(Option<Arc<Cgroups>>, LimitsInfo), String> {
    let asked = CgroupLimits {
        pids: settings.pids_in_force(),
        memory: settings.memory.max(),
        cpu_millis: settings.cpu.max().map(bashtool_core::CpuLimit::millis),
    };
    if asked == CgroupLimits::default() {
        return Ok((None, LimitsInfo::default()));
    }
    let required: Vec<Controller> = settings
        .required()
        .into_iter()
        .map(|kind| match kind {
            bashtool_core::LimitKind::Pids => Controller::Pids,
            bashtool_core::LimitKind::Memory => Controller::Memory,
            bashtool_core::LimitKind::Cpu => Controller::Cpu,
        })
        .collect();
    let host = CgroupHost::probe();
    let cgroups = Cgroups::prepare(&host, asked, &required).map_err(|error| {
        format!("{error}; commands do not run without the limits asked for (turn that limit off to run without it)")
    })?;
    let in_force = cgroups.limits();
    let default_pids = settings.pids == bashtool_core::Limit::Unset;
    let not_in_force = if cgroups.not_in_force().is_empty() {
        None
    } else if default_pids && in_force.pids.is_none() {
        Some(format!(
            "bashtool's default pids limit ({}) is not in force here: {}",
            bashtool_core::DEFAULT_PIDS_LIMIT,
            cgroups.not_in_force().join("; ")
        ))
    } else {
        Some(cgroups.not_in_force().join("; "))
    };
    let info = LimitsInfo {
        pids: in_force.pids,
        memory: in_force.memory,
        cpu: in_force
            .cpu_millis
            .and_then(bashtool_core::CpuLimit::from_millis),
        enforced_by: cgroups.is_active().then(|| cgroups.enforced_by()),
        not_in_force,
        pids_is_default: default_pids && in_force.pids.is_some(),
    };
    let cgroups = cgroups.is_active().then(|| Arc::new(cgroups));
    Ok((cgroups, info))
}

/// What the limits of `settings` would be on this machine, for a person
/// (`bashtool sandbox`): the limits in force and what enforces them, or
/// why limits asked for cannot be had.
pub fn limits_info(settings: &LimitSettings) -> Result<LimitsInfo, String> {
    prepare(settings).map(|(_, info)| info)
}

/// The cgroup of one call, job or session shell. Dropped, it goes back to
/// the environment: kept for the next call when empty, else removed once
/// empty.
#[derive(Debug)]
pub(crate) struct CallCgroup {
    cgroup: Option<Arc<CommandCgroup>>,
    cgroups: Arc<Cgroups>,
    info: LimitsInfo,
    pooled: bool,
}

impl CallCgroup {
    fn get(&self) -> &Arc<CommandCgroup> {
        // Taken out only by `Drop`.
        self.cgroup.as_ref().unwrap_or_else(|| unreachable!())
    }

    /// `wrappers` with the step into this cgroup first.
    pub(crate) fn wrappers(&self, wrappers: &[Arc<dyn Wrapper>]) -> Vec<Arc<dyn Wrapper>> {
        join_first(self.get(), wrappers)
    }

    /// `inner` and this cgroup together stop the tree of `root`.
    pub(crate) fn contain(&self, inner: Arc<dyn Containment>, root: u32) -> Arc<dyn Containment> {
        Arc::new(CgroupContainment::new(inner, Arc::clone(self.get()), root))
    }

    /// SIGKILL to everything still in it (`cgroup.kill` where v2 has it):
    /// after a tree was stopped, what the tracker could not see.
    pub(crate) fn kill_rest(&self) {
        let cgroup = self.get();
        if !cgroup.is_empty() && !cgroup.kill() {
            cgroup.signal_members(nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// The cgroup itself.
    pub(crate) fn cgroup(&self) -> &Arc<CommandCgroup> {
        self.get()
    }

    /// The notes for what the limits refused or killed since the last
    /// call of this (the current command's share). `killed`: the command's
    /// own process died of SIGKILL.
    pub(crate) fn notes(&self, killed: bool) -> Vec<String> {
        let counted = self.get().events();
        let events = LimitEvents {
            pids_refused: counted.pids_refused,
            oom_kills: counted.oom_kills,
            throttled_periods: counted.throttled_periods,
            throttled: counted.throttled,
        };
        limit_notes(&self.info, &events, killed)
    }

    /// What a background job's supervisor checks when the job ends, to
    /// say which limit the job reached (a note before its status line).
    pub(crate) fn job_checks(&self) -> Vec<crate::jobs::LimitCheck> {
        let info = &self.info;
        self.get()
            .counter_files()
            .into_iter()
            .filter_map(|counter| {
                let note = match counter.controller {
                    Controller::Pids => format!(
                        "background job reached its limit of {} processes (pids): %s forks failed with 'Resource temporarily unavailable'",
                        info.pids?
                    ),
                    Controller::Memory => format!(
                        "background job reached its memory limit of {}: the kernel killed %s of its processes",
                        bashtool_core::format_size(info.memory?)
                    ),
                    Controller::Cpu => format!(
                        "background job was slowed down by its cpu limit of {} CPUs in %s periods",
                        info.cpu?
                    ),
                };
                Some(crate::jobs::LimitCheck {
                    file: counter.path,
                    key: counter.key,
                    note,
                })
            })
            .collect()
    }
}

impl Drop for CallCgroup {
    fn drop(&mut self) {
        if let Some(cgroup) = self.cgroup.take() {
            if self.pooled {
                self.cgroups.give_back(cgroup);
            } else {
                self.cgroups.release(cgroup);
            }
        }
    }
}
