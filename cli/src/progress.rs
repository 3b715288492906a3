//! Progress of long work (a COPY, loading the demo data) on standard error: an indicatif bar
//! on a terminal, and a plain line per step (every tenth of the work, and the end) when
//! standard error is not one, so logs stay readable.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use weir_runtime::{CopyProgress, ProgressUnit};

/// Shows the progress of one COPY.
pub struct CopyBar {
    label: String,
    bar: Option<ProgressBar>,
    terminal: bool,
    /// Plain mode: the last tenth (of `total`) or the last 100,000 rows reported.
    last_step: u64,
}

impl CopyBar {
    /// A display for the COPY `label` names (its statement, shortened).
    pub fn new(label: &str) -> Self {
        let mut label: String = label.split_whitespace().collect::<Vec<_>>().join(" ");
        if label.chars().count() > 60 {
            label = label.chars().take(57).collect::<String>() + "...";
        }
        CopyBar {
            label,
            bar: None,
            terminal: std::io::stderr().is_terminal(),
            last_step: 0,
        }
    }

    /// Shows `p`.
    pub fn update(&mut self, p: &CopyProgress) {
        if self.terminal {
            self.update_bar(p);
        } else {
            self.update_plain(p);
        }
    }

    fn update_bar(&mut self, p: &CopyProgress) {
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(p.total, ProgressDrawTarget::stderr());
            let template = match (p.unit, p.total.is_some()) {
                (ProgressUnit::Bytes, true) => "{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})",
                (_, true) => "{msg} [{bar:30}] {pos}/{len} rows ({eta})",
                (_, false) => "{msg} {spinner} {pos} rows",
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(self.label.clone());
            bar
        });
        bar.set_position(p.done);
        if p.finished {
            bar.finish_and_clear();
        }
    }

    fn update_plain(&mut self, p: &CopyProgress) {
        if p.finished {
            eprintln!("{}: done, {} rows", self.label, p.rows);
            return;
        }
        let step = match p.total {
            Some(t) if t > 0 => p.done.saturating_mul(10) / t,
            _ => p.rows / 100_000,
        };
        if step > self.last_step {
            self.last_step = step;
            match (p.total, p.unit) {
                (Some(t), ProgressUnit::Bytes) => eprintln!(
                    "{}: {} of {} bytes read, {} rows",
                    self.label, p.done, t, p.rows
                ),
                (Some(t), ProgressUnit::Rows) => {
                    eprintln!("{}: {} of {} rows", self.label, p.done, t)
                }
                (None, _) => eprintln!("{}: {} rows", self.label, p.rows),
            }
        }
    }
}

/// Runs `work`, showing `what` as a spinner on a terminal, or a line before and after when
/// standard error is not one.
pub fn step<T>(what: &str, work: impl FnOnce() -> T) -> T {
    let started = std::time::Instant::now();
    if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new_spinner().with_message(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        let out = work();
        bar.finish_and_clear();
        eprintln!("{what}: done in {:.2?}", started.elapsed());
        out
    } else {
        eprintln!("{what} ...");
        let out = work();
        eprintln!("{what}: done in {:.2?}", started.elapsed());
        out
    }
}
