//! Binding of whole queries into logical plans: `WITH`, `SELECT` (FROM with joins and derived
//! tables, WHERE, GROUP BY, the select list, HAVING, DISTINCT, ORDER BY), set operations,
//! `VALUES` lists, and LIMIT/OFFSET/FETCH; on top of the expression binding in the parent
//! module.
//!
//! A SELECT becomes, bottom up: the FROM joins (their output is the "combined row"), the
//! Applies of its subqueries, a Filter for WHERE, an Aggregate (then the Applies of
//! subqueries over aggregated rows and a Filter for HAVING), a Project of the select list
//! (followed by hidden ORDER BY columns), Distinct (or DISTINCT ON's window and filter, see
//! `distinct_on`), Sort, Limit, and a last Project that drops the hidden columns.

use super::limits::{sorted_and_limited, Limits};
use super::relations::{rename_columns, union_all};
use super::subquery::resolve_placeholders;
use super::table_functions::{is_table_function, TableCall, TABLE_FUNCTIONS};
use super::window_scope::{contains_window, WINDOW_SLOT};
use super::*;
use crate::logical::{JoinKind, SetOpKind};
use weir_operators::plan::TableFunction;
use weir_operators::Schema;

impl Binder<'_> {
    /// Binds `q` as a subquery of the row `outer`, and returns it with the columns of the
    /// queries further out that it passed through that row (see [`OuterScope::passed`]),
    /// whether it bound or not.
    pub(crate) fn query_in(
        &mut self,
        outer: OuterScope,
        q: &sql::Query,
    ) -> (Result<BoundQuery, PlanError>, Vec<(usize, DataType)>) {
        self.within(outer, |b| b.query(q))
    }

    /// Runs `bind` with `outer` as the innermost outer query, and returns what it bound
    /// with the outer columns it read (as [`Binder::query_in`] does for a query).
    fn within<T>(
        &mut self,
        outer: OuterScope,
        bind: impl FnOnce(&mut Self) -> T,
    ) -> (T, Vec<(usize, DataType)>) {
        self.outer.push(Some(outer));
        let bound = bind(self);
        let passed = self
            .outer
            .pop()
            .flatten()
            .map_or_else(Vec::new, |o| o.passed);
        (bound, passed)
    }

    /// Binds a whole query: its `WITH` list, its body, ORDER BY and LIMIT/OFFSET/FETCH.
    pub fn query(&mut self, q: &sql::Query) -> Result<BoundQuery, PlanError> {
        if !q.locks.is_empty() {
            return Err(unsupported("locking clauses", q.span()));
        }
        if q.for_clause.is_some()
            || q.settings.is_some()
            || q.format_clause.is_some()
            || !q.pipe_operators.is_empty()
        {
            return Err(unsupported("query clause", q.span()));
        }
        let ctes_before = self.ctes.len();
        let result = self.with_clause(q).and_then(|()| match q.body.as_ref() {
            sql::SetExpr::Select(s) => self.select(s, Some(q)),
            body => {
                let bound = self.set_expr(body)?;
                self.order_limit_by_output(bound, q)
            }
        });
        self.ctes.truncate(ctes_before);
        result
    }

    /// Binds the CTEs of `q.with` in order (each sees the ones before it; under `WITH
    /// RECURSIVE`, one that names itself is a recursive query, [`Binder::recursive_cte`]).
    pub(super) fn with_clause(&mut self, q: &sql::Query) -> Result<(), PlanError> {
        let Some(with) = &q.with else { return Ok(()) };
        for cte in &with.cte_tables {
            if cte.from.is_some() {
                return Err(unsupported("CTE ... FROM", cte.alias.name.span));
            }
            let name = cte.alias.name.value.to_lowercase();
            let same = |c: &&sql::Cte| c.alias.name.value.to_lowercase() == name;
            if with.cte_tables.iter().filter(same).count() > 1 {
                return Err(PlanError::Invalid(format!(
                    "WITH query name '{name}' specified more than once{}",
                    at(cte.alias.name.span)
                )));
            }
            let bound = if with.recursive && super::recursive::refers_to(&cte.query, &name) {
                self.recursive_cte(cte, &name)?
            } else {
                self.outer.push(None);
                let bound = self.query(&cte.query);
                self.outer.pop();
                let mut bound = bound?;
                rename_columns(&mut bound.fields, &cte.alias, cte.alias.name.span)?;
                bound
            };
            self.ctes.push((name, bound));
        }
        Ok(())
    }

    /// Binds a query body that is not a plain SELECT with its own ORDER BY.
    pub(super) fn set_expr(&mut self, body: &sql::SetExpr) -> Result<BoundQuery, PlanError> {
        match body {
            sql::SetExpr::Select(s) => self.select(s, None),
            sql::SetExpr::Query(q) => self.query(q),
            sql::SetExpr::Values(v) => self.values(v, body.span()),
            sql::SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => self.set_operation(*op, *set_quantifier, left, right, body.span()),
            sql::SetExpr::Table(t) => match crate::table_command::as_select(t) {
                Some(select) => self.query(&select),
                None => Err(unsupported("TABLE without a table name", body.span())),
            },
            _ => Err(unsupported("this query form", body.span())),
        }
    }

    /// `left UNION|INTERSECT|EXCEPT [ALL|DISTINCT] right`.
    fn set_operation(
        &mut self,
        op: sql::SetOperator,
        quantifier: sql::SetQuantifier,
        left: &sql::SetExpr,
        right: &sql::SetExpr,
        span: Span,
    ) -> Result<BoundQuery, PlanError> {
        let all = match quantifier {
            sql::SetQuantifier::All => true,
            sql::SetQuantifier::Distinct | sql::SetQuantifier::None => false,
            other => return Err(unsupported(format!("{op} {other}"), span)),
        };
        let l = self.set_expr(left)?;
        let r = self.set_expr(right)?;
        if l.fields.len() != r.fields.len() {
            return Err(PlanError::Invalid(format!(
                "each {op} query must have the same number of columns ({} and {}){}",
                l.fields.len(),
                r.fields.len(),
                at(span)
            )));
        }
        let mut types = Vec::with_capacity(l.fields.len());
        for (a, b) in l.fields.iter().zip(&r.fields) {
            let (x, y) = (a.data_type, b.data_type);
            let Some(t) = same_or_numeric(x, y) else {
                return Err(PlanError::Type(format!(
                    "{op} column '{}' mixes {x} and {y}{}",
                    a.name,
                    at(span)
                )));
            };
            types.push(t);
        }
        let fields: Vec<Field> = l
            .fields
            .iter()
            .zip(&types)
            .map(|(f, t)| Field::new(f.name.clone(), *t))
            .collect();
        let l = self.cast_columns(l, &types);
        let r = self.cast_columns(r, &types);
        let plan = match (op, all) {
            (sql::SetOperator::Union, true) => union_all(l, r),
            (sql::SetOperator::Union, false) => LogicalPlan::Distinct {
                input: Box::new(union_all(l, r)),
            },
            (sql::SetOperator::Intersect, all) => LogicalPlan::SetOp {
                left: Box::new(l),
                right: Box::new(r),
                kind: if all {
                    SetOpKind::IntersectAll
                } else {
                    SetOpKind::Intersect
                },
            },
            (sql::SetOperator::Except | sql::SetOperator::Minus, all) => LogicalPlan::SetOp {
                left: Box::new(l),
                right: Box::new(r),
                kind: if all {
                    SetOpKind::ExceptAll
                } else {
                    SetOpKind::Except
                },
            },
        };
        Ok(BoundQuery { plan, fields })
    }

    /// `bound`'s plan with its columns converted to `types` where they differ.
    pub(super) fn cast_columns(&mut self, bound: BoundQuery, types: &[DataType]) -> LogicalPlan {
        if bound
            .fields
            .iter()
            .zip(types)
            .all(|(f, t)| f.data_type == *t)
        {
            return bound.plan;
        }
        let mut exprs = Vec::with_capacity(types.len());
        let mut fields = Vec::with_capacity(types.len());
        for (i, (f, t)) in bound.fields.iter().zip(types).enumerate() {
            exprs.push(self.coerce(B::new(Expr::Column(i), Some(f.data_type)), *t));
            fields.push(Field::new(f.name.clone(), *t));
        }
        bound.plan.project(exprs, fields)
    }

    /// ORDER BY (output positions or names) and LIMIT/OFFSET/FETCH over a bound query body.
    fn order_limit_by_output(
        &mut self,
        bound: BoundQuery,
        q: &sql::Query,
    ) -> Result<BoundQuery, PlanError> {
        let what = match q.body.as_ref() {
            sql::SetExpr::Values(_) => "VALUES takes a column position or name (column1, ...)",
            _ => "a set operation takes a column position or output name",
        };
        let mut keys = Vec::new();
        if let Some(ob) = &q.order_by {
            let sql::OrderByKind::Expressions(list) = &ob.kind else {
                return Err(unsupported("ORDER BY ALL", ob.span()));
            };
            for o in list {
                let (descending, nulls_first) = sort_options(o)?;
                let position = match &o.expr {
                    sql::Expr::Value(v) => match &v.value {
                        sql::Value::Number(s, _) => {
                            let n = s.parse::<usize>().unwrap_or(0);
                            if n == 0 || n > bound.fields.len() {
                                return Err(PlanError::Invalid(format!(
                                    "ORDER BY position {s} is not in the select list{}",
                                    at(v.span)
                                )));
                            }
                            Some(n - 1)
                        }
                        _ => None,
                    },
                    sql::Expr::Identifier(id) => bound
                        .fields
                        .iter()
                        .position(|f| f.name.eq_ignore_ascii_case(&id.value)),
                    _ => None,
                };
                let Some(position) = position else {
                    return Err(PlanError::Invalid(format!(
                        "ORDER BY over {what}{}",
                        at(o.expr.span())
                    )));
                };
                keys.push(SortKey {
                    expr: Expr::Column(position),
                    descending,
                    nulls_first,
                });
            }
        }
        let limits = query_limit(q, !keys.is_empty())?;
        Ok(BoundQuery {
            plan: sorted_and_limited(bound.plan, keys, limits),
            fields: bound.fields,
        })
    }

    /// Binds a SELECT, with the ORDER BY and LIMIT of `q` when it is the query's whole body.
    fn select(
        &mut self,
        select: &sql::Select,
        q: Option<&sql::Query>,
    ) -> Result<BoundQuery, PlanError> {
        self.frames.push(SubqueryFrame::default());
        self.windows
            .push(WindowScope::new(select.named_window.clone()));
        // A table function's call in this SELECT's list reads its values only here.
        let outer_call = self.select_table_call.take();
        let bound = self.select_in_frame(select, q);
        self.select_table_call = outer_call;
        self.windows.pop();
        self.frames.pop();
        bound
    }

    /// Where window functions may stand while the SELECT's next clause is bound: nowhere,
    /// naming `clause` in the error, or (`None`) anywhere.
    fn windows_in(&mut self, clause: Option<&'static str>) {
        if let Some(w) = self.windows.last_mut() {
            w.refused = clause;
        }
    }

    fn select_in_frame(
        &mut self,
        select: &sql::Select,
        q: Option<&sql::Query>,
    ) -> Result<BoundQuery, PlanError> {
        let sspan = select.select_token.0.span;
        let (distinct, distinct_on) = match &select.distinct {
            None | Some(sql::Distinct::All) => (false, None),
            Some(sql::Distinct::Distinct) => (true, None),
            Some(sql::Distinct::On(exprs)) => (false, Some(exprs)),
        };
        if select.top.is_some() {
            return Err(unsupported("TOP", sspan));
        }
        if select.into.is_some() {
            return Err(unsupported("SELECT INTO", sspan));
        }
        if !select.lateral_views.is_empty()
            || select.prewhere.is_some()
            || !select.connect_by.is_empty()
            || !select.cluster_by.is_empty()
            || !select.distribute_by.is_empty()
            || !select.sort_by.is_empty()
            || select.exclude.is_some()
            || select.value_table_mode.is_some()
        {
            return Err(unsupported("this SELECT clause", sspan));
        }
        for (k, def) in select.named_window.iter().enumerate() {
            let name = &def.0;
            if select.named_window[..k]
                .iter()
                .any(|d| d.0.value.eq_ignore_ascii_case(&name.value))
            {
                return Err(PlanError::Invalid(format!(
                    "window \"{}\" is already defined{}",
                    name.value,
                    at(name.span)
                )));
            }
        }

        // FROM
        self.windows_in(Some("JOIN conditions"));
        // A call in the list of a grouped or windowed query expands the rows those make
        // (PostgreSQL evaluates it after GROUP BY, HAVING and the windows): bound with the
        // select list, placed after the windows.
        let call_in_list = table_call_in_list(select);
        let after_grouping = grouped_or_windowed(select, q).is_some();
        let (scope, from_plan) = match call_in_list.as_ref().filter(|_| !after_grouping) {
            // `SELECT generate_series(1, 3)`: the call is the FROM item it reads.
            Some((e, call)) if select.from.is_empty() => {
                let mut scope = Scope::default();
                let plan = self.table_function(call, e.span(), &Scope::default(), &mut scope)?;
                self.select_table_call = Some((e.to_string(), 0));
                (scope, plan)
            }
            // `SELECT id, generate_series(1, n) FROM t`: each row of FROM once per value of
            // its call, before WHERE (which does not read the values) and the rest.
            Some((e, call)) => {
                let name = &call.name;
                let (mut scope, plan) = self.bind_from(&select.from)?;
                let mut own = Scope::default();
                let bound = self.table_function(call, e.span(), &scope, &mut own)?;
                let LogicalPlan::TableFunction {
                    schema, function, ..
                } = bound
                else {
                    return Err(PlanError::Invalid(format!(
                        "internal planner error: {name} bound as another plan"
                    )));
                };
                // The values' column is read by the call only: no name or `*` finds it.
                let field = schema.fields[0].clone();
                self.select_table_call = Some((e.to_string(), scope.types.len()));
                scope.types.push(field.data_type);
                scope.names.push(field.name.clone());
                let plan = LogicalPlan::Expand {
                    input: Box::new(plan),
                    function,
                    ordinality: false,
                    fields: vec![field],
                };
                (scope, plan)
            }
            _ => self.bind_from(&select.from)?,
        };

        // WHERE
        self.windows_in(Some("WHERE"));
        let where_pred = match &select.selection {
            Some(e) => {
                let written = super::row_values::where_form(e)?;
                let e = written.as_ref().unwrap_or(e);
                let b = self.expr(e, &scope, None)?;
                Some(self.boolean(b, e)?)
            }
            None => None,
        };

        // GROUP BY
        let (group_asts, grouping_sets) = match &select.group_by {
            sql::GroupByExpr::All(_) => return Err(unsupported("GROUP BY ALL", sspan)),
            sql::GroupByExpr::Expressions(exprs, mods) => {
                if !mods.is_empty() {
                    return Err(unsupported("GROUP BY modifiers", sspan));
                }
                grouping_sets_of(exprs, sspan)?
            }
        };
        let order_exprs: Vec<&sql::OrderByExpr> = match q.and_then(|q| q.order_by.as_ref()) {
            None => vec![],
            Some(ob) => match &ob.kind {
                sql::OrderByKind::All(_) => return Err(unsupported("ORDER BY ALL", ob.span())),
                sql::OrderByKind::Expressions(v) => v.iter().collect(),
            },
        };
        let select_asts: Vec<Option<&sql::Expr>> = select
            .projection
            .iter()
            .map(|i| match i {
                sql::SelectItem::UnnamedExpr(e)
                | sql::SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
                _ => None,
            })
            .collect();
        let named_windows_agg = select.named_window.iter().any(|d| match &d.1 {
            sql::NamedWindowExpr::WindowSpec(w) => window_contains_agg(w),
            sql::NamedWindowExpr::NamedWindow(_) => false,
        });
        let is_agg = !group_asts.is_empty()
            || grouping_sets.is_some()
            || select.having.is_some()
            || select_asts.iter().flatten().any(|e| contains_agg(e))
            || order_exprs.iter().any(|o| contains_agg(&o.expr))
            || select.qualify.as_ref().is_some_and(contains_agg)
            || named_windows_agg;
        self.windows_in(Some("GROUP BY"));

        let mut ctx = AggCtx::default();
        for g in &group_asts {
            let target = self.group_target(g, &scope, select)?;
            let b = self.expr(target, &scope, None)?;
            let t = self.settle(&b);
            let expr = self.coerce(b, t);
            ctx.groups.push(B::new(expr, Some(t)));
        }
        if grouping_sets.is_some() {
            let k = ctx.groups.len();
            ctx.grouping = Some(k);
            for i in 0..k {
                let marker = Expr::Literal(Value::Str(format!("\u{0}grouping {i}")));
                ctx.groups.push(B::new(marker, Some(DataType::Int64)));
            }
        }

        // SELECT list
        self.windows_in(None);
        let mut outputs: Vec<B> = Vec::new();
        let mut visible: Vec<Field> = Vec::new();
        let mut aliases: Vec<Option<String>> = Vec::new();
        // A table function's call after grouping: its place in the list, and the call.
        let mut expanded: Option<(usize, TableFunction)> = None;
        for item in &select.projection {
            match item {
                sql::SelectItem::UnnamedExpr(e)
                | sql::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let b = match call_in_list.as_ref() {
                        Some((call_e, call)) if after_grouping && std::ptr::eq(*call_e, e) => {
                            let agg = is_agg.then_some(&mut ctx);
                            let function = self.call_function(call, e.span(), &scope, agg)?;
                            let ty = function.data_type();
                            expanded = Some((outputs.len(), function));
                            // Its values' column, once the rows are expanded.
                            B::new(Expr::Literal(Value::Null), Some(ty))
                        }
                        _ => self.expr(e, &scope, is_agg.then_some(&mut ctx))?,
                    };
                    let (name, alias) = match item {
                        sql::SelectItem::ExprWithAlias { alias, .. } => {
                            (alias.value.clone(), Some(alias.value.clone()))
                        }
                        _ => (self.display_name(e, &scope), None),
                    };
                    let t = self.settle(&b);
                    visible.push(Field::new(name, t));
                    outputs.push(B::new(b.expr, Some(t)));
                    aliases.push(alias);
                }
                sql::SelectItem::Wildcard(opts) => {
                    check_wildcard_opts(opts)?;
                    if scope.tables.is_empty() {
                        return Err(PlanError::Invalid(format!(
                            "SELECT * needs a FROM clause{}",
                            at(opts.wildcard_token.0.span)
                        )));
                    }
                    for ti in 0..scope.tables.len() {
                        self.expand_table(
                            ti,
                            &scope,
                            is_agg.then_some(&ctx),
                            &mut outputs,
                            &mut visible,
                            &mut aliases,
                        )?;
                    }
                }
                sql::SelectItem::QualifiedWildcard(kind, opts) => {
                    check_wildcard_opts(opts)?;
                    let name = match kind {
                        sql::SelectItemQualifiedWildcardKind::ObjectName(n) => n,
                        sql::SelectItemQualifiedWildcardKind::Expr(e) => {
                            return Err(unsupported(
                                "qualified wildcard on an expression",
                                e.span(),
                            ))
                        }
                    };
                    let q = name
                        .0
                        .last()
                        .map(|p| p.to_string().trim_matches('"').to_lowercase())
                        .unwrap_or_default();
                    let ti = scope
                        .tables
                        .iter()
                        .position(|t| t.alias == q)
                        .ok_or_else(|| PlanError::UnknownTable(name.to_string()))?;
                    self.expand_table(
                        ti,
                        &scope,
                        is_agg.then_some(&ctx),
                        &mut outputs,
                        &mut visible,
                        &mut aliases,
                    )?;
                }
                sql::SelectItem::ExprWithAliases { expr, .. } => {
                    return Err(unsupported("multiple aliases", expr.span()))
                }
            }
        }

        // HAVING
        self.windows_in(Some("HAVING"));
        let having = match &select.having {
            Some(h) => {
                let b = self.expr(h, &scope, Some(&mut ctx))?;
                Some(self.boolean(b, h)?)
            }
            None => None,
        };
        self.windows_in(None);

        // QUALIFY: a filter of the rows after their windows are computed.
        let qualify = match &select.qualify {
            Some(q) => {
                let q = with_select_aliases(q, select, &scope);
                let b = self.expr(&q, &scope, is_agg.then_some(&mut ctx))?;
                Some(self.boolean(b, &q)?)
            }
            None => None,
        };

        // ORDER BY
        let mut order = Vec::new();
        for o in &order_exprs {
            let (descending, nulls_first) = sort_options(o)?;
            let position = self.order_target(
                &o.expr,
                &scope,
                is_agg,
                &mut ctx,
                &mut outputs,
                &aliases,
                visible.len(),
            )?;
            if distinct && position >= visible.len() {
                return Err(PlanError::Invalid(format!(
                    "for SELECT DISTINCT, ORDER BY expressions must appear in the select list{}",
                    at(o.expr.span())
                )));
            }
            order.push(SortKey {
                expr: Expr::Column(position),
                descending,
                nulls_first,
            });
        }
        // DISTINCT ON: its expressions' places in the select list, as ORDER BY's.
        let mut on = Vec::new();
        for e in distinct_on.into_iter().flatten() {
            if let sql::Expr::Value(v) = e {
                if let sql::Value::Number(s, _) = &v.value {
                    if !s
                        .parse()
                        .is_ok_and(|n: usize| (1..=visible.len()).contains(&n))
                    {
                        return Err(PlanError::Invalid(format!(
                            "DISTINCT ON position {s} is not in the select list{}",
                            at(v.span)
                        )));
                    }
                }
            }
            on.push(self.order_target(
                e,
                &scope,
                is_agg,
                &mut ctx,
                &mut outputs,
                &aliases,
                visible.len(),
            )?);
        }
        if let Some(first) = distinct_on.and_then(|exprs| exprs.first()) {
            distinct_on::check_order(&on, &order, first.span())?;
        }
        let limits = match q {
            Some(q) => query_limit(q, !order.is_empty())?,
            None => Limits::default(),
        };

        // The plan, bottom up.
        let frame = self.frames.last_mut().expect("select pushed its frame");
        let pre = std::mem::take(&mut frame.pre);
        let post = std::mem::take(&mut frame.post);
        let from_plan = pass_through(from_plan, &std::mem::take(&mut frame.passed));
        let (mut plan, pre_at) = Binder::place_subqueries(from_plan, pre);
        let fix_pre = |e: &Expr| resolve_placeholders(e, PRE_APPLY, &pre_at);
        plan = plan.filter_all(where_pred.iter().map(fix_pre).collect());
        let mut calls = std::mem::take(&mut frame_windows(self).calls);
        let mut qualify = qualify;
        let mut outputs: Vec<(Expr, DataType)> = outputs
            .into_iter()
            .map(|b| (b.expr, b.ty.unwrap_or(DataType::Int64)))
            .collect();
        if is_agg {
            let names = &scope.names;
            let groups: Vec<Expr> = ctx.groups.iter().map(|g| fix_pre(&g.expr)).collect();
            let group_fields = groups
                .iter()
                .zip(&ctx.groups)
                .map(|(g, b)| {
                    Field::new(
                        crate::explain::fmt_expr(g, names),
                        b.ty.unwrap_or(DataType::Int64),
                    )
                })
                .collect();
            let aggs: Vec<AggregateExpr> = ctx
                .aggs
                .iter()
                .map(|a| AggregateExpr {
                    arg: a.arg.as_ref().map(fix_pre),
                    ..a.clone()
                })
                .collect();
            let agg_names = aggs
                .iter()
                .map(|a| crate::explain::fmt_agg(a, names))
                .collect();
            plan = match &grouping_sets {
                None => aggregate_plan(
                    plan,
                    groups,
                    group_fields,
                    aggs,
                    &ctx.distinct,
                    agg_names,
                    sspan,
                )?,
                Some(sets) => {
                    let spec = AggregateSpec {
                        groups,
                        group_fields,
                        aggs,
                        distinct: ctx.distinct.clone(),
                        agg_names,
                    };
                    grouping_sets_plan(plan, spec, sets, sspan)?
                }
            };
            let (p, post_at) = Binder::place_subqueries(plan, post);
            let fix_post = |e: &Expr| resolve_placeholders(e, POST_APPLY, &post_at);
            plan = p.filter_all(having.iter().map(fix_post).collect());
            for (e, _) in &mut outputs {
                *e = fix_post(e);
            }
            if let Some((_, f)) = &mut expanded {
                *f = f.map_args(&mut |e| fix_post(e));
            }
            calls.iter_mut().for_each(|c| c.map_exprs(&fix_post));
            qualify = qualify.map(|q| fix_post(&q));
        } else {
            debug_assert!(post.is_empty(), "no aggregation, no subqueries over it");
            for (e, _) in &mut outputs {
                *e = fix_pre(e);
            }
            if let Some((_, f)) = &mut expanded {
                *f = f.map_args(&mut |e| fix_pre(e));
            }
            calls.iter_mut().for_each(|c| c.map_exprs(&fix_pre));
            qualify = qualify.map(|q| fix_pre(&q));
        }
        // The windows, over the rows (or groups) that passed WHERE (and HAVING).
        let (p, window_at) = Binder::place_windows(plan, calls);
        let fix_window = |e: &Expr| resolve_placeholders(e, WINDOW_SLOT, &window_at);
        plan = p.filter_all(qualify.iter().map(fix_window).collect());
        for (e, _) in &mut outputs {
            *e = fix_window(e);
        }
        // A table function in the list of a grouped or windowed query: each row the grouping
        // and the windows made, once per value of its call.
        if let Some((slot, function)) = expanded {
            let function = function.map_args(&mut |e| fix_window(e));
            let width = plan.width();
            let field = Field::new(function.name(), function.data_type());
            plan = LogicalPlan::Expand {
                input: Box::new(plan),
                function,
                ordinality: false,
                fields: vec![field],
            };
            outputs[slot].0 = Expr::Column(width);
        }
        let mut fields = visible.clone();
        for (i, (_, t)) in outputs.iter().enumerate().skip(visible.len()) {
            fields.push(Field::new(format!("__order{i}"), *t));
        }
        plan = plan.project(
            outputs.into_iter().map(|(e, _)| e).collect(),
            fields.clone(),
        );
        if distinct {
            plan = LogicalPlan::Distinct {
                input: Box::new(plan),
            };
        }
        if distinct_on.is_some() {
            plan = distinct_on::first_of_each(plan, &on, &order, fields.clone());
        }
        plan = sorted_and_limited(plan, order, limits);
        if fields.len() > visible.len() {
            plan = plan.project(
                (0..visible.len()).map(Expr::Column).collect(),
                visible.clone(),
            );
        }
        Ok(BoundQuery {
            plan,
            fields: visible,
        })
    }

    /// The FROM clause: its relations added to a new scope, and the plan joining them (its
    /// output is the scope's combined row). No FROM: one row of no columns.
    /// The FROM items' scope and plan (one empty row without any).
    fn bind_from(
        &mut self,
        from: &[sql::TableWithJoins],
    ) -> Result<(Scope, LogicalPlan), PlanError> {
        let mut scope = Scope::default();
        let mut plan: Option<LogicalPlan> = None;
        for twj in from {
            plan = Some(self.table_with_joins(twj, &mut scope, plan)?);
        }
        let plan = plan.unwrap_or_else(|| LogicalPlan::Values {
            schema: Schema::default(),
            rows: vec![vec![]],
        });
        Ok((scope, plan))
    }

    /// `a JOIN b ON ... JOIN c USING (...)`: the relations are added to `scope` in order.
    /// `before` is the plan of the FROM items left of it (the scope's columns so far), which
    /// the result cross-joins, or a `LATERAL` subquery first in `twj` reads. Returns the plan
    /// of all the FROM items so far.
    fn table_with_joins(
        &mut self,
        twj: &sql::TableWithJoins,
        scope: &mut Scope,
        before: Option<LogicalPlan>,
    ) -> Result<LogicalPlan, PlanError> {
        // Where this item's columns and relations start in the scope: its join conditions
        // read the columns from there on.
        let (mut base, mut first) = (scope.types.len(), scope.tables.len());
        let (mut plan, mut before) = match before {
            Some(left) if is_lateral(&twj.relation) => {
                let plan =
                    self.lateral_join(left, &twj.relation, scope, (0, 0), JoinKind::Inner, None)?;
                (base, first) = (0, 0);
                (plan, None)
            }
            before => (self.table_factor(&twj.relation, scope)?, before),
        };
        for j in &twj.joins {
            let jspan = j.relation.span();
            let (kind, constraint) = match &j.join_operator {
                sql::JoinOperator::Join(c) | sql::JoinOperator::Inner(c) => (JoinKind::Inner, c),
                sql::JoinOperator::Left(c) | sql::JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
                sql::JoinOperator::Right(c) | sql::JoinOperator::RightOuter(c) => {
                    (JoinKind::Right, c)
                }
                sql::JoinOperator::FullOuter(c) => (JoinKind::Full, c),
                sql::JoinOperator::CrossJoin(c) => (JoinKind::Inner, c),
                _ => return Err(unsupported("this join type", jspan)),
            };
            if is_lateral(&j.relation) {
                let constraint = Some((constraint, jspan));
                plan =
                    self.lateral_join(plan, &j.relation, scope, (base, first), kind, constraint)?;
                continue;
            }
            let left_tables = scope.tables.len();
            let right = self.table_factor(&j.relation, scope)?;
            let filter = self.join_condition(constraint, scope, left_tables, jspan)?;
            let filter = local_condition(filter, base, jspan)?;
            if filter.is_none() && kind != JoinKind::Inner {
                return Err(PlanError::Invalid(format!(
                    "{} JOIN needs an ON or USING condition{}",
                    kind.name(),
                    at(jspan)
                )));
            }
            plan = LogicalPlan::Join {
                left: Box::new(plan),
                right: Box::new(right),
                kind,
                on: vec![],
                filter,
            };
        }
        Ok(match before.take() {
            Some(left) => cross_join(left, plan),
            None => plan,
        })
    }

    /// `left` joined with the `LATERAL` subquery `f` (a dependent join: the subquery reads
    /// the columns of `left`, which are the scope's from `start.0` on, of its relations from
    /// `start.1` on), `kind` (inner or left) with `constraint`. The subquery is added to
    /// `scope`. A subquery that reads none of `left` is an ordinary derived table.
    fn lateral_join(
        &mut self,
        left: LogicalPlan,
        f: &sql::TableFactor,
        scope: &mut Scope,
        start: (usize, usize),
        kind: JoinKind,
        constraint: Option<(&sql::JoinConstraint, Span)>,
    ) -> Result<LogicalPlan, PlanError> {
        let span = f.span();
        let (base, first) = start;
        let visible = Scope {
            tables: scope.tables[first..]
                .iter()
                .map(|t| ScopeTable {
                    offset: t.offset - base,
                    ..t.clone()
                })
                .collect(),
            types: scope.types[base..].to_vec(),
            names: scope.names[base..].to_vec(),
        };
        let outer = OuterScope {
            scope: visible,
            passed: Vec::new(),
        };
        let (plan, fields, alias_name, passed) = match f {
            sql::TableFactor::Derived {
                subquery, alias, ..
            } => {
                let (bound, passed) = self.query_in(outer, subquery);
                let mut bound = bound?;
                if let Some(a) = alias {
                    rename_columns(&mut bound.fields, a, span)?;
                }
                let alias_name = alias
                    .as_ref()
                    .map_or_else(String::new, |a| a.name.value.to_lowercase());
                (bound.plan, bound.fields, alias_name, passed)
            }
            // A function in FROM reads the FROM items before it, as in PostgreSQL.
            f => {
                let Some(call) = table_call(f) else {
                    return Err(unsupported("LATERAL on this FROM item", span));
                };
                let mut own = Scope::default();
                let (bound, passed) = self.within(outer, |b| {
                    b.table_function(&call, span, &Scope::default(), &mut own)
                });
                let plan = bound?;
                let table = own.tables.pop().expect("a table function adds its columns");
                (plan, table.fields, table.alias, passed)
            }
        };
        let left_tables = scope.tables.len();
        scope.add(fields, alias_name.clone(), span)?;
        let filter = match constraint {
            Some((c, jspan)) => {
                let filter = self.join_condition(c, scope, left_tables, jspan)?;
                local_condition(filter, base, jspan)?
            }
            None => None,
        };
        let right = LogicalPlan::SubqueryAlias {
            input: Box::new(plan),
            alias: alias_name,
        };
        if !right.is_correlated() {
            if filter.is_none() && kind != JoinKind::Inner {
                return Err(PlanError::Invalid(format!(
                    "{} JOIN needs an ON or USING condition{}",
                    kind.name(),
                    at(span)
                )));
            }
            return Ok(LogicalPlan::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind,
                on: vec![],
                filter,
            });
        }
        let outer = match kind {
            JoinKind::Inner => false,
            JoinKind::Left => true,
            _ => {
                return Err(unsupported(
                    format!(
                        "{} JOIN LATERAL (the join must be INNER or LEFT for a LATERAL reference)",
                        kind.name()
                    ),
                    span,
                ))
            }
        };
        if outer && filter.is_none() {
            return Err(PlanError::Invalid(format!(
                "LEFT JOIN needs an ON or USING condition{}",
                at(span)
            )));
        }
        // The pass-through columns sit between the left's columns and the subquery's, and
        // go again after the join.
        let w = left.width();
        let p = passed.len();
        let ws = right.width();
        let on = filter.map(|e| e.map_columns(&|c| if c >= w { c + p } else { c }));
        let apply = LogicalPlan::Apply {
            input: Box::new(pass_through(left, &passed)),
            subquery: Box::new(right),
            kind: ApplyKind::Lateral { left: outer, on },
            field: Field::new("lateral", DataType::Boolean),
            position: pos(span),
        };
        if p == 0 {
            return Ok(apply);
        }
        let fields = apply.schema().fields;
        let keep: Vec<usize> = (0..w).chain(w + p..w + p + ws).collect();
        let out = keep.iter().map(|&c| fields[c].clone()).collect();
        Ok(apply.project(keep.into_iter().map(Expr::Column).collect(), out))
    }

    /// The condition of a join whose right side is `scope.tables[left_tables..]`.
    fn join_condition(
        &mut self,
        constraint: &sql::JoinConstraint,
        scope: &mut Scope,
        left_tables: usize,
        jspan: Span,
    ) -> Result<Option<Expr>, PlanError> {
        match constraint {
            sql::JoinConstraint::On(e) => {
                let pending = self.frames.last().map_or(0, |f| f.pre.len());
                let b = self.expr(e, scope, None)?;
                if self.frames.last().map_or(0, |f| f.pre.len()) != pending {
                    return Err(unsupported("subqueries in JOIN ... ON", e.span()));
                }
                Ok(Some(self.boolean(b, e)?))
            }
            sql::JoinConstraint::Using(names) => {
                let mut cols = Vec::with_capacity(names.len());
                for n in names {
                    match n.0.as_slice() {
                        [sql::ObjectNamePart::Identifier(id)] => cols.push(id.clone()),
                        _ => return Err(unsupported("qualified names in USING", jspan)),
                    }
                }
                self.using(&cols, scope, left_tables, jspan).map(Some)
            }
            sql::JoinConstraint::Natural => {
                let right = &scope.tables[left_tables..];
                let left = &scope.tables[..left_tables];
                let mut cols = Vec::new();
                for t in right {
                    for f in &t.fields {
                        let in_left = left.iter().any(|l| l.index_of(&f.name).is_some());
                        if in_left && !cols.iter().any(|c: &sql::Ident| c.value == f.name) {
                            cols.push(sql::Ident::new(f.name.clone()));
                        }
                    }
                }
                if cols.is_empty() {
                    return Ok(None);
                }
                self.using(&cols, scope, left_tables, jspan).map(Some)
            }
            sql::JoinConstraint::None => Ok(None),
            sql::JoinConstraint::UsingAlias(..) => Err(unsupported("USING ... AS", jspan)),
        }
    }

    /// `USING (a, b)`: `left.a = right.a AND ...`; the right columns are merged into the left
    /// ones for unqualified names and `*`.
    fn using(
        &mut self,
        cols: &[sql::Ident],
        scope: &mut Scope,
        left_tables: usize,
        jspan: Span,
    ) -> Result<Expr, PlanError> {
        let left_scope = Scope {
            tables: scope.tables[..left_tables].to_vec(),
            ..scope.clone()
        };
        let mut conds = Vec::with_capacity(cols.len());
        for c in cols {
            let l = left_scope.resolve(std::slice::from_ref(c), jspan)?;
            let mut found = None;
            for ti in left_tables..scope.tables.len() {
                if let Some(i) = scope.tables[ti].index_of(&c.value) {
                    if found.is_some() {
                        return Err(PlanError::AmbiguousColumn(c.value.clone()));
                    }
                    found = Some((ti, i));
                }
            }
            let Some((ti, i)) = found else {
                return Err(PlanError::UnknownColumn {
                    name: c.value.clone(),
                    position: pos(jspan),
                });
            };
            let r = scope.tables[ti].offset + i;
            scope.tables[ti].merged.push(i);
            let lb = B::new(Expr::Column(l), Some(scope.types[l]));
            let rb = B::new(Expr::Column(r), Some(scope.types[r]));
            let (lt, rt) = (scope.types[l], scope.types[r]);
            let Some(t) = same_or_numeric(lt, rt) else {
                return Err(PlanError::Type(format!(
                    "USING column '{}' is {lt} on the left and {rt} on the right{}",
                    c.value,
                    at(jspan)
                )));
            };
            let (le, re) = (self.coerce(lb, t), self.coerce(rb, t));
            conds.push(le.eq(re));
        }
        Ok(crate::logical::and_all(conds).expect("USING names at least one column"))
    }

    /// One FROM item: added to `scope`; returns its plan.
    fn table_factor(
        &mut self,
        f: &sql::TableFactor,
        scope: &mut Scope,
    ) -> Result<LogicalPlan, PlanError> {
        match f {
            sql::TableFactor::Table {
                name, alias, args, ..
            } => {
                if args.is_some() {
                    if let Some(call) = table_call(f) {
                        return self.table_function(&call, f.span(), &Scope::default(), scope);
                    }
                    return Err(unknown_table_function(name, f.span()));
                }
                let tname = match name.0.as_slice() {
                    [sql::ObjectNamePart::Identifier(id)] => id.value.clone(),
                    [.., sql::ObjectNamePart::Identifier(id)] => id.value.clone(),
                    _ => return Err(unsupported("this table name", f.span())),
                };
                // `information_schema.tables` and the other system views.
                if let [sql::ObjectNamePart::Identifier(schema), _] = name.0.as_slice() {
                    if let Some(view) = self.system_view(&schema.value, &tname, f.span()) {
                        let plan = view?;
                        let alias_name = match alias {
                            Some(a) => a.name.value.to_lowercase(),
                            None => tname.to_lowercase(),
                        };
                        let mut fields = plan.schema().fields;
                        if let Some(a) = alias {
                            rename_columns(&mut fields, a, f.span())?;
                        }
                        scope.add(fields, alias_name.clone(), f.span())?;
                        return Ok(LogicalPlan::SubqueryAlias {
                            input: Box::new(plan),
                            alias: alias_name,
                        });
                    }
                }
                let alias_name = match alias {
                    Some(a) => a.name.value.to_lowercase(),
                    None => tname.to_lowercase(),
                };
                let lower = tname.to_lowercase();
                let (plan, mut fields) =
                    if let Some((_, cte)) = self.ctes.iter().rev().find(|(n, _)| *n == lower) {
                        let plan = LogicalPlan::SubqueryAlias {
                            input: Box::new(cte.plan.clone()),
                            alias: alias_name.clone(),
                        };
                        (plan, cte.fields.clone())
                    } else if let Some(view) = self.catalog.view(&tname) {
                        let bound = self.view(view, f.span())?;
                        let plan = LogicalPlan::SubqueryAlias {
                            input: Box::new(bound.plan),
                            alias: alias_name.clone(),
                        };
                        (plan, bound.fields)
                    } else {
                        let def = self
                            .catalog
                            .table(&tname)
                            .ok_or_else(|| PlanError::UnknownTable(tname.clone()))?
                            .clone();
                        let fields = def.schema.fields.clone();
                        let plan = LogicalPlan::Scan {
                            projection: (0..def.schema.len()).collect(),
                            table: def,
                            filters: vec![],
                        };
                        (plan, fields)
                    };
                if let Some(a) = alias {
                    rename_columns(&mut fields, a, f.span())?;
                }
                scope.add(fields, alias_name, f.span())?;
                Ok(plan)
            }
            sql::TableFactor::Derived {
                subquery, alias, ..
            } => {
                // A LATERAL subquery first in FROM has nothing to its left to read: an
                // ordinary derived table. A derived table reads the columns of the queries
                // around this one (not those of the FROM items beside it, which is LATERAL).
                let mut bound = self.query(subquery)?;
                let alias_name = alias
                    .as_ref()
                    .map_or_else(String::new, |a| a.name.value.to_lowercase());
                if let Some(a) = alias {
                    rename_columns(&mut bound.fields, a, f.span())?;
                }
                scope.add(bound.fields, alias_name.clone(), f.span())?;
                Ok(LogicalPlan::SubqueryAlias {
                    input: Box::new(bound.plan),
                    alias: alias_name,
                })
            }
            sql::TableFactor::Function { name, .. } => match table_call(f) {
                Some(call) => self.table_function(&call, f.span(), &Scope::default(), scope),
                None => Err(unknown_table_function(name, f.span())),
            },
            sql::TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                if alias.is_some() {
                    return Err(unsupported("an alias on a parenthesized join", f.span()));
                }
                self.table_with_joins(table_with_joins, scope, None)
            }
            _ => Err(unsupported("this FROM item", f.span())),
        }
    }

    /// Binds the query of `view`, with its column names.
    pub(super) fn view(
        &mut self,
        view: &crate::catalog::ViewDef,
        span: Span,
    ) -> Result<BoundQuery, PlanError> {
        let key = view.name.to_lowercase();
        if self.views.contains(&key) {
            return Err(PlanError::Invalid(format!(
                "view '{}' refers to itself{}",
                view.name,
                at(span)
            )));
        }
        let dialect = sqlparser::dialect::GenericDialect {};
        let mut stmts = sqlparser::parser::Parser::parse_sql(&dialect, &view.sql)
            .map_err(|e| PlanError::Invalid(format!("view '{}' does not parse: {e}", view.name)))?;
        let Some(sql::Statement::Query(q)) = stmts.pop() else {
            return Err(PlanError::Invalid(format!(
                "view '{}' is not a query",
                view.name
            )));
        };
        self.views.push(key);
        self.outer.push(None);
        // Positions in the view's text are not the statement's: its windows own no EXCLUDE
        // of the statement's (a view keeps none, see `ddl::create_view`).
        let exclusions = std::mem::take(&mut self.exclusions);
        let bound = self.query(&q);
        self.exclusions = exclusions;
        self.outer.pop();
        self.views.pop();
        let mut bound = bound.map_err(|e| match e {
            PlanError::UnknownTable(t) | PlanError::UnknownColumn { name: t, .. } => {
                PlanError::Invalid(format!(
                    "view '{}' refers to '{t}', which is gone",
                    view.name
                ))
            }
            other => other,
        })?;
        for (f, name) in bound.fields.iter_mut().zip(&view.columns) {
            f.name = name.clone();
        }
        Ok(bound)
    }

    /// `VALUES (...), (...)`: constant rows with columns `column1`, `column2`, ... (types
    /// unified per column as in a comparison; INT with DOUBLE is DOUBLE).
    fn values(&mut self, v: &sql::Values, span: Span) -> Result<BoundQuery, PlanError> {
        self.windows.push(WindowScope::refusing("VALUES"));
        let bound = self.values_rows(v, span);
        self.windows.pop();
        bound
    }

    /// [`Binder::values`] once window functions are refused.
    fn values_rows(&mut self, v: &sql::Values, span: Span) -> Result<BoundQuery, PlanError> {
        if v.explicit_row {
            return Err(unsupported("VALUES ROW(...)", span));
        }
        let width = v.rows.first().map_or(0, |r| r.len());
        if width == 0 {
            return Err(PlanError::Invalid(format!(
                "VALUES needs at least one column{}",
                at(span)
            )));
        }
        let scope = Scope::default();
        let mut bound: Vec<Vec<(B, &sql::Expr)>> = Vec::new();
        for row in &v.rows {
            if row.len() != width {
                let rspan = row.first().map_or(span, |e| e.span());
                return Err(PlanError::Invalid(format!(
                    "VALUES lists must all be the same length ({width} and {}){}",
                    row.len(),
                    at(rspan)
                )));
            }
            let mut out = Vec::new();
            for e in row.iter() {
                if contains_subquery(e) {
                    return Err(unsupported("subqueries in VALUES lists", e.span()));
                }
                out.push((self.expr(e, &scope, None)?, e));
            }
            bound.push(out);
        }
        let mut fields = Vec::new();
        for j in 0..width {
            let mut ty: Option<DataType> = None;
            for row in &bound {
                let (b, e) = &row[j];
                let Some(t) = b.ty else { continue };
                ty = Some(match ty {
                    None => t,
                    Some(a) => same_or_numeric(a, t).ok_or_else(|| {
                        PlanError::Type(format!(
                            "VALUES column {} mixes {a} and {t} at '{e}'{}",
                            j + 1,
                            at(e.span())
                        ))
                    })?,
                });
            }
            fields.push(Field::new(
                format!("column{}", j + 1),
                ty.unwrap_or(DataType::Int64),
            ));
        }
        let one_row = weir_operators::Batch::with_row_count(vec![], 1)
            .map_err(|e| PlanError::Invalid(e.to_string()))?;
        let mut rows = Vec::new();
        for row in bound {
            let mut out = Vec::new();
            for (j, (b, e)) in row.into_iter().enumerate() {
                let expr = self.coerce(b, fields[j].data_type);
                if has_columns(&expr) {
                    return Err(unsupported("column references in VALUES lists", e.span()));
                }
                let params = if self.params_are_constants {
                    self.params.values()
                } else {
                    &[]
                };
                let c =
                    weir_operators::eval::evaluate(&expr, &one_row, params).map_err(
                        |err| match err {
                            weir_operators::Error::MissingParameter(_) => {
                                unsupported("parameters in VALUES lists", e.span())
                            }
                            err => PlanError::Invalid(format!("{err} in '{e}'{}", at(e.span()))),
                        },
                    )?;
                out.push(c.value(0));
            }
            rows.push(out);
        }
        Ok(BoundQuery {
            plan: LogicalPlan::Values {
                schema: Schema::new(fields.clone()),
                rows,
            },
            fields,
        })
    }

    fn group_target<'e>(
        &mut self,
        g: &'e sql::Expr,
        scope: &Scope,
        select: &'e sql::Select,
    ) -> Result<&'e sql::Expr, PlanError> {
        // GROUP BY ordinal
        if let sql::Expr::Value(v) = g {
            if let sql::Value::Number(s, _) = &v.value {
                let n: usize = s.parse().unwrap_or(0);
                return match select.projection.get(n.wrapping_sub(1)) {
                    Some(sql::SelectItem::UnnamedExpr(e))
                    | Some(sql::SelectItem::ExprWithAlias { expr: e, .. }) => {
                        if contains_agg(e) {
                            Err(PlanError::Invalid(format!(
                                "GROUP BY position {n} refers to an aggregate{}",
                                at(v.span)
                            )))
                        } else {
                            Ok(e)
                        }
                    }
                    _ => Err(PlanError::Invalid(format!(
                        "GROUP BY position {s} is not in the select list{}",
                        at(v.span)
                    ))),
                };
            }
        }
        // GROUP BY select alias (input columns take precedence)
        if let sql::Expr::Identifier(id) = g {
            if scope.resolve(std::slice::from_ref(id), id.span).is_err() {
                for item in &select.projection {
                    if let sql::SelectItem::ExprWithAlias { expr, alias } = item {
                        if alias.value.eq_ignore_ascii_case(&id.value) {
                            if contains_agg(expr) {
                                return Err(PlanError::Invalid(format!(
                                    "GROUP BY '{}' refers to an aggregate{}",
                                    id.value,
                                    at(id.span)
                                )));
                            }
                            return Ok(expr);
                        }
                    }
                }
            }
        }
        Ok(g)
    }

    #[allow(clippy::too_many_arguments)]
    fn order_target(
        &mut self,
        e: &sql::Expr,
        scope: &Scope,
        is_agg: bool,
        ctx: &mut AggCtx,
        outputs: &mut Vec<B>,
        aliases: &[Option<String>],
        visible: usize,
    ) -> Result<usize, PlanError> {
        if let sql::Expr::Value(v) = e {
            if let sql::Value::Number(s, _) = &v.value {
                let n: usize = s.parse().unwrap_or(0);
                if n == 0 || n > visible {
                    return Err(PlanError::Invalid(format!(
                        "ORDER BY position {s} is not in the select list{}",
                        at(v.span)
                    )));
                }
                return Ok(n - 1);
            }
        }
        if let sql::Expr::Identifier(id) = e {
            if let Some(i) = aliases.iter().position(|a| {
                a.as_ref()
                    .is_some_and(|a| a.eq_ignore_ascii_case(&id.value))
            }) {
                return Ok(i);
            }
        }
        let b = self.expr(e, scope, is_agg.then_some(ctx))?;
        if let Some(i) = outputs.iter().position(|o| o.expr == b.expr) {
            return Ok(i);
        }
        let t = self.settle(&b);
        outputs.push(B::new(b.expr, Some(t)));
        Ok(outputs.len() - 1)
    }

    fn expand_table(
        &mut self,
        ti: usize,
        scope: &Scope,
        ctx: Option<&AggCtx>,
        outputs: &mut Vec<B>,
        visible: &mut Vec<Field>,
        aliases: &mut Vec<Option<String>>,
    ) -> Result<(), PlanError> {
        let t = &scope.tables[ti];
        for (i, f) in t.fields.iter().enumerate() {
            if t.merged.contains(&i) {
                continue;
            }
            let g = t.offset + i;
            let expr = match ctx {
                None => Expr::Column(g),
                Some(ctx) => match ctx.groups.iter().position(|x| x.expr == Expr::Column(g)) {
                    Some(k) => Expr::Column(k),
                    None => {
                        return Err(PlanError::Invalid(format!(
                            "column '{}' must appear in the GROUP BY clause or be used in an aggregate function",
                            f.name
                        )))
                    }
                },
            };
            outputs.push(B::new(expr, Some(f.data_type)));
            visible.push(f.clone());
            aliases.push(None);
        }
        Ok(())
    }

    fn display_name(&self, e: &sql::Expr, scope: &Scope) -> String {
        match e {
            sql::Expr::Function(f) if f.over.is_some() => self.window_text(f, e),
            sql::Expr::Identifier(id) => scope
                .resolve(std::slice::from_ref(id), id.span)
                .map(|g| scope.names[g].clone())
                .unwrap_or_else(|_| id.value.clone()),
            sql::Expr::CompoundIdentifier(ids) => scope
                .resolve(ids, e.span())
                .map(|g| scope.names[g].clone())
                .unwrap_or_else(|_| e.to_string()),
            _ => e.to_string(),
        }
    }
}

/// The Aggregate of a SELECT. With `COUNT(DISTINCT x)`-style aggregates (all over the same
/// `x`), two levels: the first groups on the keys and `x`, which removes the duplicates of
/// `x`, and computes each plain aggregate's part per `(keys, x)`; the second groups on the
/// keys, runs the DISTINCT aggregates over the distinct values of `x` and combines the parts
/// (COUNT as a sum of counts, SUM as a sum of sums, MIN and MAX of minima and maxima, AVG as
/// the sum of sums over the sum of counts).
fn aggregate_plan(
    input: LogicalPlan,
    groups: Vec<Expr>,
    group_fields: Vec<Field>,
    aggs: Vec<AggregateExpr>,
    distinct: &[bool],
    agg_names: Vec<String>,
    span: Span,
) -> Result<LogicalPlan, PlanError> {
    let Some(first) = distinct.iter().position(|d| *d) else {
        return Ok(LogicalPlan::Aggregate {
            input: Box::new(input),
            groups,
            group_fields,
            aggs,
            agg_names,
        });
    };
    // An ordered aggregate reads the query's rows in its order, not a first level's parts.
    if aggs.iter().any(|a| !a.order_by.is_empty()) {
        return Err(unsupported(
            "an aggregate with ORDER BY beside a DISTINCT aggregate",
            span,
        ));
    }
    let arg = aggs[first]
        .arg
        .clone()
        .expect("DISTINCT aggregates have an argument");
    let distinct_type = aggs[first].input_type;
    if aggs
        .iter()
        .zip(distinct)
        .any(|(a, d)| *d && a.arg.as_ref() != Some(&arg))
    {
        return split_distinct(input, groups, group_fields, aggs, distinct, agg_names, span);
    }
    let k = groups.len();
    let mut inner_groups = groups;
    inner_groups.push(arg);
    let mut inner_fields = group_fields.clone();
    inner_fields.push(Field::new("__distinct", distinct_type));
    let mut parts: Vec<AggregateExpr> = Vec::new();
    let mut outer_aggs: Vec<AggregateExpr> = Vec::new();
    // Per aggregate of the SELECT, its result over the second level's output.
    let mut results: Vec<Expr> = Vec::new();
    let part = |a: AggregateExpr, parts: &mut Vec<AggregateExpr>| {
        parts.push(a);
        k + parts.len()
    };
    for (a, d) in aggs.iter().zip(distinct) {
        let at = k + outer_aggs.len();
        let combine = |func: AggFunc, column: usize, input_type: DataType| AggregateExpr {
            func,
            arg: Some(Expr::Column(column)),
            input_type,
            param: a.param.clone(),
            order_by: a.order_by.clone(),
        };
        if *d {
            outer_aggs.push(combine(a.func, k, a.input_type));
            results.push(Expr::Column(at));
            continue;
        }
        match a.func {
            AggFunc::CountStar | AggFunc::Count => {
                let c = part(a.clone(), &mut parts);
                outer_aggs.push(combine(AggFunc::Sum, c, DataType::Int64));
                results.push(zero_if_null(Expr::Column(at)));
            }
            AggFunc::Sum => {
                let c = part(a.clone(), &mut parts);
                outer_aggs.push(combine(AggFunc::Sum, c, a.output_type()));
                results.push(Expr::Column(at));
            }
            // The second level takes the first's values: TOTAL adds the partial totals,
            // STRING_AGG joins the partial texts with the same separator.
            AggFunc::Min | AggFunc::Max | AggFunc::Total | AggFunc::StringAgg => {
                let c = part(a.clone(), &mut parts);
                outer_aggs.push(combine(a.func, c, a.output_type()));
                results.push(Expr::Column(at));
            }
            // A group's values all at once, or a state no aggregate of the second level
            // merges: not from the first level's partial results.
            AggFunc::PercentileCont
            | AggFunc::VarSamp
            | AggFunc::VarPop
            | AggFunc::StddevSamp
            | AggFunc::StddevPop => {
                return Err(unsupported(
                    format!("{} beside a DISTINCT aggregate", a.func.name()),
                    span,
                ))
            }
            AggFunc::Avg => {
                let sum = AggregateExpr {
                    func: AggFunc::Sum,
                    ..a.clone()
                };
                let sum_type = sum.output_type();
                let s = part(sum, &mut parts);
                let c = part(
                    AggregateExpr {
                        func: AggFunc::Count,
                        ..a.clone()
                    },
                    &mut parts,
                );
                outer_aggs.push(combine(AggFunc::Sum, s, sum_type));
                outer_aggs.push(combine(AggFunc::Sum, c, DataType::Int64));
                let as_double = |e: Expr| Expr::Cast {
                    expr: Box::new(e),
                    to: DataType::Float64,
                };
                // NULL over no values: the summed count is then NULL or 0.
                results.push(Expr::Case {
                    operand: None,
                    branches: vec![(
                        zero_if_null(Expr::Column(at + 1)).eq(Expr::lit(0)),
                        Expr::Cast {
                            expr: Box::new(Expr::Literal(Value::Null)),
                            to: DataType::Float64,
                        },
                    )],
                    else_result: Some(Box::new(
                        as_double(Expr::Column(at))
                            .binary(BinaryOp::Div, as_double(Expr::Column(at + 1))),
                    )),
                });
            }
        }
    }
    let part_names = (0..parts.len()).map(|i| format!("__part{i}")).collect();
    let deduplicated = LogicalPlan::Aggregate {
        input: Box::new(input),
        groups: inner_groups,
        group_fields: inner_fields,
        aggs: parts,
        agg_names: part_names,
    };
    let outer_names = (0..outer_aggs.len()).map(|i| format!("__agg{i}")).collect();
    let combined = LogicalPlan::Aggregate {
        input: Box::new(deduplicated),
        groups: (0..k).map(Expr::Column).collect(),
        group_fields: group_fields.clone(),
        aggs: outer_aggs,
        agg_names: outer_names,
    };
    let mut fields = group_fields;
    for (a, name) in aggs.iter().zip(agg_names) {
        fields.push(Field::new(name, a.output_type()));
    }
    let exprs = (0..k).map(Expr::Column).chain(results).collect();
    Ok(combined.project(exprs, fields))
}

/// Aggregates with DISTINCT over different expressions (`COUNT(DISTINCT a), SUM(DISTINCT
/// b)`): one aggregation per DISTINCT expression (and one for the aggregates without
/// DISTINCT), each as [`aggregate_plan`] plans it, joined on the group keys (NULL keys
/// matching: every aggregation has the same groups, and without GROUP BY each one row).
fn split_distinct(
    input: LogicalPlan,
    groups: Vec<Expr>,
    group_fields: Vec<Field>,
    aggs: Vec<AggregateExpr>,
    distinct: &[bool],
    agg_names: Vec<String>,
    span: Span,
) -> Result<LogicalPlan, PlanError> {
    let k = groups.len();
    // The aggregates of each part: those without DISTINCT, then one part per expression.
    let mut parts: Vec<(Option<&Expr>, Vec<usize>)> = Vec::new();
    for (i, (a, d)) in aggs.iter().zip(distinct).enumerate() {
        let key = if *d { a.arg.as_ref() } else { None };
        match parts.iter_mut().find(|(p, _)| *p == key) {
            Some((_, members)) => members.push(i),
            None => parts.push((key, vec![i])),
        }
    }
    let mut plan: Option<LogicalPlan> = None;
    // Where each aggregate's result is in the joined parts.
    let mut at = vec![0; aggs.len()];
    for (_, members) in &parts {
        let part = aggregate_plan(
            input.clone(),
            groups.clone(),
            group_fields.clone(),
            members.iter().map(|&i| aggs[i].clone()).collect(),
            &members.iter().map(|&i| distinct[i]).collect::<Vec<_>>(),
            members.iter().map(|&i| agg_names[i].clone()).collect(),
            span,
        )?;
        let base = plan.as_ref().map_or(0, LogicalPlan::width);
        for (j, &i) in members.iter().enumerate() {
            at[i] = base + k + j;
        }
        plan = Some(match plan {
            None => part,
            Some(left) => {
                let on = group_fields
                    .iter()
                    .enumerate()
                    .flat_map(|(g, f)| {
                        crate::optimizer::unnest::null_safe_keys(
                            Expr::Column(g),
                            Expr::Column(g),
                            f.data_type,
                        )
                    })
                    .collect();
                LogicalPlan::Join {
                    left: Box::new(left),
                    right: Box::new(part),
                    kind: JoinKind::Inner,
                    on,
                    filter: None,
                }
            }
        });
    }
    let plan = plan.expect("at least two DISTINCT aggregates");
    let mut fields = group_fields;
    for (a, name) in aggs.iter().zip(agg_names) {
        fields.push(Field::new(name, a.output_type()));
    }
    let exprs = (0..k).chain(at).map(Expr::Column).collect();
    Ok(plan.project(exprs, fields))
}

/// Most grouping sets a GROUP BY may expand to (CUBE of 12 expressions).
const MAX_GROUPING_SETS: usize = 4096;

/// The GROUP BY list `exprs` as its distinct grouping expressions and, when it has GROUPING
/// SETS, ROLLUP or CUBE, the sets grouped by (positions in that list): the cross product of
/// its items (`a, ROLLUP (b, c)` is `(a, b, c), (a, b), (a)`).
#[allow(clippy::type_complexity)]
fn grouping_sets_of(
    exprs: &[sql::Expr],
    span: Span,
) -> Result<(Vec<&sql::Expr>, Option<Vec<Vec<usize>>>), PlanError> {
    let mut list: Vec<&sql::Expr> = Vec::new();
    fn index<'e>(e: &'e sql::Expr, list: &mut Vec<&'e sql::Expr>) -> usize {
        match list.iter().position(|x| *x == e) {
            Some(i) => i,
            None => {
                list.push(e);
                list.len() - 1
            }
        }
    }
    let mut sets: Vec<Vec<usize>> = vec![vec![]];
    let mut any = false;
    for e in exprs {
        let alternatives: Vec<Vec<usize>> = match e {
            sql::Expr::GroupingSets(v) => {
                any = true;
                v.iter()
                    .map(|s| s.iter().map(|x| index(x, &mut list)).collect())
                    .collect()
            }
            sql::Expr::Rollup(v) => {
                any = true;
                let parts: Vec<Vec<usize>> = v
                    .iter()
                    .map(|s| s.iter().map(|x| index(x, &mut list)).collect())
                    .collect();
                (0..=parts.len())
                    .rev()
                    .map(|n| parts[..n].concat())
                    .collect()
            }
            sql::Expr::Cube(v) => {
                any = true;
                let parts: Vec<Vec<usize>> = v
                    .iter()
                    .map(|s| s.iter().map(|x| index(x, &mut list)).collect())
                    .collect();
                if parts.len() > 12 {
                    return Err(unsupported("CUBE of more than 12 expressions", span));
                }
                let n = parts.len();
                (0..1usize << n)
                    .rev()
                    .map(|mask| {
                        (0..n)
                            .filter(|i| mask & (1 << (n - 1 - i)) != 0)
                            .flat_map(|i| parts[i].iter().copied())
                            .collect()
                    })
                    .collect()
            }
            plain => vec![vec![index(plain, &mut list)]],
        };
        sets = sets
            .iter()
            .flat_map(|s| {
                alternatives
                    .iter()
                    .map(move |a| [s.clone(), a.clone()].concat())
            })
            .collect();
        if sets.len() > MAX_GROUPING_SETS {
            return Err(unsupported(
                format!("more than {MAX_GROUPING_SETS} grouping sets"),
                span,
            ));
        }
    }
    Ok((list, any.then_some(sets)))
}

/// The aggregation of a SELECT: its group keys (for grouping sets, the `k` expressions then
/// their `k` GROUPING flags), and its aggregates.
struct AggregateSpec {
    groups: Vec<Expr>,
    group_fields: Vec<Field>,
    aggs: Vec<AggregateExpr>,
    distinct: Vec<bool>,
    agg_names: Vec<String>,
}

/// GROUPING SETS: a UNION ALL of one aggregation per set (as [`aggregate_plan`] plans it),
/// each giving the columns of every grouping expression (NULL for those it leaves out),
/// their GROUPING flags (1 for those), and the aggregates.
fn grouping_sets_plan(
    input: LogicalPlan,
    spec: AggregateSpec,
    sets: &[Vec<usize>],
    span: Span,
) -> Result<LogicalPlan, PlanError> {
    let k = spec.groups.len() / 2;
    let mut fields = spec.group_fields.clone();
    for (a, name) in spec.aggs.iter().zip(&spec.agg_names) {
        fields.push(Field::new(name.clone(), a.output_type()));
    }
    let mut inputs = Vec::with_capacity(sets.len());
    for set in sets {
        let mut keys: Vec<usize> = Vec::new();
        for &i in set {
            if !keys.contains(&i) {
                keys.push(i);
            }
        }
        let part = aggregate_plan(
            input.clone(),
            keys.iter().map(|&i| spec.groups[i].clone()).collect(),
            keys.iter().map(|&i| spec.group_fields[i].clone()).collect(),
            spec.aggs.clone(),
            &spec.distinct,
            spec.agg_names.clone(),
            span,
        )?;
        let mut exprs: Vec<Expr> = (0..k)
            .map(|i| match keys.iter().position(|&x| x == i) {
                Some(at) => Expr::Column(at),
                None => Expr::Cast {
                    expr: Box::new(Expr::Literal(Value::Null)),
                    to: spec.group_fields[i].data_type,
                },
            })
            .collect();
        exprs.extend((0..k).map(|i| Expr::lit(i64::from(!keys.contains(&i)))));
        exprs.extend((0..spec.aggs.len()).map(|j| Expr::Column(keys.len() + j)));
        inputs.push(part.project(exprs, fields.clone()));
    }
    Ok(match inputs.len() {
        1 => inputs.pop().expect("one set"),
        _ => LogicalPlan::Union { inputs },
    })
}

/// `COALESCE(e, 0)`: a count combined from no parts is 0, not NULL.
fn zero_if_null(e: Expr) -> Expr {
    Expr::Function {
        func: ScalarFunc::Coalesce,
        args: vec![e, Expr::lit(0)],
    }
}

/// The type two columns of one result meet at: the same type, or the wider of two numeric
/// types (BIGINT → DECIMAL → DOUBLE).
fn same_or_numeric(a: DataType, b: DataType) -> Option<DataType> {
    if a == b {
        Some(a)
    } else {
        DataType::numeric_union(a, b)
    }
}

/// `l CROSS JOIN r` (a comma in FROM).
/// Whether `f` may read the FROM items before it: a `LATERAL` subquery, or a call of a
/// table function (functions in FROM are LATERAL, as in PostgreSQL).
fn is_lateral(f: &sql::TableFactor) -> bool {
    matches!(f, sql::TableFactor::Derived { lateral: true, .. }) || table_call(f).is_some()
}

/// The error for a call in FROM of a function weir has no table function of.
fn unknown_table_function(name: &sql::ObjectName, span: Span) -> PlanError {
    unsupported(
        format!(
            "the table function {name} (weir has {})",
            TABLE_FUNCTIONS.join(", ")
        ),
        span,
    )
}

/// The name of a call of a table function (one name, lowercase), or `None`.
fn table_function_name(name: &sql::ObjectName) -> Option<String> {
    match name.0.as_slice() {
        [sql::ObjectNamePart::Identifier(id)] => {
            let name = id.value.to_lowercase();
            is_table_function(&name).then_some(name)
        }
        _ => None,
    }
}

/// `f` as a call of a table function (`generate_series(...)` or `LATERAL
/// generate_series(...)`), or `None`.
fn table_call(f: &sql::TableFactor) -> Option<TableCall<'_>> {
    let (name, args, alias, ordinality) = match f {
        sql::TableFactor::Table {
            name,
            alias,
            args: Some(args),
            with_ordinality,
            ..
        } => (name, &args.args, alias, with_ordinality),
        sql::TableFactor::Function {
            name,
            args,
            alias,
            with_ordinality,
            ..
        } => (name, args, alias, with_ordinality),
        _ => return None,
    };
    Some(TableCall {
        name: table_function_name(name)?,
        args,
        alias: alias.as_ref(),
        ordinality: *ordinality,
    })
}

/// A join condition bound over the whole FROM row, moved to the row of the join's own FROM
/// item, whose columns start at `base` (`a, b JOIN c ON ...` joins `b` and `c` only): a
/// column left of it is an error, as PostgreSQL has it.
fn local_condition(
    filter: Option<Expr>,
    base: usize,
    span: Span,
) -> Result<Option<Expr>, PlanError> {
    let Some(e) = filter else { return Ok(None) };
    if base == 0 {
        return Ok(Some(e));
    }
    if crate::logical::columns_of(&e).iter().any(|&c| c < base) {
        return Err(PlanError::Invalid(format!(
            "a JOIN condition reads a FROM item left of the join's own (put it in WHERE, or \
             join with JOIN instead of a comma){}",
            at(span)
        )));
    }
    Ok(Some(e.map_columns(&|c| c - base)))
}

fn cross_join(l: LogicalPlan, r: LogicalPlan) -> LogicalPlan {
    LogicalPlan::Join {
        left: Box::new(l),
        right: Box::new(r),
        kind: JoinKind::Inner,
        on: vec![],
        filter: None,
    }
}

/// LIMIT/OFFSET or OFFSET/FETCH of a query: `(limit, offset)`.
/// The LIMIT, OFFSET and FETCH of `q` (`ordered`: whether it has an ORDER BY, which `WITH
/// TIES` needs).
fn query_limit(q: &sql::Query, ordered: bool) -> Result<Limits, PlanError> {
    let (mut limit, offset) = limit_offset(q.limit_clause.as_ref())?;
    let mut with_ties = false;
    if let Some(fetch) = &q.fetch {
        limit = Some(fetch_count(fetch, q, limit.is_some())?);
        with_ties = fetch.with_ties;
        if with_ties && !ordered {
            return Err(PlanError::Invalid(format!(
                "WITH TIES cannot be specified without ORDER BY clause{}",
                at(q.span())
            )));
        }
    }
    Ok(Limits {
        limit,
        offset,
        with_ties,
    })
}

fn check_wildcard_opts(o: &sql::WildcardAdditionalOptions) -> Result<(), PlanError> {
    if o.opt_ilike.is_some()
        || o.opt_exclude.is_some()
        || o.opt_except.is_some()
        || o.opt_replace.is_some()
        || o.opt_rename.is_some()
        || o.opt_alias.is_some()
    {
        return Err(unsupported("wildcard options", o.wildcard_token.0.span));
    }
    Ok(())
}

fn count_literal(e: &sql::Expr, what: &str) -> Result<usize, PlanError> {
    match e {
        sql::Expr::Value(v) => match &v.value {
            sql::Value::Number(s, _) => s.parse::<usize>().map_err(|_| {
                PlanError::Invalid(format!(
                    "{what} must be a non-negative integer, got {s}{}",
                    at(v.span)
                ))
            }),
            sql::Value::Placeholder(_) => Err(unsupported(format!("parameters in {what}"), v.span)),
            _ => Err(PlanError::Invalid(format!(
                "{what} must be a non-negative integer{}",
                at(v.span)
            ))),
        },
        sql::Expr::Nested(x) => count_literal(x, what),
        other => Err(unsupported(format!("non-literal {what}"), other.span())),
    }
}

/// The row count of `FETCH {FIRST|NEXT} [n] {ROW|ROWS} {ONLY|WITH TIES}` (no count means one
/// row).
fn fetch_count(f: &sql::Fetch, q: &sql::Query, has_limit: bool) -> Result<usize, PlanError> {
    let span = f.quantity.as_ref().map_or_else(|| q.span(), |e| e.span());
    if f.percent {
        return Err(unsupported("FETCH ... PERCENT", span));
    }
    if has_limit {
        return Err(PlanError::Invalid(format!(
            "LIMIT and FETCH cannot both be given{}",
            at(span)
        )));
    }
    match &f.quantity {
        None => Ok(1),
        Some(e) => count_literal(e, "FETCH"),
    }
}

fn limit_offset(c: Option<&sql::LimitClause>) -> Result<(Option<usize>, usize), PlanError> {
    match c {
        None => Ok((None, 0)),
        Some(sql::LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if let Some(b) = limit_by.first() {
                return Err(unsupported("LIMIT BY", b.span()));
            }
            let limit = match limit {
                Some(sql::Expr::Value(v)) if matches!(v.value, sql::Value::Null) => None,
                Some(l) => Some(count_literal(l, "LIMIT")?),
                None => None,
            };
            let offset = match offset {
                Some(o) => count_literal(&o.value, "OFFSET")?,
                None => 0,
            };
            Ok((limit, offset))
        }
        Some(sql::LimitClause::OffsetCommaLimit { offset, limit }) => Ok((
            Some(count_literal(limit, "LIMIT")?),
            count_literal(offset, "OFFSET")?,
        )),
    }
}

/// `e` with each name that is no column of `scope` but an alias of `select`'s list replaced
/// by the aliased expression (QUALIFY may name the select list's windows, as DuckDB allows).
fn with_select_aliases(e: &sql::Expr, select: &sql::Select, scope: &Scope) -> sql::Expr {
    let mut e = e.clone();
    let _ = sql::visit_expressions_mut(&mut e, |x| {
        if let sql::Expr::Identifier(id) = x {
            if scope.resolve(std::slice::from_ref(id), id.span).is_err() {
                let aliased = select.projection.iter().find_map(|item| match item {
                    sql::SelectItem::ExprWithAlias { expr, alias }
                        if alias.value.eq_ignore_ascii_case(&id.value) =>
                    {
                        Some(expr.clone())
                    }
                    _ => None,
                });
                if let Some(a) = aliased {
                    *x = a;
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    e
}

/// The window scope of the SELECT being bound.
fn frame_windows<'b>(binder: &'b mut Binder<'_>) -> &'b mut WindowScope {
    binder
        .windows
        .last_mut()
        .expect("a SELECT pushed its window scope")
}

/// What in `select` (with the ORDER BY of `q`) makes its rows before a series in its select
/// list would expand them in PostgreSQL (grouping, aggregates, windows), which weir does not
/// do; `None` when nothing does.
fn grouped_or_windowed(select: &sql::Select, q: Option<&sql::Query>) -> Option<&'static str> {
    let grouped = match &select.group_by {
        sql::GroupByExpr::All(_) => true,
        sql::GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
    };
    if grouped {
        return Some("GROUP BY");
    }
    if select.having.is_some() {
        return Some("HAVING");
    }
    let items = select.projection.iter().filter_map(|item| match item {
        sql::SelectItem::UnnamedExpr(e) | sql::SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    });
    let order = q
        .and_then(|q| q.order_by.as_ref())
        .into_iter()
        .flat_map(|ob| match &ob.kind {
            sql::OrderByKind::Expressions(v) => v.iter().map(|o| &o.expr).collect(),
            sql::OrderByKind::All(_) => Vec::new(),
        });
    let exprs: Vec<&sql::Expr> = items.chain(order).collect();
    if exprs.iter().any(|e| contains_agg(e)) {
        return Some("an aggregate");
    }
    if exprs.iter().any(|e| contains_window(e)) || select.qualify.is_some() {
        return Some("a window function");
    }
    None
}

/// The one call of a table function in `select`'s list, a whole item (`SELECT
/// generate_series(1, 3)`, `SELECT id, string_to_table(tags, ',') FROM t`) or inside an
/// item's operators and function calls (`SELECT upper(string_to_table(tags, ','))`): the
/// call's expression and the call; `None` when there is none or more than one.
fn table_call_in_list(select: &sql::Select) -> Option<(&sql::Expr, TableCall<'_>)> {
    let mut found = Vec::new();
    for item in &select.projection {
        if let sql::SelectItem::UnnamedExpr(e) | sql::SelectItem::ExprWithAlias { expr: e, .. } =
            item
        {
            table_calls(e, &mut found);
        }
    }
    let [e] = found[..] else {
        return None;
    };
    let sql::Expr::Function(f) = e else {
        return None;
    };
    let sql::FunctionArguments::List(l) = &f.args else {
        return None;
    };
    Some((
        e,
        TableCall {
            name: table_function_name(&f.name)?,
            args: l.args.as_slice(),
            alias: None,
            ordinality: false,
        },
    ))
}

/// The calls of table functions in `e` that PostgreSQL expands its rows by: `e` itself, or
/// one inside its operators, casts and the arguments of its function calls (not inside a
/// subquery, which has a list of its own, nor a CASE or COALESCE, where PostgreSQL refuses
/// them: the binder says so there).
fn table_calls<'a>(e: &'a sql::Expr, found: &mut Vec<&'a sql::Expr>) {
    use sql::Expr as E;
    match e {
        E::Function(f) if f.over.is_none() && table_function_name(&f.name).is_some() => {
            found.push(e)
        }
        E::Function(f) => {
            if let sql::FunctionArguments::List(l) = &f.args {
                for arg in &l.args {
                    if let sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(x)) = arg {
                        table_calls(x, found);
                    }
                }
            }
        }
        E::BinaryOp { left, right, .. } => {
            table_calls(left, found);
            table_calls(right, found);
        }
        E::UnaryOp { expr, .. } | E::Nested(expr) | E::Cast { expr, .. } => {
            table_calls(expr, found)
        }
        _ => {}
    }
}
