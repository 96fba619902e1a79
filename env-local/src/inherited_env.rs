//! The variables of our own environment that a child inherits, as the
//! environment policy decides. The decision for each name is remembered:
//! the policy's globs would otherwise run for every variable on every spawn
//! (measured: the largest part of a stateless call's own CPU time).

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::{Mutex, PoisonError};

use bashtool_core::EnvPolicy;

/// More names than an environment has; past it the memo starts over, so
/// that a process inventing variable names cannot grow it without bound.
const MAX_REMEMBERED: usize = 4096;

/// The policy the decisions were made for, and the decisions by name.
static DECISIONS: Mutex<Option<(EnvPolicy, HashMap<OsString, bool>)>> = Mutex::new(None);

/// Our environment as `policy` lets it through, read now (a variable set
/// since the last spawn is seen).
pub(crate) fn inherited(policy: &EnvPolicy) -> Vec<(OsString, OsString)> {
    let mut guard = DECISIONS.lock().unwrap_or_else(PoisonError::into_inner);
    if guard.as_ref().is_none_or(|(cached, _)| cached != policy) {
        *guard = Some((policy.clone(), HashMap::new()));
    }
    let Some((_, decisions)) = guard.as_mut() else {
        return Vec::new();
    };
    if decisions.len() > MAX_REMEMBERED {
        decisions.clear();
    }
    std::env::vars_os()
        .filter(|(name, _)| {
            if let Some(inherits) = decisions.get(name) {
                return *inherits;
            }
            let inherits = policy.inherits(&name.to_string_lossy());
            decisions.insert(name.clone(), inherits);
            inherits
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_decisions_follow_the_policy_in_use() {
        let path_only = EnvPolicy {
            include_only: vec!["PATH".into()],
            ..EnvPolicy::default()
        };
        let everything = EnvPolicy {
            ignore_default_excludes: true,
            ..EnvPolicy::default()
        };
        let names = |policy: &EnvPolicy| -> Vec<OsString> {
            inherited(policy)
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        };
        assert_eq!(names(&path_only), [OsString::from("PATH")]);
        let all: Vec<OsString> = std::env::vars_os().map(|(name, _)| name).collect();
        assert_eq!(names(&everything), all);
        assert_eq!(names(&path_only), [OsString::from("PATH")]);
    }
}
