//! Reading connection strings: which PostgreSQL hosts and ports a string names, the libpq
//! settings the service adds, and what is plainly a SQLite file path.

use super::Database;

impl Database {
    /// The TCP ports a PostgreSQL connection string names, one per host (5432 where it names
    /// none; a port set only in libpq's `PGPORT` is not seen, and then no call on such a
    /// connection can be cut off: see [`crate::cutoff`]).
    pub fn pg_ports(&self) -> Vec<u16> {
        let default = 5432;
        let ports: Vec<Option<u16>> = match self.target.split_once("://") {
            Some((_, rest)) => {
                let authority = rest.split(['/', '?']).next().unwrap_or_default();
                let hosts = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                hosts
                    .split(',')
                    .map(|host| {
                        // After an IPv6 literal's `]`, or after the last `:` of a name.
                        let tail = host.rsplit_once(']').map_or(host, |(_, t)| t);
                        tail.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
                    })
                    .collect()
            }
            None => self
                .target
                .split_whitespace()
                .find_map(|pair| pair.strip_prefix("port="))
                .map(|list| list.split(',').map(|p| p.trim().parse().ok()).collect())
                .unwrap_or_default(),
        };
        let mut ports: Vec<u16> = ports.into_iter().map(|p| p.unwrap_or(default)).collect();
        if ports.is_empty() {
            ports.push(default);
        }
        ports
    }

    /// The PostgreSQL connection string with libpq's dead-peer settings added where it names
    /// none: `connect_timeout` (else a connection to an unreachable host waits for the
    /// operating system's TCP timeout), TCP keepalives and `tcp_user_timeout` (else a peer
    /// whose host vanished, or a blackholed port, holds a connection for the kernel's
    /// retransmission timeout, minutes).
    pub(super) fn pg_url(&self) -> String {
        let secs = self.timeouts.connect.as_secs().max(2);
        let defaults = [
            ("connect_timeout", secs.to_string()),
            ("keepalives", "1".to_owned()),
            ("keepalives_idle", "5".to_owned()),
            ("keepalives_interval", "2".to_owned()),
            ("keepalives_count", "3".to_owned()),
            ("tcp_user_timeout", (secs * 1000).max(2000).to_string()),
        ];
        let keyword = !self.target.contains("://");
        let mut out = self.target.clone();
        for (name, value) in defaults {
            if self.target.contains(&format!("{name}=")) {
                continue;
            }
            let sep = match (keyword, out.contains('?')) {
                (true, _) => ' ',
                (false, true) => '&',
                (false, false) => '?',
            };
            out.push_str(&format!("{sep}{name}={value}"));
        }
        out
    }
}

/// A libpq keyword connection string: `keyword=value` pairs separated by spaces, the first a
/// connection keyword.
pub(super) fn is_keyword_conninfo(s: &str) -> bool {
    const KEYWORDS: [&str; 8] = [
        "host", "hostaddr", "port", "dbname", "user", "password", "service", "sslmode",
    ];
    let s = s.trim();
    s.split_once('=')
        .is_some_and(|(first, _)| KEYWORDS.contains(&first.trim()))
        && s.split_whitespace().all(|pair| pair.contains('='))
}

/// Plainly a file path: no spaces or `=` (a keyword string, or a mangled one), and no
/// `word:` prefix (a URL missing its slashes), except a Windows-style drive letter.
pub(super) fn is_plain_path(s: &str) -> bool {
    let scheme_like = s
        .split_once(':')
        .is_some_and(|(head, _)| head.len() > 1 && !head.contains('/'));
    !s.is_empty() && !s.contains(char::is_whitespace) && !s.contains('=') && !scheme_like
}
