//! Committed writes that SQLite's recovery would drop, found before it runs.
//!
//! When a database is opened after a crash, SQLite rebuilds its index of the WAL by reading
//! frames until the first one whose salt or cumulative checksum does not match, and ignores
//! everything after it. That is right for a torn tail (the last transaction, never
//! acknowledged), but one damaged byte early in the WAL makes it drop every later transaction
//! too, each of them acknowledged, without a word. [`inspect`] reads the WAL the same way and
//! tells the two apart: a commit frame of the same WAL generation (matching salts) after the
//! first invalid frame means committed transactions would be lost.
//!
//! The format (sqlite.org/fileformat.html, "WAL file format"): a 32-byte header (magic, version,
//! page size, checkpoint sequence, two salts, a checksum of the first 24 bytes), then frames of
//! a 24-byte header (page number, database size after commit or 0, the two salts, a cumulative
//! checksum) and one page. The checksum runs over 32-bit words, big-endian when the magic's low
//! bit is set, little-endian otherwise.

use std::path::{Path, PathBuf};

const HEADER: usize = 32;
const FRAME_HEADER: usize = 24;
const MAGIC: u32 = 0x377f_0682;

/// What recovery would drop from a WAL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    /// The first frame recovery stops at (0-based).
    pub first_bad_frame: u64,
    /// Committed transactions after it (commit frames of this WAL generation).
    pub commits: u64,
    /// Frames from the first bad one to the last lost commit.
    pub frames: u64,
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} committed transactions ({} frames) after the damaged frame {}",
            self.commits, self.frames, self.first_bad_frame
        )
    }
}

/// The WAL beside the database at `db`.
pub fn wal_path(db: &Path) -> PathBuf {
    sibling(db, "-wal")
}

/// The marker a detected loss leaves beside the database until an operator decides: writes
/// stay refused across restarts, even after SQLite has rewritten the WAL.
pub fn marker_path(db: &Path) -> PathBuf {
    sibling(db, ".damaged")
}

fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Reads the WAL of the database at `db` as recovery would; `None` when nothing committed
/// would be lost (no WAL, an empty one, a clean one, or only a torn last transaction).
pub fn inspect(db: &Path) -> std::io::Result<Option<Loss>> {
    match std::fs::read(wal_path(db)) {
        Ok(bytes) => Ok(losses(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn be(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// SQLite's WAL checksum of `data` (a multiple of 8 bytes), continuing from `sum`.
fn checksum(sum: (u32, u32), data: &[u8], big_endian: bool) -> (u32, u32) {
    let word = |w: &[u8]| {
        let w = [w[0], w[1], w[2], w[3]];
        if big_endian {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    };
    let (mut s0, mut s1) = sum;
    for pair in data.chunks_exact(8) {
        s0 = s0.wrapping_add(word(&pair[..4])).wrapping_add(s1);
        s1 = s1.wrapping_add(word(&pair[4..])).wrapping_add(s0);
    }
    (s0, s1)
}

/// [`inspect`] on the WAL's bytes.
pub fn losses(wal: &[u8]) -> Option<Loss> {
    if wal.len() < HEADER {
        return None;
    }
    let magic = be(wal, 0);
    let page = be(wal, 8) as usize;
    if magic & !1 != MAGIC || !(512..=65_536).contains(&page) || !page.is_power_of_two() {
        // Not a WAL SQLite would read at all; nothing it could have written either.
        return None;
    }
    let big_endian = magic & 1 == 1;
    let frame = FRAME_HEADER + page;
    let frames = (wal.len() - HEADER) / frame;
    let at = |i: usize| HEADER + i * frame;
    let salts = |i: usize| (be(wal, at(i) + 8), be(wal, at(i) + 12));
    let commit = |i: usize| be(wal, at(i) + 4) != 0;
    let header_ok = checksum((0, 0), &wal[..24], big_endian) == (be(wal, 24), be(wal, 28));
    // With a damaged header recovery reads no frame; the first frame's salts then tell which
    // frames belong to the generation the header described.
    let generation = match (header_ok, frames) {
        (true, _) => (be(wal, 16), be(wal, 20)),
        (false, 0) => return None,
        (false, _) => salts(0),
    };
    let mut sum = (be(wal, 24), be(wal, 28));
    let mut first_bad = if header_ok { None } else { Some(0) };
    if header_ok {
        for i in 0..frames {
            let start = at(i);
            sum = checksum(sum, &wal[start..start + 8], big_endian);
            sum = checksum(sum, &wal[start + FRAME_HEADER..start + frame], big_endian);
            let stored = (be(wal, start + 16), be(wal, start + 20));
            if salts(i) != generation || sum != stored {
                first_bad = Some(i);
                break;
            }
        }
    }
    let first_bad = first_bad?;
    let committed = |i: &usize| salts(*i) == generation && commit(*i);
    // A damaged last transaction with nothing committed after it is a torn write, never
    // acknowledged. With a damaged header, recovery reads no frame at all.
    if header_ok && !(first_bad + 1..frames).any(|i| committed(&i)) {
        return None;
    }
    let from = if header_ok { first_bad } else { 0 };
    let lost: Vec<usize> = (from..frames).filter(committed).collect();
    let last = *lost.last()?;
    Some(Loss {
        first_bad_frame: first_bad as u64,
        commits: lost.len() as u64,
        frames: (last - first_bad + 1) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAL of `commits` one-frame transactions, checksummed as SQLite does (little-endian).
    fn wal(commits: u32, page: usize) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(MAGIC.to_be_bytes());
        out.extend(3_007_000_u32.to_be_bytes());
        out.extend((page as u32).to_be_bytes());
        out.extend(0_u32.to_be_bytes());
        out.extend(11_u32.to_be_bytes());
        out.extend(22_u32.to_be_bytes());
        let mut sum = checksum((0, 0), &out, false);
        out.extend(sum.0.to_be_bytes());
        out.extend(sum.1.to_be_bytes());
        for n in 1..=commits {
            let mut head = Vec::new();
            head.extend(n.to_be_bytes());
            head.extend(n.to_be_bytes()); // a commit: the database's size in pages
            let body = vec![n as u8; page];
            sum = checksum(sum, &head, false);
            sum = checksum(sum, &body, false);
            head.extend(11_u32.to_be_bytes());
            head.extend(22_u32.to_be_bytes());
            head.extend(sum.0.to_be_bytes());
            head.extend(sum.1.to_be_bytes());
            out.extend(head);
            out.extend(body);
        }
        out
    }

    const PAGE: usize = 512;

    #[test]
    fn a_clean_wal_loses_nothing() {
        assert_eq!(losses(&wal(10, PAGE)), None);
        assert_eq!(losses(&wal(0, PAGE)), None);
        assert_eq!(losses(&[]), None);
    }

    #[test]
    fn a_torn_last_frame_is_no_loss() {
        let mut w = wal(10, PAGE);
        let len = w.len();
        w[len - 3] ^= 0xff;
        assert_eq!(losses(&w), None);
        w.truncate(len - 100);
        assert_eq!(losses(&w), None);
    }

    #[test]
    fn a_damaged_early_frame_loses_every_later_commit() {
        let mut w = wal(10, PAGE);
        w[HEADER + 2 * (FRAME_HEADER + PAGE) + FRAME_HEADER + 7] ^= 0x01;
        let loss = losses(&w).unwrap();
        assert_eq!(
            loss,
            Loss {
                first_bad_frame: 2,
                commits: 8,
                frames: 8
            }
        );
        assert!(loss.to_string().contains("8 committed transactions"));
    }

    #[test]
    fn a_damaged_header_or_salt_counts_too() {
        let mut w = wal(5, PAGE);
        w[5] ^= 0x01;
        assert_eq!(losses(&w).unwrap().commits, 5);
        let mut w = wal(5, PAGE);
        w[HEADER + 8] ^= 0x01; // the first frame's salt
        assert_eq!(losses(&w).unwrap().commits, 4);
    }

    #[test]
    fn frames_of_an_older_generation_are_not_counted() {
        let mut w = wal(6, PAGE);
        // Frames 3.. carry other salts: left over from before the WAL was restarted.
        for i in 3..6 {
            let salt = HEADER + i * (FRAME_HEADER + PAGE) + 8;
            w[salt..salt + 4].copy_from_slice(&99_u32.to_be_bytes());
        }
        assert_eq!(losses(&w), None);
    }

    #[test]
    fn whatever_the_bytes_inspection_never_panics() {
        let mut w = wal(4, PAGE);
        for i in (0..w.len()).step_by(97) {
            w[i] ^= 0x5a;
            let _ = losses(&w);
            let _ = losses(&w[..i]);
        }
    }
}
