//! Which rules the policy applies: [`PolicyConfig`], read by the check and
//! by every rule that has a switch.

/// The original specification's substring deny list, available to switch
/// on with
/// `PolicyConfig { deny_patterns: DEFAULT_DENY_PATTERNS.iter().map(|p| p.to_string()).collect(), .. }`.
pub const DEFAULT_DENY_PATTERNS: &[&str] = &[
    "rm -rf /",
    "mkfs",
    "dd if=",
    ":(){ :|:& };:",
    "> /dev/sda",
    "chmod -R 777 /",
    "shutdown",
    "reboot",
];

/// Which rules are on. Guards against accidents; it is not a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Off: every command is allowed and nothing is parsed.
    pub enabled: bool,
    /// Refuse blind `git add`.
    pub git_add: bool,
    /// Refuse `git push --force`.
    pub git_push_force: bool,
    /// Refuse recursive forced `rm` of critical paths.
    pub rm_critical: bool,
    /// The original specification's substring deny list (empty by default; see
    /// [`DEFAULT_DENY_PATTERNS`]). Matched on the raw script text.
    pub deny_patterns: Vec<String>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            git_add: true,
            git_push_force: true,
            rm_critical: true,
            deny_patterns: Vec::new(),
        }
    }
}

impl PolicyConfig {
    /// Everything allowed, nothing parsed.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Whether a rule that needs the parsed script is on.
    pub(super) fn any_ast_rule(&self) -> bool {
        self.git_add || self.git_push_force || self.rm_critical
    }
}
