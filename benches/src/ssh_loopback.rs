//! A private `sshd` on 127.0.0.1 for item 9's SSH row: host and user keys
//! generated in a temp dir, killed on drop. `None` when sshd is missing.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd; killed on drop.
pub struct Sshd {
    child: Child,
    /// `ssh -p PORT -i KEY … 127.0.0.1`: append the remote command.
    pub ssh: String,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) -> anyhow::Result<()> {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(path)
        .status()?;
    anyhow::ensure!(status.success(), "ssh-keygen failed");
    Ok(())
}

/// Starts sshd with its files in `dir`, or says why not.
pub fn start(dir: &Path) -> anyhow::Result<Sshd> {
    anyhow::ensure!(Path::new(SSHD).exists(), "{SSHD} is not installed");
    keygen(&dir.join("host_key"))?;
    keygen(&dir.join("user_key"))?;
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys"))?;
    std::fs::create_dir_all("/run/sshd")?;
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "ListenAddress 127.0.0.1\nHostKey {dir}/host_key\nAuthorizedKeysFile {dir}/authorized_keys\n\
             StrictModes no\nPidFile {dir}/sshd.pid\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\n",
            dir = dir.display()
        ),
    )?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut child = Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .args(["-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take();
    let (ready, listening) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Some(stderr) = stderr else { return };
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("Server listening") {
                let _ = ready.send(());
            }
        }
    });
    let sshd = Sshd {
        child,
        ssh: format!(
            "ssh -p {port} -i {key} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
             -o BatchMode=yes -o LogLevel=ERROR 127.0.0.1",
            key = dir.join("user_key").display()
        ),
    };
    listening
        .recv_timeout(Duration::from_secs(20))
        .map_err(|_| anyhow::anyhow!("sshd did not listen within 20 s"))?;
    Ok(sshd)
}
