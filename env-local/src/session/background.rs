//! `mode: "background"` on a session: the job runs outside the shell (it
//! must outlive the call), but with the shell's state.

use bashtool_core::{CommandExec as _, CommandResult, ExecError, SpawnOptions};

use super::call::check_directory;
use super::protocol::Record;
use super::{Session, driver, snapshot};

impl Session {
    /// A fresh snapshot is handed to `bash -c` through `BASH_ENV`, and the
    /// job starts in the session's cwd.
    pub(super) async fn run_background(
        &self,
        command: &str,
        mut options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let inner = &self.inner;
        let mut state = inner.state.lock().await;
        self.ensure_shell(&mut state, options.timeout).await?;
        let cwd = match &options.cwd {
            Some(cwd) => state.cwd.join(cwd),
            None => state.cwd.clone(),
        };
        check_directory(&cwd)?;
        if let Some(shell) = &mut state.shell
            && shell.send(&driver::save_now(&inner.dir.key)).await.is_ok()
        {
            let _ = tokio::time::timeout(
                inner.config.local.kill_grace,
                shell.control.wait_for(|record| *record == Record::Saved),
            )
            .await;
        }
        let id = state.next_call;
        state.next_call += 1;
        if let Some((newest, _)) = snapshot::newest(&snapshot::slots(&inner.dir.path)) {
            let copy = inner.dir.join(format!("background-{id}.sh"));
            let env_file = inner.dir.join(format!("background-{id}.env"));
            // Filtered like a restore: the job must keep its own marker.
            let prepared = std::fs::read_to_string(&newest)
                .and_then(|text| std::fs::write(&copy, snapshot::restorable(&text)))
                .and_then(|()| {
                    std::fs::write(
                        &env_file,
                        format!(
                            "unset BASH_ENV\nbuiltin source {} </dev/null >/dev/null 2>&1\n",
                            driver::quote(&copy.to_string_lossy())
                        ),
                    )
                });
            if prepared.is_ok() {
                options.env.insert(
                    "BASH_ENV".to_owned(),
                    env_file.to_string_lossy().into_owned(),
                );
            }
        }
        options.cwd = Some(cwd);
        drop(state);
        inner.background.spawn(command, options).await
    }
}
