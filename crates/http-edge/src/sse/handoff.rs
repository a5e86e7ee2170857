//! Committed events handed to the streams that follow their topic, so that a stream that is
//! caught up sends the next event without reading it back from the database.
//!
//! A topic's stream positions are its sequences (1, 2, 3… without gaps, as an account's
//! events). The handler that committed an event hands it over after the commit; a stream at
//! `after` takes what was handed over only when it runs on without a gap from `after + 1`
//! (two commits may hand over out of order, and another process's commits are never handed
//! over here): anything else is a gap, and the stream reads the database, which stays the
//! truth. Each topic keeps its last few events only, bounded by count and bytes.

use std::collections::VecDeque;

use super::Frame;

/// Events kept per followed topic, at most.
const KEPT: usize = 32;
/// Bytes of event data kept per followed topic, at most (the newest event always stays).
const KEPT_BYTES: usize = 64 * 1024;

/// A topic's last handed-over events, ascending by sequence.
#[derive(Debug, Default)]
pub struct Recent {
    events: VecDeque<(i64, Frame)>,
    bytes: usize,
}

/// What a stream at some position finds handed over.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken<C> {
    /// Nothing after the position: nothing new committed here.
    Nothing,
    /// The events right after the position, without a gap, as far as anything was handed over.
    Next(Vec<(C, Frame)>),
    /// Something after the position is missing here: read the database.
    Gap,
}

impl Recent {
    /// `frame`, the event at `sequence`, was committed.
    pub fn hand(&mut self, sequence: i64, frame: Frame) {
        let at = self.events.partition_point(|(s, _)| *s < sequence);
        if self.events.get(at).is_some_and(|(s, _)| *s == sequence) {
            return;
        }
        self.bytes += frame.data.len();
        self.events.insert(at, (sequence, frame));
        while self.events.len() > KEPT || (self.bytes > KEPT_BYTES && self.events.len() > 1) {
            if let Some((_, dropped)) = self.events.pop_front() {
                self.bytes -= dropped.data.len();
            }
        }
    }

    /// What a stream that has sent everything up to `after` may send next.
    pub fn after(&self, after: i64) -> Taken<i64> {
        let from = self.events.partition_point(|(s, _)| *s <= after);
        let newer = self.events.range(from..);
        if newer.len() == 0 {
            return Taken::Nothing;
        }
        let mut expected = after;
        for (sequence, _) in newer.clone() {
            expected += 1;
            if *sequence != expected {
                return Taken::Gap;
            }
        }
        Taken::Next(newer.cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::frame;
    use super::*;

    fn handed(sequences: &[i64]) -> Recent {
        let mut recent = Recent::default();
        for s in sequences {
            recent.hand(*s, frame(*s));
        }
        recent
    }

    fn next(sequences: &[i64]) -> Taken<i64> {
        Taken::Next(sequences.iter().map(|s| (*s, frame(*s))).collect())
    }

    #[test]
    fn a_caught_up_stream_takes_what_follows_without_a_gap() {
        let recent = handed(&[3, 4, 5]);
        assert_eq!(recent.after(2), next(&[3, 4, 5]));
        assert_eq!(recent.after(4), next(&[5]));
        assert_eq!(recent.after(5), Taken::Nothing);
        assert_eq!(recent.after(9), Taken::Nothing);
    }

    #[test]
    fn a_missing_event_is_a_gap_the_database_fills() {
        // 4 was committed elsewhere (another process) or is still on its way here.
        let recent = handed(&[3, 5]);
        assert_eq!(recent.after(2), Taken::Gap);
        assert_eq!(recent.after(3), Taken::Gap);
        assert_eq!(recent.after(4), next(&[5]));
        // Older events than any kept: the stream is behind what is kept.
        assert_eq!(handed(&[7, 8]).after(5), Taken::Gap);
    }

    #[test]
    fn events_handed_over_out_of_order_or_twice_are_kept_once_in_order() {
        let recent = handed(&[5, 3, 4, 4]);
        assert_eq!(recent.after(2), next(&[3, 4, 5]));
    }

    #[test]
    fn a_topic_keeps_its_newest_events_by_count_and_by_bytes() {
        let recent = handed(&(1..=100).collect::<Vec<_>>());
        assert_eq!(recent.events.len(), KEPT);
        assert_eq!(
            recent.after(100 - KEPT as i64),
            next(&(69..=100).collect::<Vec<_>>())
        );
        assert_eq!(recent.after(0), Taken::Gap);

        let mut big = Recent::default();
        let data = "x".repeat(KEPT_BYTES / 2 + 1);
        for s in 1..=3 {
            big.hand(
                s,
                Frame {
                    id: s.to_string(),
                    data: data.clone(),
                },
            );
        }
        assert_eq!(big.events.len(), 1);
        assert_eq!(big.bytes, data.len());
        assert_eq!(big.after(1), Taken::Gap);
        assert_eq!(big.after(3), Taken::Nothing);
    }
}
