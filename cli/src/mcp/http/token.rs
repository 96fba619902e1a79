//! The bearer token of `bashtool mcp --http`: read from `--token-file`, or
//! made at random and written to the private state directory.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
#[cfg(unix)]
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// Shortest token accepted from a file: a guessable token is no guard.
pub const MIN_TOKEN_CHARS: usize = 16;
/// Random bytes in a generated token (64 hex digits).
const RANDOM_BYTES: usize = 32;

/// The token in `path`: the file must be a regular file of ours that group
/// and others cannot read (anyone who reads it can run commands as us).
pub fn read(path: &Path) -> anyhow::Result<String> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("--token-file {}: cannot open it", path.display()))?;
    // The checks are on the opened file, so it cannot be swapped after them.
    let metadata = file.metadata()?;
    anyhow::ensure!(
        metadata.is_file(),
        "--token-file {}: not a regular file",
        path.display()
    );
    // On Windows the file's ACL decides who reads it: a file under the
    // user's profile is the user's.
    #[cfg(unix)]
    {
        anyhow::ensure!(
            metadata.uid() == nix::unistd::geteuid().as_raw(),
            "--token-file {}: it belongs to another user (uid {}); the token file must be yours",
            path.display(),
            metadata.uid()
        );
        let group_and_others = metadata.mode() & 0o077;
        anyhow::ensure!(
            group_and_others == 0,
            "--token-file {}: group or others may access it (mode {:o}); run `chmod 600 {}`",
            path.display(),
            metadata.mode() & 0o777,
            path.display()
        );
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("--token-file {}: not UTF-8 text", path.display()))?;
    let token = text.trim();
    anyhow::ensure!(
        token.chars().count() >= MIN_TOKEN_CHARS,
        "--token-file {}: the token must have at least {MIN_TOKEN_CHARS} characters",
        path.display()
    );
    anyhow::ensure!(
        token.bytes().all(|byte| byte.is_ascii_graphic()),
        "--token-file {}: the token must be printable ASCII without spaces",
        path.display()
    );
    Ok(token.to_owned())
}

/// A new random token, written (mode 0600) to `mcp-http-PORT.token` in the
/// private `state_dir` (made 0700 if needed). Returns the token and the file.
pub fn generate(state_dir: &Path, port: u16) -> anyhow::Result<(String, PathBuf)> {
    let mut bytes = [0u8; RANDOM_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|error| anyhow::anyhow!("{error}"))
        .context("reading the system's randomness for the HTTP token")?;
    let token = bytes.iter().fold(String::new(), |mut hex, byte| {
        let _ = write!(hex, "{byte:02x}");
        hex
    });
    #[cfg(target_os = "linux")]
    bashtool_env_local::ensure_private_dir(state_dir)
        .with_context(|| format!("preparing the state directory {}", state_dir.display()))?;
    #[cfg(not(target_os = "linux"))]
    crate::relay::ensure_private_dir(state_dir)
        .with_context(|| format!("preparing the state directory {}", state_dir.display()))?;
    let path = state_dir.join(token_file_name(port));
    // A new file (O_EXCL: never through a planted symlink), private from
    // its first byte.
    match std::fs::remove_file(&path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(error).with_context(|| format!("replacing {}", path.display()));
        }
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options
        .open(&path)
        .with_context(|| format!("writing the HTTP token to {}", path.display()))?;
    file.write_all(format!("{token}\n").as_bytes())?;
    Ok((token, path))
}

/// The name of the generated token file of the server on `port`.
pub fn token_file_name(port: u16) -> String {
    format!("mcp-http-{port}.token")
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn a_generated_token_is_random_hex_in_a_private_file() {
        let temp = tempfile::tempdir().expect("temp dir");
        let state = temp.path().join("state");
        let (token, path) = generate(&state, 8080).expect("generated");
        assert_eq!(token.len(), 2 * RANDOM_BYTES);
        assert!(token.bytes().all(|byte| byte.is_ascii_hexdigit()));
        assert_eq!(path, state.join("mcp-http-8080.token"));
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            format!("{token}\n")
        );
        let mode = |path: &Path| std::fs::metadata(path).expect("stat").mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&state), 0o700);
        let (again, _) = generate(&state, 8080).expect("generated");
        assert_ne!(again, token);
        assert_eq!(read(&path).expect("readable"), again);
    }

    #[test]
    fn a_token_file_others_can_read_or_too_short_is_refused() {
        let temp = tempfile::tempdir().expect("temp dir");
        let path = temp.path().join("token");
        std::fs::write(&path, "0123456789abcdef\n").expect("written");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let error = read(&path).expect_err("refused").to_string();
        assert!(
            error.contains("mode 644") && error.contains("chmod 600"),
            "{error}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(read(&path).expect("accepted"), "0123456789abcdef");
        std::fs::write(&path, "short\n").expect("written");
        let error = read(&path).expect_err("refused").to_string();
        assert!(error.contains("at least 16 characters"), "{error}");
        let missing = temp.path().join("missing");
        let error = format!("{:#}", read(&missing).expect_err("refused"));
        assert!(error.contains("cannot open it"), "{error}");
    }
}
