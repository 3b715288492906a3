//! The recursive union of `WITH RECURSIVE name AS (base UNION [ALL] step)`.
//!
//! Input 0 is the base term; its rows go out as they come and make the first working table.
//! Inputs 1 and up are the relations the step reads besides the working table, held whole
//! once they arrived. When every input has ended, each call for output runs one round: the
//! step is evaluated in memory over the working table ([`run_local`]), and the rows it makes
//! (under UNION, those never seen before) go out and become the next working table. A round
//! that adds nothing ends the query; a round past the iteration limit fails it, naming the
//! query, so an endless recursion is an error rather than a hang. Only as many rounds run as
//! the consumer asks output for.
//!
//! Everything held (the step's inputs, the working table, the rows waiting to go out and,
//! under UNION, the distinct rows seen) is accounted in the operator's reservation; the
//! step's kernels account theirs in the same pool while a round runs.

use super::groups::Groups;
use super::local::{run_local, Build};
use super::operator::{output_pending, ExecContext, Operator};
use crate::plan::PhysicalPlan;
use crate::{Batch, DataType, Error, Reservation, Result};
use std::borrow::Cow;
use std::collections::VecDeque;

/// What a recursive union is asked to compute (see [`PhysicalPlan::RecursiveUnion`]).
pub struct RecursiveSpec {
    /// The query's name, for the limit's error.
    pub name: String,
    /// The recursive term.
    pub step: PhysicalPlan,
    /// UNION rather than UNION ALL.
    pub distinct: bool,
    /// The most rounds of the step.
    pub max_iterations: usize,
    /// The column types.
    pub types: Vec<DataType>,
    /// How many inputs (the base term and the step's other relations).
    pub inputs: usize,
    /// How the step's kernels are built (`kernels::create_operator`).
    pub build: Build,
}

/// `base UNION [ALL] step`, iterated to a fixed point.
pub struct RecursiveUnionOp {
    spec: RecursiveSpec,
    ctx: ExecContext,
    reservation: Reservation,
    /// The batches of each input `k >= 1` (index 0 stays empty: the working table is apart).
    held: Vec<Vec<Batch>>,
    /// The rows the last round (or the base term) added.
    working: Vec<Batch>,
    /// The rows added in the round being collected (the base term's, until it ends).
    added: Vec<Batch>,
    /// Under UNION, every distinct row so far.
    seen: Option<Groups>,
    /// Output not yet taken.
    out: VecDeque<Batch>,
    /// Inputs not yet ended.
    open: usize,
    /// Rounds of the step run so far.
    rounds: usize,
    /// A round added nothing: no more output.
    converged: bool,
}

impl RecursiveUnionOp {
    /// A recursive union computing `spec`, accounting what it holds in `reservation`.
    pub fn new(spec: RecursiveSpec, ctx: ExecContext, reservation: Reservation) -> Self {
        let seen = spec.distinct.then(|| Groups::new(&spec.types));
        RecursiveUnionOp {
            held: (0..spec.inputs).map(|_| Vec::new()).collect(),
            open: spec.inputs,
            spec,
            ctx,
            reservation,
            working: Vec::new(),
            added: Vec::new(),
            seen,
            out: VecDeque::new(),
            rounds: 0,
            converged: false,
        }
    }

    /// `batch` without the rows seen before (under UNION; each row once), or as it is.
    fn new_rows(&mut self, batch: Batch) -> Result<Option<Batch>> {
        let n = batch.num_rows();
        let Some(seen) = &mut self.seen else {
            return Ok((n > 0).then_some(batch));
        };
        let keys: Vec<Cow<'_, crate::Column>> = batch.columns().iter().map(Cow::Borrowed).collect();
        let mut next = seen.len as u32;
        let mut ids = Vec::with_capacity(n);
        seen.assign(&keys, n, &mut ids)?;
        if ids.len() != n {
            return Err(Error::Internal(format!(
                "RecursiveUnion of {} columns got a batch of {}",
                seen.types.len(),
                batch.num_columns()
            )));
        }
        // A group's first row is where its id first appears, in increasing order.
        let mask: Vec<bool> = ids
            .iter()
            .map(|&g| {
                let new = g == next;
                next += u32::from(new);
                new
            })
            .collect();
        drop(keys);
        let kept = batch.filter(&mask);
        Ok((kept.num_rows() > 0).then_some(kept))
    }

    /// Takes in rows made by the base term or a round: the new ones go out and into the
    /// next working table.
    fn add(&mut self, batch: Batch) -> Result<()> {
        if let Some(b) = self.new_rows(batch)? {
            self.out.push_back(b.clone());
            self.added.push(b);
        }
        self.account()
    }

    /// Resizes the reservation to what is held now.
    fn account(&mut self) -> Result<()> {
        let batches = |v: &[Batch]| v.iter().map(Batch::memory_size).sum::<usize>();
        let held: usize = self.held.iter().map(|v| batches(v)).sum();
        let total = held
            + batches(&self.working)
            + batches(&self.added)
            + self.out.iter().map(Batch::memory_size).sum::<usize>()
            + self.seen.as_ref().map_or(0, Groups::memory_size);
        self.reservation.resize(total)
    }

    /// Runs one round of the step over the working table.
    fn round(&mut self) -> Result<()> {
        self.working = std::mem::take(&mut self.added);
        if self.working.is_empty() {
            self.converged = true;
            return self.account();
        }
        self.rounds += 1;
        let made = {
            let mut inputs: Vec<&[Batch]> = self.held.iter().map(Vec::as_slice).collect();
            inputs[0] = &self.working;
            run_local(
                &self.spec.step,
                &inputs,
                &self.ctx,
                &self.reservation,
                self.spec.build,
            )?
        };
        for b in made {
            self.add(b)?;
        }
        if self.added.is_empty() {
            self.converged = true;
        } else if self.rounds > self.spec.max_iterations {
            return Err(Error::RecursionLimit(format!(
                "recursive query \"{}\" still adds rows after {} iterations, the limit",
                self.spec.name, self.spec.max_iterations
            )));
        }
        self.working.clear();
        self.account()
    }
}

impl Operator for RecursiveUnionOp {
    fn name(&self) -> &'static str {
        "RecursiveUnion"
    }

    fn push(&mut self, port: usize, batch: Batch) -> Result<()> {
        if !self.out.is_empty() {
            return Err(output_pending(self.name()));
        }
        match port {
            0 => self.add(batch),
            k => {
                let Some(held) = self.held.get_mut(k) else {
                    return Err(Error::Internal(format!("RecursiveUnion has no input {k}")));
                };
                held.push(batch);
                self.account()
            }
        }
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        self.open = self.open.saturating_sub(1);
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        if self.out.is_empty() && self.open == 0 && !self.converged {
            self.round()?;
        }
        let b = self.out.pop_front();
        if b.is_some() {
            self.account()?;
        }
        Ok(b)
    }

    fn has_output(&self) -> bool {
        !self.out.is_empty() || (self.open == 0 && !self.converged)
    }

    fn memory_size(&self) -> usize {
        self.reservation.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::memory::UnboundedPool;
    use crate::plan::PhysicalPlan;
    use crate::types::{Field, Schema};
    use crate::{BinaryOp, Column, Expr, Value};

    /// `WITH RECURSIVE r(n) AS (SELECT <base> UNION [ALL] SELECT <next> FROM r WHERE n < 5)`
    /// where `next` is `n + 1` or, on a cycle, `n % 3 + 1`.
    fn op(
        next: Expr,
        distinct: bool,
        max_iterations: usize,
        pool: &Reservation,
    ) -> RecursiveUnionOp {
        let schema = Schema::new(vec![Field::new("n", DataType::Int64)]);
        let step = PhysicalPlan::Project {
            input: Box::new(PhysicalPlan::Filter {
                input: Box::new(PhysicalPlan::StepInput { port: 0, schema }),
                predicate: Expr::Column(0).binary(BinaryOp::Lt, Expr::lit(5)),
            }),
            exprs: vec![next],
        };
        let spec = RecursiveSpec {
            name: "r".into(),
            step,
            distinct,
            max_iterations,
            types: vec![DataType::Int64],
            inputs: 1,
            build: crate::kernels::create_operator,
        };
        RecursiveUnionOp::new(spec, ExecContext::new(vec![]), pool.new_empty())
    }

    fn run(mut op: RecursiveUnionOp, base: Vec<i64>) -> Result<Vec<i64>> {
        op.push(0, Batch::try_new(vec![Column::from_i64(base)]).unwrap())?;
        let mut out = Vec::new();
        drain(&mut op, &mut out)?;
        op.finish(0)?;
        drain(&mut op, &mut out)?;
        assert!(!op.has_output());
        Ok(out
            .iter()
            .flat_map(Batch::rows)
            .map(|r| match r[0] {
                Value::Int(i) => i,
                _ => unreachable!(),
            })
            .collect())
    }

    #[test]
    fn counts_to_a_fixed_point_and_returns_its_memory() {
        let pool = UnboundedPool::new();
        let reservation = Reservation::new(pool.clone());
        let plus_one = Expr::Column(0).binary(BinaryOp::Add, Expr::lit(1));
        let got = run(op(plus_one.clone(), false, 100, &reservation), vec![1]).unwrap();
        assert_eq!(got, vec![1, 2, 3, 4, 5]);
        // UNION drops the base's duplicates too; UNION ALL keeps them.
        let got = run(op(plus_one.clone(), true, 100, &reservation), vec![4, 4]).unwrap();
        assert_eq!(got, vec![4, 5]);
        let got = run(op(plus_one, false, 100, &reservation), vec![4, 4]).unwrap();
        assert_eq!(got, vec![4, 4, 5, 5]);
        assert!(pool.peak() > 0);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn a_cycle_ends_under_union_and_hits_the_limit_under_union_all() {
        let reservation = Reservation::unbounded();
        let cycle = (Expr::Column(0).binary(BinaryOp::Mod, Expr::lit(3)))
            .binary(BinaryOp::Add, Expr::lit(1));
        let got = run(op(cycle.clone(), true, 100, &reservation), vec![1]).unwrap();
        assert_eq!(got, vec![1, 2, 3]);
        let e = run(op(cycle, false, 100, &reservation), vec![1]).unwrap_err();
        assert!(matches!(e, Error::RecursionLimit(_)), "{e}");
        assert!(
            e.to_string().contains("\"r\"") && e.to_string().contains("100"),
            "{e}"
        );
    }
}
