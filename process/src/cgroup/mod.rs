//! Resource limits per command through cgroups: what the machine offers
//! ([`CgroupHost`]), an environment's cgroups ([`Cgroups`]), one command's
//! cgroup ([`CommandCgroup`]), the step that puts a launched process into
//! it before exec ([`JoinCgroup`]), and stopping a tree through it
//! ([`CgroupContainment`]: `cgroup.kill` where v2 has it).
//!
//! Both interfaces: v2 (the unified hierarchy, usually with a user subtree
//! delegated by systemd) and the v1 `pids`, `memory` and `cpu` controllers
//! (root), and the hybrid of both (v1 controllers, v2 for `cgroup.kill`).

mod cgroups;
mod contain;
mod group;
mod host;
mod join;

pub use cgroups::{Cgroups, sweep as sweep_lingering_cgroups};
pub use contain::CgroupContainment;
pub use group::{CgroupLimits, CommandCgroup, CounterFile, Counters};
pub use host::{CgroupHost, Controller, Hierarchy, Version as CgroupVersion};
pub use join::{JoinCgroup, join_first};
