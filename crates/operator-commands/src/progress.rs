//! Progress of the long one-shot commands (`seed`, `migrate-data`, `ledger-check`) on a
//! terminal: done so far, rate and time left. indicatif draws only when standard error is a
//! terminal, so logs, pipes and CI stay quiet.

use std::fmt::Write;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// A bar over `total` units of `what`.
pub fn bar(what: &str, total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:>16} [{bar:32}] {human_pos}/{human_len} {rate:>9}/s {eta} left",
    ) {
        let rate = |state: &ProgressState, w: &mut dyn Write| {
            let _ = write!(w, "{:.0}", state.per_sec());
        };
        bar.set_style(style.with_key("rate", rate).progress_chars("=> "));
    }
    bar.set_message(what.to_owned());
    bar
}
