//! Tests of the whole policy through [`check`](super::check): the original
//! specification's unit tests, a table of cases for every bullet of the issue, and
//! robustness (deep nesting, huge input, random input).

mod robustness;
mod seed;
mod table;

use super::{PolicyConfig, Rule, check};

/// The rule that blocks `script` under the default policy, `None` if allowed.
fn blocked_by(script: &str) -> Option<Rule> {
    check(script, &PolicyConfig::default())
        .err()
        .map(|violation| violation.rule)
}
