//! Binding of whole queries: `SELECT` (FROM, WHERE, GROUP BY, the select list, HAVING, ORDER BY,
//! LIMIT/OFFSET/FETCH) and `VALUES` lists, on top of the expression binding in the parent module.

use super::*;

impl Binder<'_> {
    /// Binds a whole query.
    pub fn query(&mut self, q: &sql::Query, catalog: &Catalog) -> Result<BoundSelect, PlanError> {
        if let Some(with) = &q.with {
            return Err(unsupported("common table expressions (WITH)", with.span()));
        }
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
        let select = match q.body.as_ref() {
            sql::SetExpr::Select(s) => s,
            sql::SetExpr::SetOperation { op, .. } => {
                return Err(unsupported(format!("set operations ({op})"), q.body.span()))
            }
            sql::SetExpr::Values(v) => return self.values_query(v, q),
            sql::SetExpr::Query(_) => return Err(unsupported("subqueries", q.body.span())),
            _ => return Err(unsupported("this query form", q.body.span())),
        };
        let sspan = select.select_token.0.span;
        let distinct = match &select.distinct {
            None | Some(sql::Distinct::All) => false,
            Some(sql::Distinct::Distinct) => true,
            Some(sql::Distinct::On(_)) => return Err(unsupported("DISTINCT ON", sspan)),
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
        if let Some(q) = &select.qualify {
            return Err(unsupported("QUALIFY", q.span()));
        }
        if !select.named_window.is_empty() {
            return Err(unsupported("window functions", sspan));
        }

        // FROM
        let mut scope = Scope::default();
        let mut on_exprs: Vec<&sql::Expr> = Vec::new();
        for twj in &select.from {
            self.table_factor(&twj.relation, catalog, &mut scope)?;
            for j in &twj.joins {
                let jspan = j.relation.span();
                let c = match &j.join_operator {
                    sql::JoinOperator::Join(c) | sql::JoinOperator::Inner(c) => c,
                    sql::JoinOperator::Left(_) | sql::JoinOperator::LeftOuter(_) => {
                        return Err(unsupported("LEFT OUTER JOIN", jspan))
                    }
                    sql::JoinOperator::Right(_) | sql::JoinOperator::RightOuter(_) => {
                        return Err(unsupported("RIGHT OUTER JOIN", jspan))
                    }
                    sql::JoinOperator::FullOuter(_) => {
                        return Err(unsupported("FULL OUTER JOIN", jspan))
                    }
                    sql::JoinOperator::CrossJoin(_) => {
                        return Err(unsupported("CROSS JOIN", jspan))
                    }
                    _ => return Err(unsupported("this join type", jspan)),
                };
                match c {
                    sql::JoinConstraint::On(e) => on_exprs.push(e),
                    sql::JoinConstraint::Using(_) | sql::JoinConstraint::UsingAlias(..) => {
                        return Err(unsupported("JOIN ... USING", jspan))
                    }
                    sql::JoinConstraint::Natural => return Err(unsupported("NATURAL JOIN", jspan)),
                    sql::JoinConstraint::None => {
                        return Err(unsupported("JOIN without ON (cross join)", jspan))
                    }
                }
                self.table_factor(&j.relation, catalog, &mut scope)?;
            }
        }

        // WHERE and ON
        let mut preds = Vec::new();
        for e in on_exprs.iter().copied().chain(select.selection.as_ref()) {
            let b = self.expr(e, &scope, None)?;
            let p = self.boolean(b, e)?;
            conjuncts(p, &mut preds);
        }

        // GROUP BY
        let group_asts: Vec<&sql::Expr> = match &select.group_by {
            sql::GroupByExpr::All(_) => return Err(unsupported("GROUP BY ALL", sspan)),
            sql::GroupByExpr::Expressions(exprs, mods) => {
                if !mods.is_empty() {
                    return Err(unsupported("GROUP BY modifiers", sspan));
                }
                exprs.iter().collect()
            }
        };
        let order_exprs: Vec<&sql::OrderByExpr> = match &q.order_by {
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
        let is_agg = !group_asts.is_empty()
            || select.having.is_some()
            || select_asts.iter().flatten().any(|e| contains_agg(e))
            || order_exprs.iter().any(|o| contains_agg(&o.expr));
        if distinct && is_agg {
            return Err(unsupported(
                "SELECT DISTINCT with aggregates or GROUP BY",
                sspan,
            ));
        }

        let mut ctx = AggCtx::default();
        for g in &group_asts {
            let target = self.group_target(g, &scope, select)?;
            let b = self.expr(target, &scope, None)?;
            let t = self.settle(&b);
            let expr = self.coerce(b, t);
            ctx.groups.push(B::new(expr, Some(t)));
        }

        // SELECT list
        let mut outputs: Vec<B> = Vec::new();
        let mut visible: Vec<Field> = Vec::new();
        let mut aliases: Vec<Option<String>> = Vec::new();
        for item in &select.projection {
            match item {
                sql::SelectItem::UnnamedExpr(e)
                | sql::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let b = self.expr(e, &scope, is_agg.then_some(&mut ctx))?;
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
        let having = match &select.having {
            Some(h) => {
                let b = self.expr(h, &scope, Some(&mut ctx))?;
                Some(self.boolean(b, h)?)
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

        // SELECT DISTINCT: a hash aggregate grouping on every output column, no aggregates
        // (planned two-phase like any GROUP BY). ORDER BY positions stay valid because the
        // aggregate's output columns are the select list, in order.
        let is_agg = if distinct {
            ctx.groups = std::mem::take(&mut outputs);
            outputs = ctx
                .groups
                .iter()
                .enumerate()
                .map(|(i, g)| B::new(Expr::Column(i), g.ty))
                .collect();
            true
        } else {
            is_agg
        };

        let (mut limit, offset) = limit_offset(q.limit_clause.as_ref())?;
        if let Some(fetch) = &q.fetch {
            limit = Some(fetch_count(fetch, q, limit.is_some())?);
        }

        let agg = is_agg.then(|| AggPlan {
            group_types: ctx
                .groups
                .iter()
                .map(|g| g.ty.unwrap_or(DataType::Int64))
                .collect(),
            groups: ctx.groups.into_iter().map(|g| g.expr).collect(),
            aggs: ctx.aggs,
        });
        Ok(BoundSelect {
            scope,
            conjuncts: preds,
            agg,
            having,
            output_types: outputs
                .iter()
                .map(|b| b.ty.unwrap_or(DataType::Int64))
                .collect(),
            outputs: outputs.into_iter().map(|b| b.expr).collect(),
            visible,
            order,
            limit,
            offset,
            values: None,
        })
    }

    /// Binds `VALUES (...), (...)` as a query: constant rows with columns `column1`,
    /// `column2`, ... (types unified per column as in a comparison; INT with DOUBLE is DOUBLE),
    /// then ORDER BY (ordinals or column names), LIMIT/OFFSET/FETCH.
    fn values_query(&mut self, v: &sql::Values, q: &sql::Query) -> Result<BoundSelect, PlanError> {
        let span = q.body.span();
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
                    Some(a) if a == t => a,
                    Some(a) if a.is_numeric() && t.is_numeric() => DataType::Float64,
                    Some(a) => {
                        return Err(PlanError::Type(format!(
                            "VALUES column {} mixes {a} and {t} at '{e}'{}",
                            j + 1,
                            at(e.span())
                        )))
                    }
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
                let c =
                    weir_operators::eval::evaluate(&expr, &one_row, &[]).map_err(
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
        let mut outputs: Vec<B> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| B::new(Expr::Column(i), Some(f.data_type)))
            .collect();
        let aliases: Vec<Option<String>> = fields.iter().map(|f| Some(f.name.clone())).collect();
        let mut order = Vec::new();
        if let Some(ob) = &q.order_by {
            let sql::OrderByKind::Expressions(list) = &ob.kind else {
                return Err(unsupported("ORDER BY ALL", ob.span()));
            };
            for o in list {
                let (descending, nulls_first) = sort_options(o)?;
                if !matches!(o.expr, sql::Expr::Value(_) | sql::Expr::Identifier(_)) {
                    return Err(PlanError::Invalid(format!(
                        "ORDER BY over VALUES takes a column position or name (column1, ...){}",
                        at(o.expr.span())
                    )));
                }
                let mut ctx = AggCtx::default();
                let position = self.order_target(
                    &o.expr,
                    &scope,
                    false,
                    &mut ctx,
                    &mut outputs,
                    &aliases,
                    width,
                )?;
                if position >= width {
                    return Err(PlanError::Invalid(format!(
                        "ORDER BY over VALUES takes a column position or name (column1, ...){}",
                        at(o.expr.span())
                    )));
                }
                order.push(SortKey {
                    expr: Expr::Column(position),
                    descending,
                    nulls_first,
                });
            }
        }
        let (mut limit, offset) = limit_offset(q.limit_clause.as_ref())?;
        if let Some(fetch) = &q.fetch {
            limit = Some(fetch_count(fetch, q, limit.is_some())?);
        }
        Ok(BoundSelect {
            scope,
            conjuncts: vec![],
            agg: None,
            having: None,
            output_types: fields.iter().map(|f| f.data_type).collect(),
            outputs: outputs.into_iter().map(|b| b.expr).collect(),
            visible: fields.clone(),
            order,
            limit,
            offset,
            values: Some((fields, rows)),
        })
    }

    fn table_factor(
        &mut self,
        f: &sql::TableFactor,
        catalog: &Catalog,
        scope: &mut Scope,
    ) -> Result<(), PlanError> {
        match f {
            sql::TableFactor::Table {
                name, alias, args, ..
            } => {
                if args.is_some() {
                    return Err(unsupported("table functions", f.span()));
                }
                let tname = match name.0.last() {
                    Some(sql::ObjectNamePart::Identifier(id)) => id.value.clone(),
                    _ => return Err(unsupported("this table name", f.span())),
                };
                let def = catalog
                    .table(&tname)
                    .ok_or_else(|| PlanError::UnknownTable(tname.clone()))?
                    .clone();
                let alias_name = match alias {
                    Some(a) => {
                        if !a.columns.is_empty() {
                            return Err(unsupported("column aliases in FROM", f.span()));
                        }
                        a.name.value.to_lowercase()
                    }
                    None => tname.to_lowercase(),
                };
                scope.add(def, alias_name, f.span())
            }
            sql::TableFactor::Derived { .. } => Err(unsupported("subqueries in FROM", f.span())),
            sql::TableFactor::NestedJoin { .. } => {
                Err(unsupported("parenthesized joins", f.span()))
            }
            _ => Err(unsupported("this FROM item", f.span())),
        }
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
        for (i, f) in t.def.schema.fields.iter().enumerate() {
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

/// `(descending, nulls_first)` of an ORDER BY item (NULLs sort as the largest value).
fn sort_options(o: &sql::OrderByExpr) -> Result<(bool, bool), PlanError> {
    if o.with_fill.is_some() {
        return Err(unsupported("WITH FILL", o.expr.span()));
    }
    let descending = match &o.options.sort {
        None | Some(sql::OrderBySort::Asc) => false,
        Some(sql::OrderBySort::Desc) => true,
        Some(sql::OrderBySort::Using(_)) => {
            return Err(unsupported("ORDER BY ... USING", o.expr.span()))
        }
    };
    Ok((descending, o.options.nulls_first.unwrap_or(descending)))
}

/// The row count of `FETCH {FIRST|NEXT} [n] {ROW|ROWS} ONLY` (no count means one row).
fn fetch_count(f: &sql::Fetch, q: &sql::Query, has_limit: bool) -> Result<usize, PlanError> {
    let span = f.quantity.as_ref().map_or_else(|| q.span(), |e| e.span());
    if f.with_ties {
        return Err(unsupported("FETCH ... WITH TIES", span));
    }
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
