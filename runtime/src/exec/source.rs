//! The actor at the leaves of a fragment that reads stored partitions (an external table's
//! files, constant rows, or a `generate_series`) and produces batches as its consumer grants
//! credits. A scan takes a hash join's filter of its build keys ([`ProbeFilter`]) and drops
//! the rows it rules out before copying them. A batch its output edge cannot send yet
//! (credit, or memory on the node) is held there, and the source reads no further until it
//! went.

use crate::exec::flow::Output;
use crate::exec::guard::guarded;
use crate::exec::messages::{Cancel, Credit, ProbeFilter};
use crate::exec::messages::{FragmentLink, OpFailed, OpStopped};
use crate::memory::messages::MemoryFreed;
use crate::node::state::LiveGuard;
use actix::prelude::*;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Instant;
use weir_operators::kernels::series::SeriesSource;
use weir_operators::kernels::ScanSource;
use weir_operators::Batch;

/// Where a source's batches come from.
pub enum SourceKind {
    /// A (filtered, projected) scan of stored chunks.
    Scan(Box<ScanSource>),
    /// Batches computed up front (index lookups, constant rows).
    Batches(VecDeque<Batch>),
    /// A node's share of a scan of an external table's files.
    Files(Box<weir_io::external::ExternalScan>),
    /// `generate_series`, a batch at a time.
    Series(SeriesSource),
}

/// Produces batches from a [`SourceKind`], one per credit.
pub struct SourceActor {
    source: SourceKind,
    out: Output,
    link: FragmentLink,
    done: bool,
    live: LiveGuard,
}

impl SourceActor {
    /// A source sending to `out`.
    pub fn new(source: SourceKind, out: Output, link: FragmentLink, live: LiveGuard) -> Self {
        SourceActor {
            source,
            out,
            link,
            done: false,
            live,
        }
    }

    fn next(&mut self) -> weir_operators::Result<Option<Batch>> {
        match &mut self.source {
            SourceKind::Scan(s) => {
                let before = s.key_filtered_rows();
                let batch = s.next_batch();
                let ruled_out = s.key_filtered_rows() - before;
                if ruled_out > 0 {
                    self.live
                        .node()
                        .filtered_rows
                        .fetch_add(ruled_out, Ordering::Relaxed);
                }
                batch
            }
            SourceKind::Batches(q) => Ok(q.pop_front()),
            SourceKind::Files(s) => s.next_batch(),
            SourceKind::Series(s) => s.next_batch(),
        }
    }

    fn fail(&mut self, e: weir_operators::Error, ctx: &mut Context<Self>) {
        self.done = true;
        self.out.discard();
        self.link.failed.do_send(OpFailed(e));
        ctx.stop();
    }

    fn produce(&mut self, ctx: &mut Context<Self>) {
        while self.out.ready() && !self.done {
            let started = Instant::now();
            let next = guarded("Source", || self.next());
            self.out.stat().busy(started.elapsed());
            match next {
                Ok(Some(b)) if b.num_rows() == 0 => continue,
                Ok(Some(b)) => {
                    if let Err(e) = self.out.send(b) {
                        return self.fail(e, ctx);
                    }
                }
                Ok(None) => {
                    self.done = true;
                    self.out.end();
                    ctx.stop();
                }
                Err(e) => return self.fail(e, ctx),
            }
        }
    }
}

impl Actor for SourceActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Tell the consumer who feeds it; it answers with credits.
        self.out.attach_filtered(ctx.address());
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.out.discard();
        self.link.stopped.do_send(OpStopped);
    }
}

impl Handler<Credit> for SourceActor {
    type Result = ();

    fn handle(&mut self, msg: Credit, ctx: &mut Context<Self>) {
        if self.done {
            return;
        }
        if let Err(e) = self.out.grant(msg) {
            return self.fail(e, ctx);
        }
        self.produce(ctx);
    }
}

impl Handler<MemoryFreed> for SourceActor {
    type Result = ();

    fn handle(&mut self, _msg: MemoryFreed, ctx: &mut Context<Self>) {
        if self.done {
            return;
        }
        if let Err(e) = self.out.memory_freed() {
            return self.fail(e, ctx);
        }
        self.produce(ctx);
    }
}

impl Handler<ProbeFilter> for SourceActor {
    type Result = ();

    /// A join above needs only rows with the filter's keys: a scan of stored rows drops the
    /// others before it copies them (other sources, and keys that are not plain columns of
    /// the scan, go on as they were).
    fn handle(&mut self, msg: ProbeFilter, _ctx: &mut Context<Self>) {
        if let SourceKind::Scan(s) = &mut self.source {
            s.add_key_filter(msg.filter, &msg.keys);
        }
    }
}

impl Handler<Cancel> for SourceActor {
    type Result = ();

    fn handle(&mut self, _msg: Cancel, ctx: &mut Context<Self>) {
        self.done = true;
        ctx.stop();
    }
}
