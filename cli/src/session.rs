//! One cluster and how its answers are shown: what `weir sql` and `weir shell` share. A
//! statement runs as a query when it returns rows ([`crate::script::is_query`]), else
//! through `Cluster::execute_with_progress` (a COPY shows its progress on standard error).

use crate::format;
use crate::progress::CopyBar;
use crate::script;
use crate::{Cluster, MessageStats, Value};
use std::io::Write;
use std::time::Instant;

/// How answers are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// An aligned table and a row count.
    Table,
    /// One JSON object per statement, on its own line.
    Json,
    /// CSV with a header line.
    Csv,
}

/// A cluster with the shell's or script's settings.
pub struct Session {
    /// The cluster every statement runs on.
    pub cluster: Cluster,
    /// How answers are printed.
    pub mode: Mode,
    /// Print each query's messages by type (and their total and bytes).
    pub stats: bool,
    /// Print each statement's run time.
    pub timer: bool,
    /// The message figures of the last query.
    pub last_stats: Option<MessageStats>,
}

impl Session {
    /// A session on `cluster`, printing tables.
    pub fn new(cluster: Cluster) -> Self {
        Session {
            cluster,
            mode: Mode::Table,
            stats: false,
            timer: false,
            last_stats: None,
        }
    }

    /// Runs one statement with `params` and prints its answer to standard output.
    pub fn run(&mut self, stmt: &str, params: &[Value]) -> crate::Result<()> {
        let started = Instant::now();
        let mut out = String::new();
        if script::is_query(stmt) {
            let result = self.cluster.query(stmt, params)?;
            let messages = result.stats.messages.clone();
            match self.mode {
                Mode::Table => {
                    out.push_str(&format::table(&result));
                    out.push_str(&format!("\n({} rows)\n", result.num_rows()));
                    if self.stats {
                        out.push_str(&format::stats_text(&messages));
                    }
                }
                Mode::Json => {
                    out.push_str(&format::json(&result, self.stats.then_some(&messages)));
                    out.push('\n');
                }
                Mode::Csv => out.push_str(&format::csv(&result)),
            }
            self.last_stats = Some(messages);
        } else {
            let n = if params.is_empty() {
                let mut bar = CopyBar::new(stmt);
                self.cluster
                    .execute_with_progress(stmt, &mut |p| bar.update(p))?
            } else {
                self.cluster.execute_with(stmt, params)?
            };
            match self.mode {
                Mode::Table => out.push_str(&format!("({n} rows affected)\n")),
                Mode::Json => {
                    out.push_str(&format::rows_affected_json(n));
                    out.push('\n');
                }
                Mode::Csv => {}
            }
        }
        if self.timer {
            out.push_str(&format!(
                "Run Time: {:.3}s\n",
                started.elapsed().as_secs_f64()
            ));
        }
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
        Ok(())
    }
}
