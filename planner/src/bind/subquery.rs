//! Subqueries in expressions (`EXISTS`, `IN (SELECT ...)`, scalar `(SELECT ...)`) and the
//! outer references that correlate them.
//!
//! A subquery is bound as a query of its own whose unknown column names resolve in the
//! enclosing SELECT's FROM row, as [`Expr::OuterColumn`]s (a column of a query further out is
//! passed through the rows in between, [`OuterScope::passed`]). It is not evaluated in place: it
//! waits in the SELECT's [`SubqueryFrame`] and the expression refers to its result through a
//! placeholder column. Once the SELECT's rows are planned, [`Binder::place_subqueries`] puts
//! an [`LogicalPlan::Apply`] per subquery over them and turns placeholders into the appended
//! columns. Decorrelation into joins is the optimizer's job.

use super::*;

impl Binder<'_> {
    /// A column reference: in `scope`, else in the row of an enclosing query (an outer
    /// reference of a correlated subquery), the nearest that has it.
    pub(crate) fn column(
        &mut self,
        parts: &[sql::Ident],
        span: Span,
        scope: &Scope,
    ) -> Result<B, PlanError> {
        match scope.resolve(parts, span) {
            Ok(g) => Ok(B::new(Expr::Column(g), Some(scope.types[g]))),
            Err(err @ PlanError::UnknownColumn { .. }) => {
                Ok(self.outer_column(parts, span)?.ok_or(err)?)
            }
            Err(err) => Err(err),
        }
    }

    /// `parts` as a column of an enclosing query's row, the nearest that has it (`None`
    /// where none has). A column of the query right around is an [`Expr::OuterColumn`] of
    /// its row; one further out is passed through the rows of the queries in between (each
    /// appends it to its row, [`OuterScope::passed`]), so that every subquery reads only the
    /// row right around it, which the optimizer's unnesting takes.
    fn outer_column(&mut self, parts: &[sql::Ident], span: Span) -> Result<Option<B>, PlanError> {
        let n = self.outer.len();
        let mut found = None;
        for level in (0..n).rev() {
            let Some(o) = &self.outer[level] else { break };
            match o.scope.resolve(parts, span) {
                Ok(g) => {
                    found = Some((level, g, o.scope.types[g]));
                    break;
                }
                Err(PlanError::UnknownColumn { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        let Some((level, mut col, ty)) = found else {
            return Ok(None);
        };
        for o in self.outer[level + 1..].iter_mut().flatten() {
            let j = match o.passed.iter().position(|&(p, _)| p == col) {
                Some(j) => j,
                None => {
                    o.passed.push((col, ty));
                    o.passed.len() - 1
                }
            };
            col = o.scope.types.len() + j;
        }
        Ok(Some(B::new(Expr::OuterColumn(col), Some(ty))))
    }

    /// Binds the body of a subquery of an expression over `scope`. With `groups`, the
    /// subquery is over aggregated rows (in HAVING or an aggregating select list): its outer
    /// references may name only GROUP BY columns, and read them in the aggregate's output.
    fn subquery_body(
        &mut self,
        q: &sql::Query,
        scope: &Scope,
        groups: Option<&[B]>,
    ) -> Result<BoundQuery, PlanError> {
        let passed = self
            .frames
            .last()
            .map_or_else(Vec::new, |f| f.passed.clone());
        let before = passed.len();
        let (bound, passed) = self.query_in(
            OuterScope {
                scope: scope.clone(),
                passed,
            },
            q,
        );
        let mut bound = bound?;
        if passed.len() > before && groups.is_some() {
            return Err(unsupported(
                "a subquery over grouped rows whose own subquery reads a query further out",
                q.span(),
            ));
        }
        if let Some(frame) = self.frames.last_mut() {
            frame.passed = passed;
        }
        if let Some(groups) = groups {
            if bound.plan.is_correlated() {
                bound.plan = outer_over_groups(bound.plan, groups, scope, q.span())?;
            }
        }
        Ok(bound)
    }

    /// Registers a bound subquery in the current SELECT's frame; returns its placeholder.
    fn register(&mut self, pending: PendingApply, post: bool) -> Result<Expr, PlanError> {
        let frame = self
            .frames
            .last_mut()
            .ok_or_else(|| PlanError::Invalid("subquery outside of a query".to_string()))?;
        let list = if post {
            &mut frame.post
        } else {
            &mut frame.pre
        };
        list.push(pending);
        let base = if post { POST_APPLY } else { PRE_APPLY };
        Ok(Expr::Column(base + list.len() - 1))
    }

    /// Binds `q` and registers it with `kind`; returns the placeholder for its result.
    pub(crate) fn subquery_apply(
        &mut self,
        q: &sql::Query,
        scope: &Scope,
        groups: Option<&[B]>,
        kind: ApplyKind,
        field: Field,
    ) -> Result<Expr, PlanError> {
        let post = groups.is_some();
        let bound = self.subquery_body(q, scope, groups)?;
        self.register(
            PendingApply {
                subquery: bound.plan,
                kind,
                field,
                position: pos(q.span()),
            },
            post,
        )
    }

    /// `(SELECT ...)` as a value.
    pub(crate) fn scalar_subquery(
        &mut self,
        q: &sql::Query,
        scope: &Scope,
        groups: Option<&[B]>,
    ) -> Result<B, PlanError> {
        let post = groups.is_some();
        let bound = self.subquery_body(q, scope, groups)?;
        let [field] = bound.fields.as_slice() else {
            return Err(PlanError::Invalid(format!(
                "a scalar subquery must return one column, not {}{}",
                bound.fields.len(),
                at(q.span())
            )));
        };
        let field = field.clone();
        let ty = field.data_type;
        let placeholder = self.register(
            PendingApply {
                subquery: bound.plan,
                kind: ApplyKind::Scalar,
                field,
                position: pos(q.span()),
            },
            post,
        )?;
        Ok(B::new(placeholder, Some(ty)))
    }

    /// `x [NOT] IN (SELECT ...)`.
    pub(crate) fn in_subquery(
        &mut self,
        e: &sql::Expr,
        x: &sql::Expr,
        q: &sql::Query,
        negated: bool,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        let post = agg.is_some();
        let x = self.expr(x, scope, agg.as_deref_mut())?;
        let groups = agg.map(|a| a.groups.as_slice());
        let mut bound = self.subquery_body(q, scope, groups)?;
        let [field] = bound.fields.as_slice() else {
            return Err(PlanError::Invalid(format!(
                "the subquery of IN must return one column, not {}{}",
                bound.fields.len(),
                at(q.span())
            )));
        };
        let sub_ty = field.data_type;
        let t = self.unify(&[x.ty, Some(sub_ty)], e)?.unwrap_or(sub_ty);
        let x = self.coerce(x, t);
        if t != sub_ty {
            let name = field.name.clone();
            let cast = self.coerce(B::new(Expr::Column(0), Some(sub_ty)), t);
            bound.plan = bound.plan.project(vec![cast], vec![Field::new(name, t)]);
        }
        let mark = self.register(
            PendingApply {
                subquery: bound.plan,
                kind: ApplyKind::In(x),
                field: Field::new("in", DataType::Boolean),
                position: pos(q.span()),
            },
            post,
        )?;
        Ok(B::new(negate_if(mark, negated), Some(DataType::Boolean)))
    }

    /// Puts an Apply over `plan` for each of `pending` and returns the plan with the column
    /// position of each one's result, in `pending`'s order. Scalar subqueries go innermost and
    /// `EXISTS`/`IN` outermost, so that a WHERE conjunct testing one sits right above it for
    /// decorrelation into a semi or anti join.
    pub(crate) fn place_subqueries(
        plan: LogicalPlan,
        pending: Vec<PendingApply>,
    ) -> (LogicalPlan, Vec<usize>) {
        let base = plan.width();
        let mut order: Vec<usize> = (0..pending.len()).collect();
        order.sort_by_key(|&k| !matches!(pending[k].kind, ApplyKind::Scalar));
        let mut positions = vec![0; pending.len()];
        for (slot, &k) in order.iter().enumerate() {
            positions[k] = base + slot;
        }
        let mut pending: Vec<Option<PendingApply>> = pending.into_iter().map(Some).collect();
        let plan = order.iter().fold(plan, |input, &k| {
            let p = pending[k].take().expect("each subquery is placed once");
            LogicalPlan::Apply {
                input: Box::new(input),
                subquery: Box::new(p.subquery),
                kind: p.kind,
                field: p.field,
                position: p.position,
            }
        });
        (plan, positions)
    }
}

/// A subquery over aggregated rows with its outer references moved from the FROM row to the
/// aggregate's output, where GROUP BY column `i` is column `i`; an outer reference to any
/// other column is an error (it has no single value per group).
fn outer_over_groups(
    plan: LogicalPlan,
    groups: &[B],
    scope: &Scope,
    span: Span,
) -> Result<LogicalPlan, PlanError> {
    let mut missing = None;
    let mut remap = |e: &Expr| {
        e.transform(&mut |x| match x {
            Expr::OuterColumn(g) => {
                let at = groups.iter().position(|b| b.expr == Expr::Column(*g));
                if at.is_none() {
                    missing.get_or_insert(*g);
                }
                Some(Expr::OuterColumn(at.unwrap_or(*g)))
            }
            _ => None,
        })
    };
    let plan = map_outer_references(plan, &mut remap);
    match missing {
        None => Ok(plan),
        // A column passed through the FROM row for a subquery further in.
        Some(g) if g >= scope.names.len() => Err(unsupported(
            "a subquery over grouped rows whose own subquery reads a query further out",
            span,
        )),
        Some(g) => Err(PlanError::Invalid(format!(
            "a subquery over grouped rows reads '{}', which is not a GROUP BY column{}",
            scope.names[g],
            at(span)
        ))),
    }
}

/// `plan` with `f` applied to every expression that can hold this level's outer references:
/// all nodes, but not the subqueries of nested Applies (theirs are the Apply's input's).
fn map_outer_references(plan: LogicalPlan, f: &mut dyn FnMut(&Expr) -> Expr) -> LogicalPlan {
    let node = plan.map_exprs(f);
    if let LogicalPlan::Apply {
        input,
        subquery,
        kind,
        field,
        position,
    } = node
    {
        return LogicalPlan::Apply {
            input: Box::new(map_outer_references(*input, f)),
            subquery,
            kind,
            field,
            position,
        };
    }
    node.map_inputs(&mut |i| Ok::<_, std::convert::Infallible>(map_outer_references(i, f)))
        .unwrap_or_else(|never| match never {})
}

/// Rewrites placeholders `Column(placeholder_base + k)` to `Column(positions[k])`.
pub(crate) fn resolve_placeholders(e: &Expr, placeholder_base: usize, positions: &[usize]) -> Expr {
    e.map_columns(&|c| match c.checked_sub(placeholder_base) {
        Some(k) if k < positions.len() => positions[k],
        _ => c,
    })
}
