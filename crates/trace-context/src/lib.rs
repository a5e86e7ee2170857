//! W3C Trace Context (`traceparent`): the one header that ties a request to the trace it
//! belongs to across services. A request that comes with a valid `traceparent` continues its
//! trace as a child span; one without (or with an invalid one, which the specification says to
//! ignore) starts a new trace. The format, for version `00`:
//! `00-<trace-id: 32 lowercase hex>-<parent-id: 16 lowercase hex>-<flags: 2 hex>`, neither id
//! all zeros; version `ff` is invalid, and a later version is read by its first four fields.
//!
//! Small enough to keep here: the OpenTelemetry crates that also parse it come with a tracing
//! pipeline this service does not run.

use std::fmt;

#[cfg(feature = "otlp")]
pub mod export;

/// The sampled flag: the caller records this trace.
pub const SAMPLED: u8 = 0x01;

/// The header's name (lowercase, as HTTP/2 sends it).
pub const HEADER: &str = "traceparent";

/// The W3C Trace Context Level 2 response header that tells the caller which trace and span
/// answered it.
pub const RESPONSE_HEADER: &str = "traceresponse";

/// A position in a trace: the trace and the span that is the parent of the next hop.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// Reads a `traceparent` value; `None` when it is not one (the caller then starts a trace).
    pub fn parse(value: &str) -> Option<TraceParent> {
        let value = value.trim_matches(|c| c == ' ' || c == '\t');
        let bytes = value.as_bytes();
        if bytes.len() < 55 || !bytes[..55].iter().all(u8::is_ascii) {
            return None;
        }
        let version = lower_hex::<1>(&value[0..2])?[0];
        // Version 00 is exactly 55 characters; a later one may append fields after a dash.
        let exact = version == 0 && bytes.len() == 55;
        let extended = version != 0 && (bytes.len() == 55 || bytes[55] == b'-');
        if version == 0xff || !(exact || extended) {
            return None;
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let trace_id = lower_hex::<16>(&value[3..35])?;
        let span_id = lower_hex::<8>(&value[36..52])?;
        let flags = lower_hex::<1>(&value[53..55])?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            span_id,
            flags,
        })
    }

    /// A new trace, its first span ours; not sampled ([`TraceParent::sampled_now`] when the
    /// service exports its spans).
    pub fn start() -> TraceParent {
        TraceParent {
            trace_id: random_nonzero(),
            span_id: random_nonzero(),
            flags: 0,
        }
    }

    /// The next hop of this trace: a new span whose parent is this one, the flags kept.
    pub fn child(&self) -> TraceParent {
        TraceParent {
            span_id: random_nonzero(),
            ..*self
        }
    }

    /// A child of `incoming` when it is a valid `traceparent`, else a new trace.
    pub fn continue_or_start(incoming: Option<&str>) -> TraceParent {
        incoming
            .and_then(TraceParent::parse)
            .map_or_else(TraceParent::start, |parent| parent.child())
    }

    /// The trace id, 32 lowercase hex characters.
    pub fn trace_id(&self) -> String {
        hex::encode(self.trace_id)
    }

    /// This span's id, 16 lowercase hex characters.
    pub fn span_id(&self) -> String {
        hex::encode(self.span_id)
    }

    pub fn flags(&self) -> u8 {
        self.flags
    }

    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// The same position with the sampled flag set: a trace this service starts while it
    /// exports spans is recorded, and says so to the next hop.
    pub fn sampled_now(self) -> TraceParent {
        TraceParent {
            flags: self.flags | SAMPLED,
            ..self
        }
    }

    /// The trace id's 16 bytes.
    pub fn trace_id_bytes(&self) -> [u8; 16] {
        self.trace_id
    }

    /// This span's id's 8 bytes.
    pub fn span_id_bytes(&self) -> [u8; 8] {
        self.span_id
    }
}

/// The header value, version 00.
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            self.trace_id(),
            self.span_id(),
            self.flags
        )
    }
}

impl fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceParent({self})")
    }
}

/// `N` bytes from exactly `2N` lowercase hex digits (the specification forbids uppercase).
fn lower_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0; N];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

fn random_nonzero<const N: usize>() -> [u8; N] {
    let mut out = [0; N];
    // The system's random source failing is not a reason to fail a request: fall back to the
    // clock's nanoseconds, which still tells traces apart.
    if getrandom::fill(&mut out).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos())
            .to_le_bytes();
        for (o, n) in out.iter_mut().zip(nanos.iter().cycle()) {
            *o = *n;
        }
    }
    if out.iter().all(|b| *b == 0) {
        out[N - 1] = 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // The specification's example.
    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn reads_the_specifications_example() {
        let parent = TraceParent::parse(EXAMPLE).unwrap();
        assert_eq!(parent.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parent.span_id(), "00f067aa0ba902b7");
        assert!(parent.sampled());
        assert_eq!(parent.to_string(), EXAMPLE);
    }

    #[test]
    fn refuses_what_the_specification_says_to_ignore() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next";
        let parent = TraceParent::parse(later).unwrap();
        assert_eq!(parent.to_string(), EXAMPLE);
    }

    #[test]
    fn a_child_keeps_the_trace_and_flags_and_takes_a_new_span() {
        let parent = TraceParent::parse(EXAMPLE).unwrap();
        let child = parent.child();
        assert_eq!(child.trace_id(), parent.trace_id());
        assert_eq!(child.flags(), parent.flags());
        assert_ne!(child.span_id(), parent.span_id());
        let continued = TraceParent::continue_or_start(Some(EXAMPLE));
        assert_eq!(continued.trace_id(), parent.trace_id());
    }

    #[test]
    fn without_a_valid_parent_a_new_unsampled_trace_starts() {
        let a = TraceParent::continue_or_start(None);
        let b = TraceParent::continue_or_start(Some("garbage"));
        assert_ne!(a.trace_id(), b.trace_id());
        assert!(!a.sampled());
        assert_eq!(TraceParent::parse(&a.to_string()), Some(a));
    }

    proptest! {
        #[test]
        fn whatever_comes_in_parsing_never_panics(s in "\\PC{0,80}") {
            let _ = TraceParent::parse(&s);
        }

        #[test]
        fn what_it_writes_it_reads(t in any::<[u8; 16]>(), p in any::<[u8; 8]>(), f in any::<u8>()) {
            prop_assume!(t != [0; 16] && p != [0; 8]);
            let value = format!("00-{}-{}-{f:02x}", hex::encode(t), hex::encode(p));
            let parsed = TraceParent::parse(&value).unwrap();
            prop_assert_eq!(parsed.to_string(), value);
        }
    }
}
