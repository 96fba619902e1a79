//! The note that explains a sandbox denial, added by every environment of
//! this crate (a fresh shell per call, a session, their jobs), so that the
//! model and the user see why a write or a connection failed however the
//! command ran.

use bashtool_core::{CommandResult, SandboxInfo};

/// Adds the note for the first denial in a failed command's retained
/// output (once), when a sandbox is in force.
pub(crate) fn explain(result: &mut CommandResult, sandbox: Option<&SandboxInfo>) {
    let Some(info) = sandbox else {
        return;
    };
    // Only on failure, only on the retained lines.
    if result.success() {
        return;
    }
    let (lines, _) = result.output.retained();
    let texts: Vec<&str> = lines.iter().map(|line| line.text.as_str()).collect();
    let cwd = result.working_directory.as_deref();
    // The proxy's own note already named the host it refused and why; the
    // general note on the network would only repeat it.
    let proxy_refused = info.network == "allowlist"
        && result
            .notes
            .iter()
            .any(|note| note.contains("bashtool's proxy refused"));
    if let Some(note) = bashtool_core::explain_denial_at(&texts, info, cwd)
        && !result.notes.contains(&note)
        && !(proxy_refused && note.starts_with("sandbox: the network"))
    {
        result.notes.push(note);
    }
}
