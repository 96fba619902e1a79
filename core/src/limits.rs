//! Resource limits per command: how many processes (`pids`), how much
//! memory and how many CPUs' worth of time one command may use. This
//! module is the pure part: how they are written (`--limit pids=64`, a
//! config file's `[limits]`, the remote protocol), checked, and reported to
//! the model. Enforcing them is the environment's job (env-local does it
//! with cgroups; see `docs/limits.md`).
//!
//! Bad input is refused whole, with a message that names the limit and
//! what is allowed; nothing is half applied.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The `pids` limit in force by default wherever cgroups can be had: a fork
/// bomb in one command stops there instead of filling the process table.
pub const DEFAULT_PIDS_LIMIT: u64 = 4096;
/// The highest `pids` limit: the kernel's own ceiling on pids.
pub const MAX_PIDS_LIMIT: u64 = 4_194_304;
/// The lowest memory limit: below it not even bash starts.
pub const MIN_MEMORY_LIMIT: u64 = 1024 * 1024;
/// The highest memory limit (the kernel's counters are signed 64-bit).
pub const MAX_MEMORY_LIMIT: u64 = 1 << 62;

const PIDS_ALLOWED: &str =
    "the pids limit is a whole number of processes (threads count too) from 1 to 4194304, or off";
const MEMORY_ALLOWED: &str = "the memory limit is a size of at least 1 MiB: a number of bytes (268435456), or a number with K, M, G or T (powers of 1024; KiB, MiB, GiB, TiB mean the same), e.g. 512M, 1.5G, 512MiB; or off";
const CPU_ALLOWED: &str =
    "the cpu limit is a number of CPUs from 0.01 to 1024 (e.g. 0.5, 2, 1.5), or off";

/// One of the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LimitKind {
    /// Processes and threads at once.
    Pids,
    /// Memory (resident, page cache included), in bytes.
    Memory,
    /// CPU time, in CPUs.
    Cpu,
}

impl LimitKind {
    /// Every limit, in the order they are listed.
    pub const ALL: [Self; 3] = [Self::Pids, Self::Memory, Self::Cpu];

    /// The name in `--limit NAME=VALUE` and `[limits]`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pids => "pids",
            Self::Memory => "memory",
            Self::Cpu => "cpu",
        }
    }

    fn allowed(self) -> &'static str {
        match self {
            Self::Pids => PIDS_ALLOWED,
            Self::Memory => MEMORY_ALLOWED,
            Self::Cpu => CPU_ALLOWED,
        }
    }
}

impl fmt::Display for LimitKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Why a limit was refused. The messages name the limit and what is
/// allowed; the caller says where it came from (`--limit`, `[limits]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// Not `KEY=VALUE`.
    #[error(
        "'{item}' is not NAME=VALUE; the limits are pids=N, memory=SIZE and cpu=CPUS (each may be off)"
    )]
    NotAPair {
        /// What was given.
        item: String,
    },
    /// A name that is not a limit.
    #[error("unknown limit '{name}'; the limits are pids, memory and cpu")]
    UnknownName {
        /// What was given.
        name: String,
    },
    /// A value the limit does not take.
    #[error("{kind}={value}: {allowed}", allowed = kind.allowed())]
    BadValue {
        /// Which limit.
        kind: LimitKind,
        /// What was given.
        value: String,
    },
    /// The same limit twice, with different values.
    #[error("{kind} is given twice with different values ({first} and {second}); give it once")]
    Conflict {
        /// Which limit.
        kind: LimitKind,
        /// The first value.
        first: String,
        /// The other value.
        second: String,
    },
}

/// A CPU limit, in thousandths of a CPU (`1500`: one and a half CPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuLimit(u32);

impl CpuLimit {
    /// The lowest limit: 0.01 CPU (the kernel's quota is at least 1 ms per
    /// 100 ms period).
    pub const MIN_MILLIS: u32 = 10;
    /// The highest limit: 1024 CPUs.
    pub const MAX_MILLIS: u32 = 1_024_000;

    /// `millis` thousandths of a CPU, if in range.
    pub fn from_millis(millis: u32) -> Option<Self> {
        (Self::MIN_MILLIS..=Self::MAX_MILLIS)
            .contains(&millis)
            .then_some(Self(millis))
    }

    /// Thousandths of a CPU.
    pub fn millis(self) -> u32 {
        self.0
    }

    /// CPUs, as a number.
    pub fn cpus(self) -> f64 {
        f64::from(self.0) / 1000.0
    }

    fn from_cpus(cpus: f64) -> Option<Self> {
        if !cpus.is_finite() || cpus <= 0.0 {
            return None;
        }
        let millis = (cpus * 1000.0).round();
        if millis > f64::from(Self::MAX_MILLIS) {
            return None;
        }
        Self::from_millis(millis as u32)
    }
}

impl fmt::Display for CpuLimit {
    /// `2`, `1.5`, `0.25`: no trailing zeros.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, fraction) = (self.0 / 1000, self.0 % 1000);
        if fraction == 0 {
            return write!(formatter, "{whole}");
        }
        let digits = format!("{fraction:03}");
        write!(formatter, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

impl Serialize for CpuLimit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.cpus())
    }
}

impl<'de> Deserialize<'de> for CpuLimit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let cpus = f64::deserialize(deserializer)?;
        Self::from_cpus(cpus).ok_or_else(|| serde::de::Error::custom(CPU_ALLOWED))
    }
}

/// One limit as configured: not set (a default may apply), off, or a
/// maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Limit<T> {
    /// Not given: the default applies (a `pids` limit of
    /// [`DEFAULT_PIDS_LIMIT`]; none for the others).
    #[default]
    Unset,
    /// Explicitly no limit (the default `pids` limit too).
    Off,
    /// At most this much.
    Max(T),
}

impl<T: Copy> Limit<T> {
    /// The maximum, if one was given.
    pub fn max(self) -> Option<T> {
        match self {
            Self::Max(value) => Some(value),
            Self::Unset | Self::Off => None,
        }
    }

    /// `self`, or `fallback` when `self` is not set.
    #[must_use]
    pub fn or(self, fallback: Self) -> Self {
        match self {
            Self::Unset => fallback,
            given => given,
        }
    }
}

/// The limits asked for, by `--limit`, a config file's `[limits]`, an
/// embedder ([`crate::LimitSettings::default`]: the default `pids` limit
/// only), or a remote client. In TOML and JSON: `pids = 64`, `memory =
/// "512M"` (or a number of bytes), `cpu = 1.5`; each may be `"off"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "RawSettings", into = "RawSettings")]
pub struct LimitSettings {
    /// Processes and threads at once.
    pub pids: Limit<u64>,
    /// Bytes of memory.
    pub memory: Limit<u64>,
    /// CPUs.
    pub cpu: Limit<CpuLimit>,
}

impl LimitSettings {
    /// Parses the values of a repeatable flag, each a comma-separated
    /// list of `NAME=VALUE` (`pids=64,memory=512M`). The same limit given
    /// twice must have the same value.
    pub fn parse_items<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<Self, LimitError> {
        let mut settings = Self::default();
        let mut given: Vec<(LimitKind, String)> = Vec::new();
        for item in values.into_iter().flat_map(|value| value.split(',')) {
            let item = item.trim();
            let Some((name, value)) = item.split_once('=') else {
                return Err(LimitError::NotAPair {
                    item: item.to_owned(),
                });
            };
            let (name, value) = (name.trim(), value.trim());
            let kind = parse_name(name)?;
            let mut parsed = Self::default();
            parsed.set_text(kind, value)?;
            if let Some((_, first)) = given.iter().find(|(other, _)| *other == kind) {
                if parsed.text(kind) != settings.text(kind) {
                    return Err(LimitError::Conflict {
                        kind,
                        first: first.clone(),
                        second: value.to_owned(),
                    });
                }
                continue;
            }
            given.push((kind, value.to_owned()));
            settings = settings.overridden_by(parsed);
        }
        Ok(settings)
    }

    /// Sets limit `kind` from its text (`64`, `512M`, `1.5`, `off`).
    pub fn set_text(&mut self, kind: LimitKind, value: &str) -> Result<(), LimitError> {
        let bad = || LimitError::BadValue {
            kind,
            value: value.to_owned(),
        };
        let off = value.eq_ignore_ascii_case("off");
        match kind {
            LimitKind::Pids => {
                self.pids = if off {
                    Limit::Off
                } else {
                    Limit::Max(parse_pids(value).ok_or_else(bad)?)
                };
            }
            LimitKind::Memory => {
                self.memory = if off {
                    Limit::Off
                } else {
                    Limit::Max(parse_size(value).ok_or_else(bad)?)
                };
            }
            LimitKind::Cpu => {
                self.cpu = if off {
                    Limit::Off
                } else {
                    Limit::Max(parse_cpus(value).ok_or_else(bad)?)
                };
            }
        }
        Ok(())
    }

    /// The setting of `kind` as text (`64`, `512 MiB`, `1.5`, `off`;
    /// `None` when not set).
    pub fn text(&self, kind: LimitKind) -> Option<String> {
        let show = |limit: Limit<String>| match limit {
            Limit::Unset => None,
            Limit::Off => Some("off".to_owned()),
            Limit::Max(text) => Some(text),
        };
        match kind {
            LimitKind::Pids => show(map(self.pids, |pids| pids.to_string())),
            LimitKind::Memory => show(map(self.memory, format_size)),
            LimitKind::Cpu => show(map(self.cpu, |cpu| cpu.to_string())),
        }
    }

    /// `self` with each limit that `over` sets (to a value or off) taken
    /// from `over`: flags over the config file.
    #[must_use]
    pub fn overridden_by(self, over: Self) -> Self {
        Self {
            pids: over.pids.or(self.pids),
            memory: over.memory.or(self.memory),
            cpu: over.cpu.or(self.cpu),
        }
    }

    /// `self` where `ceiling` has no maximum of its own; where it has one,
    /// the lower of the two (a server's own `--limit` holds against what
    /// a client asks for).
    #[must_use]
    pub fn capped_by(self, ceiling: Self) -> Self {
        fn cap<T: Copy + Ord>(asked: Limit<T>, ceiling: Limit<T>) -> Limit<T> {
            match (asked, ceiling) {
                (Limit::Max(asked), Limit::Max(ceiling)) => Limit::Max(asked.min(ceiling)),
                (_, Limit::Max(ceiling)) => Limit::Max(ceiling),
                (asked, ceiling) => asked.or(ceiling),
            }
        }
        Self {
            pids: cap(self.pids, ceiling.pids),
            memory: cap(self.memory, ceiling.memory),
            cpu: cap(self.cpu, ceiling.cpu),
        }
    }

    /// True when no limit is set (the defaults apply).
    pub fn is_unset(&self) -> bool {
        *self == Self::default()
    }

    /// The `pids` limit in force where cgroups can be had: the one given,
    /// else [`DEFAULT_PIDS_LIMIT`]; `None` when turned off.
    pub fn pids_in_force(&self) -> Option<u64> {
        match self.pids {
            Limit::Max(pids) => Some(pids),
            Limit::Unset => Some(DEFAULT_PIDS_LIMIT),
            Limit::Off => None,
        }
    }

    /// The limits given explicitly: these must be enforced, or nothing
    /// runs (never silently unlimited).
    pub fn required(&self) -> Vec<LimitKind> {
        let mut kinds = Vec::new();
        if self.pids.max().is_some() {
            kinds.push(LimitKind::Pids);
        }
        if self.memory.max().is_some() {
            kinds.push(LimitKind::Memory);
        }
        if self.cpu.max().is_some() {
            kinds.push(LimitKind::Cpu);
        }
        kinds
    }
}

fn map<T, U>(limit: Limit<T>, convert: impl FnOnce(T) -> U) -> Limit<U> {
    match limit {
        Limit::Unset => Limit::Unset,
        Limit::Off => Limit::Off,
        Limit::Max(value) => Limit::Max(convert(value)),
    }
}

fn parse_name(name: &str) -> Result<LimitKind, LimitError> {
    LimitKind::ALL
        .into_iter()
        .find(|kind| kind.name() == name)
        .ok_or_else(|| LimitError::UnknownName {
            name: name.to_owned(),
        })
}

fn parse_pids(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse()
        .ok()
        .filter(|pids| (1..=MAX_PIDS_LIMIT).contains(pids))
}

/// A size: bytes, or a number (decimals allowed) with `K`, `M`, `G`, `T`
/// or `KiB` ... `TiB`, in powers of 1024, any case. `KB`, `MB` are refused:
/// some read them as powers of 1000.
pub fn parse_size(text: &str) -> Option<u64> {
    let split = text
        .find(|character: char| !(character.is_ascii_digit() || character == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let shift = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits_only = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if whole.is_empty()
        || !digits_only(whole)
        || !digits_only(fraction)
        || (number.contains('.') && (fraction.is_empty() || shift == 0))
        || fraction.len() > 9
    {
        return None;
    }
    let whole: u128 = whole.parse().ok()?;
    let scale: u128 = 1 << shift;
    let mut bytes = whole.checked_mul(scale)?;
    if !fraction.is_empty() {
        let numerator: u128 = fraction.parse().ok()?;
        let denominator = 10_u128.pow(fraction.len() as u32);
        bytes = bytes.checked_add(numerator * scale / denominator)?;
    }
    u64::try_from(bytes)
        .ok()
        .filter(|bytes| (MIN_MEMORY_LIMIT..=MAX_MEMORY_LIMIT).contains(bytes))
}

fn parse_cpus(text: &str) -> Option<CpuLimit> {
    let valid = !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || byte == b'.')
        && text.matches('.').count() <= 1
        && !text.starts_with('.')
        && !text.ends_with('.');
    if !valid {
        return None;
    }
    CpuLimit::from_cpus(text.parse().ok()?)
}

/// A size as a person writes it: `512 MiB`, `1.5 GiB`, `100 B`, exact
/// when it is whole in its unit.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u32); 4] = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (name, shift) in UNITS {
        let unit = 1_u64 << shift;
        if bytes >= unit {
            if bytes.is_multiple_of(unit) {
                return format!("{} {name}", bytes >> shift);
            }
            let tenths = (u128::from(bytes) * 10 + u128::from(unit) / 2) / u128::from(unit);
            return format!("{}.{} {name}", tenths / 10, tenths % 10);
        }
    }
    format!("{bytes} B")
}

/// The shape of [`LimitSettings`] in TOML and JSON: each limit a number,
/// a text (a size, `off`), or absent.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pids: Option<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    memory: Option<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    cpu: Option<RawValue>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum RawValue {
    Whole(u64),
    Signed(i64),
    Number(f64),
    Text(String),
}

impl RawValue {
    fn text(&self) -> String {
        match self {
            Self::Whole(value) => value.to_string(),
            Self::Signed(value) => value.to_string(),
            Self::Number(value) => value.to_string(),
            Self::Text(value) => value.clone(),
        }
    }
}

impl TryFrom<RawSettings> for LimitSettings {
    type Error = LimitError;

    fn try_from(raw: RawSettings) -> Result<Self, Self::Error> {
        let mut settings = Self::default();
        for (kind, value) in [
            (LimitKind::Pids, raw.pids),
            (LimitKind::Memory, raw.memory),
            (LimitKind::Cpu, raw.cpu),
        ] {
            let Some(value) = value else { continue };
            if let (LimitKind::Cpu, RawValue::Number(cpus)) = (kind, &value) {
                settings.cpu =
                    Limit::Max(
                        CpuLimit::from_cpus(*cpus).ok_or_else(|| LimitError::BadValue {
                            kind,
                            value: value.text(),
                        })?,
                    );
                continue;
            }
            settings.set_text(kind, &value.text())?;
        }
        Ok(settings)
    }
}

impl From<LimitSettings> for RawSettings {
    fn from(settings: LimitSettings) -> Self {
        let whole = |limit: Limit<u64>| match limit {
            Limit::Unset => None,
            Limit::Off => Some(RawValue::Text("off".to_owned())),
            Limit::Max(value) => Some(RawValue::Whole(value)),
        };
        Self {
            pids: whole(settings.pids),
            memory: whole(settings.memory),
            cpu: match settings.cpu {
                Limit::Unset => None,
                Limit::Off => Some(RawValue::Text("off".to_owned())),
                Limit::Max(cpu) => Some(RawValue::Number(cpu.cpus())),
            },
        }
    }
}

/// The limits each command of an environment runs under, as the model is
/// told about them (`details.limits`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LimitsInfo {
    /// Most processes and threads at once.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pids: Option<u64>,
    /// Most bytes of memory.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub memory: Option<u64>,
    /// Most CPUs' worth of time.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu: Option<CpuLimit>,
    /// What enforces them: `cgroup v2`, `cgroup v1`, `cgroup v1 and v2`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub enforced_by: Option<String>,
    /// A default limit that is not in force, and why.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub not_in_force: Option<String>,
    /// The `pids` limit is bashtool's default, not one that was asked for.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub pids_is_default: bool,
}

/// What the kernel counted while a command ran under its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitEvents {
    /// Forks (and new threads) refused by the `pids` limit.
    pub pids_refused: u64,
    /// Processes killed by the kernel at the memory limit.
    pub oom_kills: u64,
    /// CPU periods in which the command was held back by the cpu limit.
    pub throttled_periods: u64,
    /// How long it was held back in all.
    pub throttled: Duration,
}

impl LimitEvents {
    /// True when no limit was reached.
    pub fn is_empty(&self) -> bool {
        self.pids_refused == 0 && self.oom_kills == 0 && self.throttled_periods == 0
    }
}

/// What the model is told when a limit was reached, one note per limit
/// (shown as `[...]` lines). `killed`: the command's own process died of
/// SIGKILL.
pub fn limit_notes(limits: &LimitsInfo, events: &LimitEvents, killed: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if events.oom_kills > 0 {
        let limit = limits.memory.map_or_else(
            || "memory limit".to_owned(),
            |bytes| format!("memory limit of {}", format_size(bytes)),
        );
        notes.push(if killed {
            format!("the command reached its {limit} and was killed")
        } else {
            let processes = if events.oom_kills == 1 {
                "1 of its processes".to_owned()
            } else {
                format!("{} of its processes", events.oom_kills)
            };
            format!("the command reached its {limit}: the kernel killed {processes}")
        });
    }
    if events.pids_refused > 0 {
        let limit = limits.pids.map_or_else(
            || "process limit".to_owned(),
            |pids| format!("limit of {pids} processes (pids)"),
        );
        let forks = if events.pids_refused == 1 {
            "1 fork failed".to_owned()
        } else {
            format!("{} forks failed", events.pids_refused)
        };
        let whose = if limits.pids_is_default {
            "; it is bashtool's default, which the user can change with --limit pids=N"
        } else {
            ""
        };
        notes.push(format!(
            "the command reached its {limit}: {forks} with 'Resource temporarily unavailable'; run fewer processes at once{whose}"
        ));
    }
    if events.throttled_periods > 0 {
        let limit = limits.cpu.map_or_else(
            || "cpu limit".to_owned(),
            |cpu| {
                let unit = if cpu.millis() == 1000 { "CPU" } else { "CPUs" };
                format!("cpu limit of {cpu} {unit}")
            },
        );
        notes.push(format!(
            "the command was slowed down by its {limit}: held back for {:.1} s in all",
            events.throttled.as_secs_f64()
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Result<LimitSettings, LimitError> {
        LimitSettings::parse_items(values.iter().copied())
    }

    #[test]
    fn reads_each_limit_repeated_or_comma_separated() {
        let settings = parse(&["pids=64", "memory=256M,cpu=1.5"]).expect("valid");
        assert_eq!(
            settings,
            LimitSettings {
                pids: Limit::Max(64),
                memory: Limit::Max(256 << 20),
                cpu: Limit::Max(CpuLimit::from_millis(1500).expect("in range")),
            }
        );
        assert_eq!(parse(&["pids=off"]).expect("valid").pids, Limit::<u64>::Off);
        // The same value twice is no conflict.
        assert_eq!(
            parse(&["pids=64", "pids=64"]).expect("valid").pids,
            Limit::Max(64)
        );
        assert_eq!(
            parse(&["memory=1G", "memory=1024M"]).expect("valid").memory,
            Limit::Max(1 << 30)
        );
    }

    #[test]
    fn refuses_bad_input_naming_the_limit_and_what_is_allowed() {
        assert_eq!(
            parse(&["pids=0"]).expect_err("zero").to_string(),
            format!("pids=0: {PIDS_ALLOWED}")
        );
        assert_eq!(
            parse(&["memory=lots"]).expect_err("words").to_string(),
            format!("memory=lots: {MEMORY_ALLOWED}")
        );
        assert_eq!(
            parse(&["cpu=0"]).expect_err("zero").to_string(),
            format!("cpu=0: {CPU_ALLOWED}")
        );
        assert_eq!(
            parse(&["disk=1G"]).expect_err("unknown").to_string(),
            "unknown limit 'disk'; the limits are pids, memory and cpu"
        );
        assert_eq!(
            parse(&["pids"]).expect_err("no value").to_string(),
            "'pids' is not NAME=VALUE; the limits are pids=N, memory=SIZE and cpu=CPUS (each may be off)"
        );
        assert_eq!(
            parse(&["pids=64,pids=128"])
                .expect_err("conflict")
                .to_string(),
            "pids is given twice with different values (64 and 128); give it once"
        );
        for bad in [
            "pids=-1",
            "pids=1.5",
            "pids=4194305",
            "pids=",
            "memory=512",
            "memory=0",
            "memory=512MB",
            "memory=1.5",
            "memory=.5G",
            "memory=5G5",
            "memory=99999999999T",
            "cpu=-1",
            "cpu=0.001",
            "cpu=2000",
            "cpu=1..5",
            "cpu=one",
        ] {
            assert!(
                matches!(parse(&[bad]), Err(LimitError::BadValue { .. })),
                "{bad} was accepted"
            );
        }
    }

    #[test]
    fn sizes_are_powers_of_1024() {
        for (text, bytes) in [
            ("256M", 256 << 20),
            ("256m", 256 << 20),
            ("512MiB", 512 << 20),
            ("1G", 1 << 30),
            ("1.5G", 3 << 29),
            ("1 GiB", 1 << 30),
            ("2048K", 2 << 20),
            ("1T", 1 << 40),
            ("268435456", 268_435_456),
        ] {
            assert_eq!(parse_size(text), Some(bytes), "{text}");
        }
        assert_eq!(format_size(256 << 20), "256 MiB");
        assert_eq!(format_size(3 << 29), "1.5 GiB");
        assert_eq!(format_size(1_000_000), "976.6 KiB");
        assert_eq!(format_size(100), "100 B");
    }

    #[test]
    fn flags_override_the_file_and_a_server_caps_a_client() {
        let file = parse(&["pids=100", "memory=1G"]).expect("valid");
        let flags = parse(&["memory=off", "cpu=2"]).expect("valid");
        let merged = file.overridden_by(flags);
        assert_eq!(merged.pids, Limit::Max(100));
        assert_eq!(merged.memory, Limit::<u64>::Off);
        assert_eq!(merged.cpu.max().map(CpuLimit::millis), Some(2000));
        let client = parse(&["pids=10000", "memory=2G"]).expect("valid");
        let server = parse(&["pids=500"]).expect("valid");
        let applied = client.capped_by(server);
        assert_eq!(applied.pids, Limit::Max(500));
        assert_eq!(applied.memory, Limit::Max(2 << 30));
        assert_eq!(
            parse(&["pids=50"]).expect("valid").capped_by(server).pids,
            Limit::Max(50)
        );
    }

    #[test]
    fn the_default_pids_limit_applies_unless_turned_off() {
        assert_eq!(
            LimitSettings::default().pids_in_force(),
            Some(DEFAULT_PIDS_LIMIT)
        );
        assert!(LimitSettings::default().required().is_empty());
        let off = parse(&["pids=off"]).expect("valid");
        assert_eq!(off.pids_in_force(), None);
        assert_eq!(
            parse(&["pids=9", "cpu=1"]).expect("valid").required(),
            [LimitKind::Pids, LimitKind::Cpu]
        );
    }

    #[test]
    fn reads_and_writes_toml_and_json_shapes() {
        let settings: LimitSettings =
            serde_json::from_str(r#"{"pids": 64, "memory": "512M", "cpu": 0.5}"#).expect("valid");
        assert_eq!(settings.pids, Limit::Max(64));
        assert_eq!(settings.memory, Limit::Max(512 << 20));
        assert_eq!(settings.cpu.max().map(CpuLimit::millis), Some(500));
        assert_eq!(
            serde_json::to_string(&settings).expect("json"),
            r#"{"pids":64,"memory":536870912,"cpu":0.5}"#
        );
        let off: LimitSettings = serde_json::from_str(r#"{"pids": "off"}"#).expect("valid");
        assert_eq!(off.pids, Limit::<u64>::Off);
        assert_eq!(
            serde_json::to_string(&off).expect("json"),
            r#"{"pids":"off"}"#
        );
        assert_eq!(
            serde_json::to_string(&LimitSettings::default()).expect("json"),
            "{}"
        );
        for bad in [
            r#"{"pids": 0}"#,
            r#"{"pids": -3}"#,
            r#"{"memory": "lots"}"#,
            r#"{"cpu": 0}"#,
            r#"{"disk": 1}"#,
        ] {
            assert!(
                serde_json::from_str::<LimitSettings>(bad).is_err(),
                "{bad} was accepted"
            );
        }
        let error = serde_json::from_str::<LimitSettings>(r#"{"pids": 0}"#).expect_err("zero");
        assert!(error.to_string().starts_with("pids=0: "), "{error}");
    }

    #[test]
    fn notes_say_which_limit_was_reached() {
        let limits = LimitsInfo {
            pids: Some(64),
            memory: Some(512 << 20),
            cpu: CpuLimit::from_millis(500),
            ..LimitsInfo::default()
        };
        let events = LimitEvents {
            pids_refused: 236,
            oom_kills: 1,
            throttled_periods: 12,
            throttled: Duration::from_millis(1250),
        };
        assert_eq!(
            limit_notes(&limits, &events, true),
            [
                "the command reached its memory limit of 512 MiB and was killed",
                "the command reached its limit of 64 processes (pids): 236 forks failed with 'Resource temporarily unavailable'; run fewer processes at once",
                "the command was slowed down by its cpu limit of 0.5 CPUs: held back for 1.2 s in all",
            ]
        );
        let one_killed = LimitEvents {
            oom_kills: 2,
            ..LimitEvents::default()
        };
        assert_eq!(
            limit_notes(&limits, &one_killed, false),
            [
                "the command reached its memory limit of 512 MiB: the kernel killed 2 of its processes"
            ]
        );
        assert!(limit_notes(&limits, &LimitEvents::default(), true).is_empty());
        let default = LimitsInfo {
            pids: Some(DEFAULT_PIDS_LIMIT),
            pids_is_default: true,
            ..LimitsInfo::default()
        };
        let one = LimitEvents {
            pids_refused: 1,
            ..LimitEvents::default()
        };
        assert_eq!(
            limit_notes(&default, &one, false),
            [
                "the command reached its limit of 4096 processes (pids): 1 fork failed with 'Resource temporarily unavailable'; run fewer processes at once; it is bashtool's default, which the user can change with --limit pids=N"
            ]
        );
    }
}
