//! Which helpful programs exist here, so the model is told only of real
//! ones (detection is the environment's job: only it knows the machine).

/// Programs worth recommending to the model when they exist.
const RECOMMENDED: &[&str] = &["rg", "fd", "fdfind", "jq"];

/// The recommended programs found in `PATH`.
pub fn available_tools() -> Vec<String> {
    let Some(path) = std::env::var_os("PATH") else {
        return Vec::new();
    };
    let directories: Vec<std::path::PathBuf> = std::env::split_paths(&path).collect();
    RECOMMENDED
        .iter()
        .filter(|tool| {
            directories
                .iter()
                .any(|directory| is_executable(&directory.join(tool)))
        })
        .map(|tool| (*tool).to_owned())
        .collect()
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_programs_that_exist() {
        let tools = available_tools();
        for tool in &tools {
            assert!(RECOMMENDED.contains(&tool.as_str()));
        }
        let which = |name: &str| {
            std::process::Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .is_ok_and(|output| output.status.success())
        };
        assert_eq!(tools.contains(&"rg".to_owned()), which("rg"));
    }
}
