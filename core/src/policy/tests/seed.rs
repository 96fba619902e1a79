//! The 42 unit tests of the policy's original specification: git add, git
//! push, rm, sudo, pipelines and compound commands, edge cases.

use super::super::{
    DEFAULT_DENY_PATTERNS, GIT_ADD_MESSAGE, GIT_PUSH_FORCE_MESSAGE, PolicyConfig,
    RM_CRITICAL_MESSAGE, Rule, Violation, check,
};
use super::blocked_by;

fn allowed(script: &str) -> bool {
    check(script, &PolicyConfig::default()).is_ok()
}

// git add

#[test]
fn blocks_git_add_all_short_flag() {
    assert_eq!(
        check("git add -A", &PolicyConfig::default()),
        Err(Violation {
            rule: Rule::GitAdd,
            message: GIT_ADD_MESSAGE.to_owned()
        })
    );
}

#[test]
fn blocks_git_add_all_long_flag() {
    assert_eq!(blocked_by("git add --all"), Some(Rule::GitAdd));
}

#[test]
fn blocks_git_add_dot() {
    assert_eq!(blocked_by("git add ."), Some(Rule::GitAdd));
}

#[test]
fn blocks_git_add_star() {
    assert_eq!(blocked_by("git add *"), Some(Rule::GitAdd));
}

#[test]
fn blocks_git_add_dot_with_force() {
    assert_eq!(blocked_by("git add -f ."), Some(Rule::GitAdd));
}

#[test]
fn allows_git_add_named_file() {
    assert!(allowed("git add src/main.rs"));
}

#[test]
fn allows_git_add_several_files() {
    assert!(allowed("git add Cargo.toml src/lib.rs README.md"));
}

#[test]
fn allows_git_add_directory() {
    assert!(allowed("git add src/"));
}

#[test]
fn allows_git_add_update() {
    assert!(allowed("git add -u"));
}

#[test]
fn allows_git_add_patch() {
    assert!(allowed("git add -p"));
}

#[test]
fn allows_git_add_extension_glob() {
    assert!(allowed("git add *.py"));
}

// git push

#[test]
fn blocks_git_push_force() {
    assert_eq!(
        check("git push --force", &PolicyConfig::default()),
        Err(Violation {
            rule: Rule::GitPushForce,
            message: GIT_PUSH_FORCE_MESSAGE.to_owned()
        })
    );
}

#[test]
fn blocks_git_push_short_force() {
    assert_eq!(
        blocked_by("git push -f origin main"),
        Some(Rule::GitPushForce)
    );
}

#[test]
fn blocks_git_push_force_with_remote_and_branch() {
    assert_eq!(
        blocked_by("git push origin main --force"),
        Some(Rule::GitPushForce)
    );
}

#[test]
fn allows_git_push_force_with_lease() {
    assert!(allowed("git push --force-with-lease"));
}

#[test]
fn allows_git_push_force_with_lease_and_ref() {
    assert!(allowed(
        "git push --force-with-lease=main:abc123 origin main"
    ));
}

#[test]
fn allows_plain_git_push() {
    assert!(allowed("git push origin main"));
}

#[test]
fn allows_git_push_set_upstream() {
    assert!(allowed("git push -u origin feature"));
}

// rm

#[test]
fn blocks_rm_rf_root() {
    assert_eq!(
        check("rm -rf /", &PolicyConfig::default()),
        Err(Violation {
            rule: Rule::RmCritical,
            message: RM_CRITICAL_MESSAGE.to_owned()
        })
    );
}

#[test]
fn blocks_rm_rf_home_tilde() {
    assert_eq!(blocked_by("rm -rf ~"), Some(Rule::RmCritical));
}

#[test]
fn blocks_rm_rf_home_variable() {
    assert_eq!(blocked_by("rm -rf $HOME"), Some(Rule::RmCritical));
}

#[test]
fn blocks_rm_rf_git_directory() {
    assert_eq!(blocked_by("rm -rf .git"), Some(Rule::RmCritical));
}

#[test]
fn blocks_rm_rf_star() {
    assert_eq!(blocked_by("rm -rf *"), Some(Rule::RmCritical));
}

#[test]
fn blocks_rm_with_separate_flags() {
    assert_eq!(blocked_by("rm -r -f /"), Some(Rule::RmCritical));
}

#[test]
fn blocks_rm_recursive_long_flag() {
    assert_eq!(
        blocked_by("rm --recursive --force ~"),
        Some(Rule::RmCritical)
    );
}

#[test]
fn allows_rm_rf_node_modules() {
    assert!(allowed("rm -rf node_modules"));
}

#[test]
fn allows_rm_rf_build_directory() {
    assert!(allowed("rm -rf ./build"));
}

#[test]
fn allows_rm_single_file() {
    assert!(allowed("rm file.txt"));
}

#[test]
fn allows_rm_rf_absolute_tmp_path() {
    assert!(allowed("rm -rf /tmp/x"));
}

// sudo

#[test]
fn blocks_sudo_rm_rf_root() {
    assert_eq!(blocked_by("sudo rm -rf /"), Some(Rule::RmCritical));
}

#[test]
fn blocks_sudo_git_push_force() {
    assert_eq!(
        blocked_by("sudo git push --force"),
        Some(Rule::GitPushForce)
    );
}

#[test]
fn allows_sudo_safe_command() {
    assert!(allowed("sudo apt-get install -y ripgrep"));
}

// pipelines and compound commands

#[test]
fn blocks_dangerous_command_after_and() {
    assert_eq!(blocked_by("cd repo && git add -A"), Some(Rule::GitAdd));
}

#[test]
fn blocks_dangerous_command_after_semicolon() {
    assert_eq!(blocked_by("echo hi; rm -rf /"), Some(Rule::RmCritical));
}

#[test]
fn blocks_dangerous_command_in_pipeline() {
    assert_eq!(blocked_by("ls | rm -rf ~"), Some(Rule::RmCritical));
}

#[test]
fn blocks_dangerous_command_in_subshell() {
    assert_eq!(
        blocked_by("(cd /tmp && git push -f)"),
        Some(Rule::GitPushForce)
    );
}

#[test]
fn blocks_dangerous_command_in_if_body() {
    assert_eq!(
        blocked_by("if true; then git add .; fi"),
        Some(Rule::GitAdd)
    );
}

#[test]
fn blocks_dangerous_command_in_loop_body() {
    assert_eq!(
        blocked_by("for i in 1 2; do rm -rf /; done"),
        Some(Rule::RmCritical)
    );
}

#[test]
fn allows_safe_compound_command() {
    assert!(allowed("cargo build && cargo test 2>&1 | tail -n 20"));
}

// edge cases

#[test]
fn allows_empty_script() {
    assert!(allowed(""));
    assert!(allowed("   \n\t  "));
}

#[test]
fn allows_comment_mentioning_dangerous_command() {
    assert!(allowed("# rm -rf /\necho done"));
}

#[test]
fn allows_dangerous_text_in_echo() {
    assert!(allowed(
        "echo \"git add -A && git push --force && rm -rf /\""
    ));
}

// configuration

#[test]
fn disabled_policy_allows_everything_without_parsing() {
    assert_eq!(check("rm -rf / && x=$(", &PolicyConfig::disabled()), Ok(()));
}

#[test]
fn rules_switch_off_one_by_one() {
    let config = PolicyConfig {
        git_add: false,
        ..PolicyConfig::default()
    };
    assert_eq!(check("git add -A", &config), Ok(()));
    assert_eq!(
        check("git add -A; rm -rf /", &config).map_err(|violation| violation.rule),
        Err(Rule::RmCritical)
    );
}

#[test]
fn deny_patterns_block_substrings_with_the_specified_message() {
    let config = PolicyConfig {
        deny_patterns: DEFAULT_DENY_PATTERNS
            .iter()
            .map(|pattern| (*pattern).to_owned())
            .collect(),
        ..PolicyConfig::default()
    };
    assert_eq!(
        check("sudo shutdown -h now", &config),
        Err(Violation {
            rule: Rule::DenyPattern,
            message: "Command blocked by safety policy: contains 'shutdown'".to_owned()
        })
    );
    assert_eq!(
        check("echo 'dd if=/dev/zero'", &config).map_err(|v| v.rule),
        Err(Rule::DenyPattern)
    );
    assert_eq!(check("ls -la", &config), Ok(()));
}

#[test]
fn deny_patterns_are_off_by_default() {
    assert_eq!(check("sudo reboot", &PolicyConfig::default()), Ok(()));
}

#[test]
fn unparsable_script_is_refused_with_quoting_hint() {
    assert_eq!(
        check("echo \"unterminated", &PolicyConfig::default()),
        Err(Violation {
            rule: Rule::ParseError,
            message: "could not parse the command: unterminated double quote at 1,6 (detected near line 1 col 19); check the quoting".to_owned()
        })
    );
}

#[test]
fn rule_names_serialize_in_snake_case() {
    let names: Vec<String> = [
        Rule::GitAdd,
        Rule::GitPushForce,
        Rule::RmCritical,
        Rule::ParseError,
        Rule::DenyPattern,
    ]
    .iter()
    .map(|rule| serde_json::to_string(rule).expect("serializes"))
    .collect();
    assert_eq!(
        names,
        [
            "\"git_add\"",
            "\"git_push_force\"",
            "\"rm_critical\"",
            "\"parse_error\"",
            "\"deny_pattern\""
        ]
    );
}
