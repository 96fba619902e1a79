//! What the proxy refused and not yet told: the environment takes it into
//! the notes of the call that ends next (`Realm::after_call`), one note
//! per host, so the model learns the domain and the setting that would
//! allow it.

use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

/// Distinct refusals kept until they are taken; beyond, only counted.
const MAX_KEPT: usize = 32;
/// Notes one call gets at most; the rest are summed up in one more.
const MAX_NOTES: usize = 5;

/// Why a host was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// No entry matches it.
    NotListed,
    /// It resolved only to addresses of the host or a private network,
    /// and it was not allowed by its exact name.
    Private(IpAddr),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    host: String,
    ports: Vec<u16>,
    reason: Reason,
    /// The host is an address literal.
    literal: bool,
}

#[derive(Debug, Default)]
struct Pending {
    refusals: Vec<Refusal>,
    /// Refusals of hosts beyond [`MAX_KEPT`].
    more: usize,
}

/// The refusals since they were last taken.
#[derive(Debug, Default)]
pub struct Record {
    pending: Mutex<Pending>,
}

impl Record {
    /// Notes one refusal.
    pub fn refused(&self, host: &str, port: u16, literal: bool, reason: Reason) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = pending
            .refusals
            .iter_mut()
            .find(|known| known.host == host && known.reason == reason)
        {
            if !known.ports.contains(&port) && known.ports.len() < 4 {
                known.ports.push(port);
            }
            return;
        }
        if pending.refusals.len() == MAX_KEPT {
            pending.more += 1;
            return;
        }
        pending.refusals.push(Refusal {
            host: host.to_owned(),
            ports: vec![port],
            reason,
            literal,
        });
    }

    /// The notes for what was refused since the last call, and forgets it.
    pub fn take_notes(&self) -> Vec<String> {
        let pending =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let mut notes: Vec<String> = pending.refusals.iter().take(MAX_NOTES).map(note).collect();
        let rest = pending.refusals.len().saturating_sub(MAX_NOTES) + pending.more;
        if rest > 0 {
            let hosts: Vec<&str> = pending
                .refusals
                .iter()
                .skip(MAX_NOTES)
                .map(|refusal| refusal.host.as_str())
                .collect();
            notes.push(format!(
                "sandbox: the proxy refused {rest} more host{} ({}{}) for the same reasons",
                if rest == 1 { "" } else { "s" },
                hosts.join(", "),
                if pending.more > 0 { ", ..." } else { "" }
            ));
        }
        notes
    }
}

/// The note for one refused host.
fn note(refusal: &Refusal) -> String {
    let ports = refusal
        .ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    explain(&refusal.host, &ports, refusal.literal, &refusal.reason)
}

/// Why `host` was refused and what would allow it: the note, and the body
/// of the proxy's answer to a plain HTTP client.
pub fn explain(host: &str, ports: &str, literal: bool, reason: &Reason) -> String {
    let why = match (reason, literal) {
        (Reason::NotListed, false) => "it is not among the allowed domains".to_owned(),
        (Reason::NotListed, true) => {
            "an IP address is reached only when it is allowed as such".to_owned()
        }
        (Reason::Private(address), _) => format!(
            "it resolves to {address}, an address of this machine, of a network it is on, or \
             of a private, link-local or reserved range, where only a domain allowed by its \
             exact name may lead (not a wildcard or the registries preset)"
        ),
    };
    format!(
        "sandbox: the network reaches only the allowed domains, and bashtool's proxy refused \
         `{host}` (port {ports}): {why}; a user who wants commands to reach it runs bashtool \
         with `--allow-domain {host}` (TOML: [sandbox] allowed_domains = [\"{host}\"])"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_note_per_host_naming_it_and_the_flag() {
        let record = Record::default();
        record.refused("evil.example", 443, false, Reason::NotListed);
        record.refused("evil.example", 80, false, Reason::NotListed);
        record.refused("evil.example", 443, false, Reason::NotListed);
        record.refused("127.0.0.1", 22, true, Reason::NotListed);
        record.refused(
            "rebind.example.com",
            443,
            false,
            Reason::Private("127.0.0.1".parse().expect("address")),
        );
        assert_eq!(
            record.take_notes(),
            [
                "sandbox: the network reaches only the allowed domains, and bashtool's proxy \
                 refused `evil.example` (port 443, 80): it is not among the allowed domains; a \
                 user who wants commands to reach it runs bashtool with `--allow-domain \
                 evil.example` (TOML: [sandbox] allowed_domains = [\"evil.example\"])",
                "sandbox: the network reaches only the allowed domains, and bashtool's proxy \
                 refused `127.0.0.1` (port 22): an IP address is reached only when it is allowed \
                 as such; a user who wants commands to reach it runs bashtool with \
                 `--allow-domain 127.0.0.1` (TOML: [sandbox] allowed_domains = [\"127.0.0.1\"])",
                "sandbox: the network reaches only the allowed domains, and bashtool's proxy \
                 refused `rebind.example.com` (port 443): it resolves to 127.0.0.1, an address \
                 of this machine, of a network it is on, or of a private, link-local or \
                 reserved range, where only a domain allowed by its exact name may lead (not a \
                 wildcard or the registries preset); a user who wants commands to reach it runs bashtool with `--allow-domain rebind.example.com` \
                 (TOML: [sandbox] allowed_domains = [\"rebind.example.com\"])",
            ]
        );
        assert!(record.take_notes().is_empty(), "taken once");
    }

    #[test]
    fn many_hosts_are_summed_up_and_memory_stays_bounded() {
        let record = Record::default();
        for index in 0..1000 {
            record.refused(&format!("h{index}.example"), 443, false, Reason::NotListed);
        }
        let notes = record.take_notes();
        assert_eq!(notes.len(), MAX_NOTES + 1);
        let last = notes.last().expect("summary");
        assert!(
            last.starts_with("sandbox: the proxy refused 995 more hosts (h5.example, h6.example,"),
            "{last}"
        );
        assert!(last.ends_with(", ...) for the same reasons"), "{last}");
    }
}
