//! Binding of window function calls: `f(args) OVER (PARTITION BY .. ORDER BY .. frame)`,
//! `OVER w` and `OVER (w ORDER BY ..)` over the SELECT's `WINDOW` clause, each function's
//! arguments and result type, the frame (SQL's default, PostgreSQL's checks, offsets as
//! constants), and the placement of a SELECT's windows over its rows: one
//! [`LogicalPlan::Window`] per distinct partition and order, stacked.
//!
//! A call binds to a placeholder column ([`WINDOW_SLOT`]) that the placement resolves. Its
//! arguments and spec are bound over the rows the window reads: the SELECT's rows after
//! WHERE, or its groups after HAVING (so `SUM(COUNT(*)) OVER (...)` reads the groups'
//! counts).

use super::sort_options;
use super::window_scope::{contains_window, WindowCall, WINDOW_SLOT};
use super::*;
use weir_operators::plan::{
    FrameBound, FrameExclude, FrameUnits, WindowExpr, WindowFrame, WindowFunc,
};

/// A window spec with its references to the `WINDOW` clause resolved (the AST's parts).
struct Spec {
    partition_by: Vec<sql::Expr>,
    order_by: Vec<sql::OrderByExpr>,
    frame: Option<sql::WindowFrame>,
    /// Where the frame's EXCLUDE clause was recorded: the position of its window's owner
    /// (see [`crate::frame_exclude`]).
    owner: Option<(u64, u64)>,
}

/// The key under which an EXCLUDE clause of a window owned by `id` was recorded.
fn owner_key(id: &sql::Ident) -> (u64, u64) {
    (id.span.start.line, id.span.start.column)
}

/// The last identifier of a function's name.
fn last_ident(f: &sql::Function) -> Option<&sql::Ident> {
    match f.name.0.last()? {
        sql::ObjectNamePart::Identifier(id) => Some(id),
        _ => None,
    }
}

impl Binder<'_> {
    /// The text of window call `f` (`e`) as users see it: the parser's rendering, with the
    /// EXCLUDE clause the parser did not read put back into its frame.
    pub(super) fn window_text(&self, f: &sql::Function, e: &sql::Expr) -> String {
        let text = e.to_string();
        let framed =
            matches!(&f.over, Some(sql::WindowType::WindowSpec(ws)) if ws.window_frame.is_some());
        let exclude = last_ident(f)
            .filter(|_| framed)
            .and_then(|id| self.exclusions.get(&owner_key(id)));
        match (exclude, text.strip_suffix(')')) {
            (Some(x), Some(open)) if !x.sql().is_empty() => format!("{open} {})", x.sql()),
            _ => text,
        }
    }

    /// Binds a window function call `e` (`f` with `OVER`): checks that window functions may
    /// stand here, binds it, and returns its placeholder column.
    pub(super) fn window_call(
        &mut self,
        f: &sql::Function,
        e: &sql::Expr,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        let span = e.span();
        match self.windows.last() {
            None => {
                return Err(PlanError::Invalid(format!(
                    "window functions are not allowed here{}",
                    at(span)
                )))
            }
            Some(w) if w.nested => {
                return Err(PlanError::Invalid(format!(
                    "window function calls cannot be nested{}",
                    at(span)
                )))
            }
            Some(w) => {
                if let Some(clause) = w.refused {
                    return Err(PlanError::Invalid(format!(
                        "window functions are not allowed in {clause}{}",
                        at(span)
                    )));
                }
            }
        }
        if f.filter.is_some() {
            // An aggregate over its window's rows for which the condition holds.
            return match agg_func(f).and(super::agg_filter::without_filter(f)) {
                Some(plain) => self.window_call(&plain, e, scope, agg),
                None => Err(unsupported(
                    "FILTER in a window function that is not an aggregate",
                    span,
                )),
            };
        }
        if f.null_treatment.is_some() {
            return Err(unsupported("IGNORE NULLS and RESPECT NULLS", span));
        }
        if !f.within_group.is_empty() {
            return Err(unsupported("WITHIN GROUP", span));
        }
        if !matches!(f.parameters, sql::FunctionArguments::None) {
            return Err(unsupported("function parameters", span));
        }
        let over = f.over.as_ref().expect("a window call has OVER");
        let owner = last_ident(f).map(owner_key);
        let named = self.windows.last().map_or(0, |w| w.named.len());
        let spec = match over {
            sql::WindowType::NamedWindow(name) => self.named_window(name, named, span)?,
            sql::WindowType::WindowSpec(ws) => self.refine(ws, owner, named, span)?,
        };
        if let Some(w) = self.windows.last_mut() {
            w.nested = true;
        }
        let bound = self.bind_window(f, &spec, e, scope, agg);
        if let Some(w) = self.windows.last_mut() {
            w.nested = false;
        }
        let call = bound?;
        let ty = call.function.output_type;
        let calls = &mut self.windows.last_mut().expect("checked above").calls;
        let k = match calls.iter().position(|c| *c == call) {
            Some(k) => k,
            None => {
                calls.push(call);
                calls.len() - 1
            }
        };
        Ok(B::new(Expr::Column(WINDOW_SLOT + k), Some(ty)))
    }

    /// The definition of the named window `name` among the first `limit` of the `WINDOW`
    /// clause (a definition may refer to the ones before it).
    fn named_window(&self, name: &sql::Ident, limit: usize, span: Span) -> Result<Spec, PlanError> {
        let defs = self.windows.last().map_or(&[][..], |w| &w.named[..limit]);
        let Some(at_def) = defs
            .iter()
            .rposition(|d| d.0.value.eq_ignore_ascii_case(&name.value))
        else {
            return Err(PlanError::Invalid(format!(
                "window \"{}\" does not exist{}",
                name.value,
                at(span)
            )));
        };
        let def = defs[at_def].clone();
        match &def.1 {
            sql::NamedWindowExpr::NamedWindow(other) => self.named_window(other, at_def, span),
            sql::NamedWindowExpr::WindowSpec(ws) => {
                self.refine(ws, Some(owner_key(&def.0)), at_def, span)
            }
        }
    }

    /// `ws`, whose own frame's EXCLUDE belongs to `owner`, completed by the window it names
    /// (among the first `limit` definitions), as PostgreSQL allows: the named window's
    /// partition and order, to which `ws` may add an ORDER BY when it has none, and `ws`'s
    /// frame (a named window with a frame cannot be copied).
    fn refine(
        &self,
        ws: &sql::WindowSpec,
        owner: Option<(u64, u64)>,
        limit: usize,
        span: Span,
    ) -> Result<Spec, PlanError> {
        let own = Spec {
            partition_by: ws.partition_by.clone(),
            order_by: ws.order_by.clone(),
            frame: ws.window_frame.clone(),
            owner,
        };
        let Some(name) = &ws.window_name else {
            return Ok(own);
        };
        let base = self.named_window(name, limit, span)?;
        let refused = |what: String| Err(PlanError::Invalid(format!("{what}{}", at(span))));
        if !own.partition_by.is_empty() {
            return refused(format!(
                "cannot override PARTITION BY clause of window \"{}\"",
                name.value
            ));
        }
        if !own.order_by.is_empty() && !base.order_by.is_empty() {
            return refused(format!(
                "cannot override ORDER BY clause of window \"{}\"",
                name.value
            ));
        }
        if base.frame.is_some() {
            return refused(format!(
                "cannot copy window \"{}\" because it has a frame clause",
                name.value
            ));
        }
        Ok(Spec {
            partition_by: base.partition_by,
            order_by: if own.order_by.is_empty() {
                base.order_by
            } else {
                own.order_by
            },
            ..own
        })
    }

    /// An expression of a window bound over its rows, with a type (a bare NULL or an untyped
    /// parameter settles as [`Binder::settle`] says).
    fn window_operand(
        &mut self,
        e: &sql::Expr,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<(Expr, DataType), PlanError> {
        let b = self.expr(e, scope, agg)?;
        let t = self.settle(&b);
        Ok((typed(self, b, t), t))
    }

    /// The call `f` over the window `spec`.
    fn bind_window(
        &mut self,
        f: &sql::Function,
        spec: &Spec,
        e: &sql::Expr,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<WindowCall, PlanError> {
        let span = e.span();
        let mut partition_by = Vec::with_capacity(spec.partition_by.len());
        for p in &spec.partition_by {
            partition_by.push(self.window_operand(p, scope, agg.as_deref_mut())?.0);
        }
        let mut order_by = Vec::with_capacity(spec.order_by.len());
        let mut order_types = Vec::with_capacity(spec.order_by.len());
        for o in &spec.order_by {
            let (descending, nulls_first) = sort_options(o)?;
            let (expr, t) = self.window_operand(&o.expr, scope, agg.as_deref_mut())?;
            order_by.push(SortKey {
                expr,
                descending,
                nulls_first,
            });
            order_types.push(t);
        }
        let frame = self.frame(spec, &order_types, span)?;
        let (func, args, output_type) = self.window_function(f, e, scope, agg)?;
        let frame = if func.uses_frame() {
            frame
        } else {
            // The others read no frame: it was checked, and is dropped.
            WindowFrame::default()
        };
        Ok(WindowCall {
            partition_by,
            order_by,
            function: WindowExpr {
                func,
                args,
                output_type,
                frame,
            },
            name: self.window_text(f, e),
        })
    }

    /// The function of a window call: which one, its arguments (converted as it needs
    /// them) and its result type.
    fn window_function(
        &mut self,
        f: &sql::Function,
        e: &sql::Expr,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<(WindowFunc, Vec<Expr>, DataType), PlanError> {
        let span = e.span();
        let name = match f.name.0.as_slice() {
            [sql::ObjectNamePart::Identifier(id)] => id.value.to_uppercase(),
            _ => return Err(unsupported(format!("window function {}", f.name), span)),
        };
        let list = match &f.args {
            sql::FunctionArguments::None => None,
            sql::FunctionArguments::List(l) => Some(l),
            sql::FunctionArguments::Subquery(_) => {
                return Err(unsupported("a subquery as a function's arguments", span))
            }
        };
        if let Some(l) = list {
            if matches!(
                l.duplicate_treatment,
                Some(sql::DuplicateTreatment::Distinct)
            ) {
                return Err(unsupported("DISTINCT in a window function", span));
            }
            if !l.clauses.is_empty() {
                return Err(unsupported(
                    "clauses in a window function's arguments",
                    span,
                ));
            }
        }
        let raw: &[sql::FunctionArg] = list.map_or(&[], |l| &l.args);
        let wildcard = matches!(
            raw,
            [sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard)]
        );
        let mut asts = Vec::with_capacity(raw.len());
        for a in raw {
            match a {
                sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(x)) => asts.push(x),
                sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard) if name == "COUNT" => {}
                _ => return Err(unsupported(format!("this argument of {name}"), span)),
            }
        }
        let count = |lo: usize, hi: usize| -> Result<(), PlanError> {
            if (lo..=hi).contains(&asts.len()) && !(wildcard && name != "COUNT") {
                return Ok(());
            }
            let takes = match (lo, hi) {
                (0, 0) => "no arguments".to_string(),
                (l, h) if l == h => {
                    format!("exactly {l} argument{}", if l == 1 { "" } else { "s" })
                }
                (l, h) => format!("{l} to {h} arguments"),
            };
            Err(PlanError::Invalid(format!(
                "window function {name} takes {takes}, got {}{}",
                asts.len(),
                at(span)
            )))
        };
        let ranking = match name.as_str() {
            "ROW_NUMBER" => Some(WindowFunc::RowNumber),
            "RANK" => Some(WindowFunc::Rank),
            "DENSE_RANK" => Some(WindowFunc::DenseRank),
            "PERCENT_RANK" => Some(WindowFunc::PercentRank),
            "CUME_DIST" => Some(WindowFunc::CumeDist),
            _ => None,
        };
        if let Some(func) = ranking {
            count(0, 0)?;
            let t = match func {
                WindowFunc::PercentRank | WindowFunc::CumeDist => DataType::Float64,
                _ => DataType::Int64,
            };
            return Ok((func, vec![], t));
        }
        match name.as_str() {
            "NTILE" => {
                count(1, 1)?;
                let n = self.integer_arg(asts[0], "NTILE", scope, agg)?;
                Ok((WindowFunc::Ntile, vec![n], DataType::Int64))
            }
            "LAG" | "LEAD" => {
                count(1, 3)?;
                let value = self.expr(asts[0], scope, agg.as_deref_mut())?;
                let offset = match asts.get(1) {
                    Some(o) => self.integer_arg(o, &name, scope, agg.as_deref_mut())?,
                    None => Expr::lit(1),
                };
                let default = match asts.get(2) {
                    Some(d) => Some(self.expr(d, scope, agg)?),
                    None => None,
                };
                // The result is the type value and default meet at.
                let t = match (value.ty, default.as_ref().and_then(|d| d.ty)) {
                    (Some(a), Some(b)) => common_supertype(a, b).ok_or_else(|| {
                        PlanError::Type(format!(
                            "the default of {name} must be of its value's type: {a} and {b} in '{e}'"
                        ))
                    })?,
                    (Some(a), None) => a,
                    (None, _) => match &default {
                        Some(d) => self.settle(d),
                        None => self.settle(&value),
                    },
                };
                let value = typed(self, value, t);
                let default = match default {
                    Some(d) => typed(self, d, t),
                    None => null_of(t),
                };
                let func = if name == "LAG" {
                    WindowFunc::Lag
                } else {
                    WindowFunc::Lead
                };
                Ok((func, vec![value, offset, default], t))
            }
            "FIRST_VALUE" | "LAST_VALUE" => {
                count(1, 1)?;
                let (value, t) = self.window_operand(asts[0], scope, agg)?;
                let func = if name == "FIRST_VALUE" {
                    WindowFunc::FirstValue
                } else {
                    WindowFunc::LastValue
                };
                Ok((func, vec![value], t))
            }
            "NTH_VALUE" => {
                count(2, 2)?;
                let (value, t) = self.window_operand(asts[0], scope, agg.as_deref_mut())?;
                let n = self.integer_arg(asts[1], "NTH_VALUE", scope, agg)?;
                Ok((WindowFunc::NthValue, vec![value, n], t))
            }
            // The values as text joined by a text separator (GROUP_CONCAT's `,` by default).
            "STRING_AGG" | "GROUP_CONCAT" => {
                if name == "STRING_AGG" {
                    count(2, 2)?;
                } else {
                    count(1, 2)?;
                }
                let value = self.expr(asts[0], scope, agg.as_deref_mut())?;
                let value = match value.ty {
                    Some(t) if t != DataType::Utf8 => super::cast_expr(value.expr, DataType::Utf8),
                    _ => typed(self, value, DataType::Utf8),
                };
                let separator = match asts.get(1) {
                    Some(s) => {
                        let b = self.expr(s, scope, agg)?;
                        if b.ty.is_some_and(|t| t != DataType::Utf8) {
                            return Err(PlanError::Type(format!(
                                "{name} needs a text separator, got {} in '{e}'",
                                type_name(b.ty)
                            )));
                        }
                        typed(self, b, DataType::Utf8)
                    }
                    None => Expr::Literal(Value::from(",")),
                };
                let func = WindowFunc::Aggregate(AggFunc::StringAgg);
                Ok((func, vec![value, separator], DataType::Utf8))
            }
            // Every other aggregate but those that need a group's values all at once.
            other => {
                let func = match super::aggregate_named(other) {
                    Some(AggFunc::Count) if wildcard => AggFunc::CountStar,
                    Some(func) if !func.is_holistic() => func,
                    _ => {
                        return Err(PlanError::Invalid(format!(
                            "function {} is not a window function{}",
                            f.name,
                            at(span)
                        )))
                    }
                };
                if func == AggFunc::CountStar {
                    return Ok((WindowFunc::Aggregate(func), vec![], DataType::Int64));
                }
                count(1, 1)?;
                let b = self.expr(asts[0], scope, agg)?;
                let boolean = matches!(name.as_str(), "BOOL_AND" | "EVERY" | "BOOL_OR");
                if boolean && b.ty.is_some_and(|t| t != DataType::Boolean) {
                    return Err(PlanError::Type(format!(
                        "{name} needs a BOOLEAN argument, got {} in '{e}'",
                        type_name(b.ty)
                    )));
                }
                if (matches!(func, AggFunc::Sum | AggFunc::Avg | AggFunc::Total)
                    || func.is_moment())
                    && b.ty.is_some_and(|t| !t.is_numeric())
                {
                    return Err(PlanError::Type(format!(
                        "{name} needs a numeric argument, got {} in '{e}'",
                        type_name(b.ty)
                    )));
                }
                // TOTAL sums as DOUBLE, the variances take DOUBLEs.
                let floats = func == AggFunc::Total || func.is_moment();
                let (arg, t) = match (func, b.ty) {
                    (_, None) if floats => (typed(self, b, DataType::Float64), DataType::Float64),
                    (_, Some(from)) if floats && from != DataType::Float64 => (
                        super::cast_expr(b.expr, DataType::Float64),
                        DataType::Float64,
                    ),
                    _ => {
                        let t = self.settle(&b);
                        (typed(self, b, t), t)
                    }
                };
                let out = AggregateExpr {
                    func,
                    arg: None,
                    input_type: t,
                    param: None,
                    order_by: Vec::new(),
                }
                .output_type();
                Ok((WindowFunc::Aggregate(func), vec![arg], out))
            }
        }
    }

    /// An argument that must be an integer (a BIGINT).
    fn integer_arg(
        &mut self,
        e: &sql::Expr,
        what: &str,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<Expr, PlanError> {
        let b = self.expr(e, scope, agg)?;
        match b.ty {
            None | Some(DataType::Int64) => Ok(typed(self, b, DataType::Int64)),
            Some(t) => Err(PlanError::Type(format!(
                "{what} needs an integer here, got {t} in '{e}'"
            ))),
        }
    }

    /// The frame of `spec` (SQL's default without one), checked as PostgreSQL checks it;
    /// `order_types` are the types of its ORDER BY keys.
    fn frame(
        &mut self,
        spec: &Spec,
        order_types: &[DataType],
        span: Span,
    ) -> Result<WindowFrame, PlanError> {
        let Some(f) = &spec.frame else {
            return Ok(WindowFrame::default());
        };
        let invalid = |what: &str| Err(PlanError::Invalid(format!("{what}{}", at(span))));
        let units = match f.units {
            sql::WindowFrameUnits::Rows => FrameUnits::Rows,
            sql::WindowFrameUnits::Range => FrameUnits::Range,
            sql::WindowFrameUnits::Groups => FrameUnits::Groups,
        };
        let start = &f.start_bound;
        let end = f
            .end_bound
            .as_ref()
            .unwrap_or(&sql::WindowFrameBound::CurrentRow);
        use sql::WindowFrameBound as W;
        match (start, end) {
            (W::Following(None), _) => return invalid("frame start cannot be UNBOUNDED FOLLOWING"),
            (_, W::Preceding(None)) => return invalid("frame end cannot be UNBOUNDED PRECEDING"),
            (W::CurrentRow, W::Preceding(_)) => {
                return invalid("frame starting from current row cannot have preceding rows")
            }
            (W::Following(_), W::Preceding(_) | W::CurrentRow) => {
                return invalid("frame starting from following row cannot have preceding rows")
            }
            _ => {}
        }
        if units == FrameUnits::Groups && order_types.is_empty() {
            return invalid("GROUPS mode requires an ORDER BY clause");
        }
        let offsets = [start, end]
            .iter()
            .any(|b| matches!(b, W::Preceding(Some(_)) | W::Following(Some(_))));
        if units == FrameUnits::Range && offsets && order_types.len() != 1 {
            return invalid(
                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
            );
        }
        let key = order_types.first().copied();
        let mut bound = |b: &W, which: &str| -> Result<FrameBound, PlanError> {
            Ok(match b {
                W::CurrentRow => FrameBound::CurrentRow,
                W::Preceding(None) => FrameBound::UnboundedPreceding,
                W::Following(None) => FrameBound::UnboundedFollowing,
                W::Preceding(Some(n)) => {
                    FrameBound::Preceding(self.frame_offset(n, units, key, which)?)
                }
                W::Following(Some(n)) => {
                    FrameBound::Following(self.frame_offset(n, units, key, which)?)
                }
            })
        };
        let start = bound(start, "starting")?;
        let end = bound(end, "ending")?;
        let exclude = spec
            .owner
            .and_then(|k| self.exclusions.get(&k).copied())
            .unwrap_or(FrameExclude::NoOthers);
        Ok(WindowFrame {
            units,
            start,
            end,
            exclude,
        })
    }

    /// A frame offset: a constant (a literal or a parameter) that counts rows or groups (an
    /// integer), or for `RANGE` a distance in the ORDER BY key's units (a number, or an
    /// INTERVAL over a DATE or TIMESTAMP).
    fn frame_offset(
        &mut self,
        e: &sql::Expr,
        units: FrameUnits,
        key: Option<DataType>,
        which: &str,
    ) -> Result<Expr, PlanError> {
        let span = e.span();
        if let sql::Expr::Interval(iv) = e {
            return match (units, key) {
                (FrameUnits::Range, Some(t @ (DataType::Date | DataType::Timestamp))) => {
                    Ok(Expr::lit(super::datetime::interval_offset(iv, t)?))
                }
                _ => Err(PlanError::Invalid(format!(
                    "an INTERVAL frame offset needs RANGE over a DATE or TIMESTAMP ORDER BY column{}",
                    at(span)
                ))),
            };
        }
        if contains_subquery(e) || contains_window(e) {
            return Err(PlanError::Invalid(format!(
                "a frame offset must be a constant, got '{e}'{}",
                at(span)
            )));
        }
        let b = self
            .expr(e, &Scope::default(), None)
            .map_err(|err| match err {
                PlanError::UnknownColumn { .. } => PlanError::Invalid(format!(
                    "a frame offset must be a constant, got '{e}'{}",
                    at(span)
                )),
                other => other,
            })?;
        let negative = match &b.expr {
            Expr::Literal(Value::Int(n)) => *n < 0,
            Expr::Literal(Value::Float(f)) => *f < 0.0,
            Expr::Literal(Value::Decimal(d, _)) => *d < 0,
            Expr::Literal(Value::Null) => {
                return Err(PlanError::Invalid(format!(
                    "frame {which} offset must not be null{}",
                    at(span)
                )))
            }
            _ => false,
        };
        if negative {
            return Err(PlanError::Invalid(format!(
                "frame {which} offset must not be negative{}",
                at(span)
            )));
        }
        match (units, b.ty, key) {
            (FrameUnits::Rows | FrameUnits::Groups, None | Some(DataType::Int64), _) => {
                Ok(typed(self, b, DataType::Int64))
            }
            (FrameUnits::Rows | FrameUnits::Groups, Some(t), _) => Err(PlanError::Type(format!(
                "a {} offset must be an integer, got {t} in '{e}'",
                units.name()
            ))),
            (FrameUnits::Range, ty, Some(k)) if k.is_numeric() => match ty {
                None => Ok(typed(self, b, k)),
                Some(t) if t.is_numeric() => Ok(b.expr),
                Some(t) => Err(PlanError::Type(format!(
                    "a RANGE offset over a {k} ORDER BY column must be a number, got {t} in '{e}'"
                ))),
            },
            (FrameUnits::Range, _, Some(k)) if k.is_temporal() => Err(PlanError::Type(format!(
                "a RANGE offset over a {k} ORDER BY column is an INTERVAL, got '{e}'{}",
                at(span)
            ))),
            (FrameUnits::Range, _, k) => Err(PlanError::Type(format!(
                "RANGE with an offset needs a numeric, DATE or TIMESTAMP ORDER BY column, got {}{}",
                type_name(k),
                at(span)
            ))),
        }
    }

    /// The windows of a SELECT placed over its rows `plan`: one [`LogicalPlan::Window`] per
    /// distinct partition and order, in the order their first calls were met (those with a
    /// ROW_NUMBER last), each adding its functions' columns. Returns the plan and where each
    /// call's column is.
    pub(super) fn place_windows(
        plan: LogicalPlan,
        calls: Vec<WindowCall>,
    ) -> (LogicalPlan, Vec<usize>) {
        let mut positions = vec![0; calls.len()];
        let mut windows: Vec<(Vec<Expr>, Vec<SortKey>, Vec<usize>)> = Vec::new();
        for (k, c) in calls.iter().enumerate() {
            match windows
                .iter_mut()
                .find(|(p, o, _)| *p == c.partition_by && *o == c.order_by)
            {
                Some((_, _, members)) => members.push(k),
                None => windows.push((c.partition_by.clone(), c.order_by.clone(), vec![k])),
            }
        }
        // Windows that number rows go last, right under the filters of the SELECT (QUALIFY,
        // or a WHERE around a derived table), where a top-N over them can cut their rows.
        windows.sort_by_key(|(_, _, members)| {
            members
                .iter()
                .any(|&k| calls[k].function.func == WindowFunc::RowNumber)
        });
        let plan = windows
            .into_iter()
            .fold(plan, |input, (partition_by, order_by, members)| {
                let base = input.width();
                for (n, &k) in members.iter().enumerate() {
                    positions[k] = base + n;
                }
                LogicalPlan::Window {
                    input: Box::new(input),
                    partition_by,
                    order_by,
                    functions: members.iter().map(|&k| calls[k].function.clone()).collect(),
                    names: members.iter().map(|&k| calls[k].name.clone()).collect(),
                    keep: None,
                }
            });
        (plan, positions)
    }
}

/// `b` as an expression of type `t`: converted where the types allow, an untyped NULL cast
/// (so that its column has the type), an untyped parameter expected as `t`.
fn typed(binder: &mut Binder<'_>, b: B, t: DataType) -> Expr {
    match (&b.ty, &b.expr) {
        (None, Expr::Param(_)) => binder.coerce(b, t),
        (None, _) => cast_expr(b.expr, t),
        (Some(have), _) if *have != t => match binder.coerce(b.clone(), t) {
            e if e == b.expr => cast_expr(e, t),
            e => e,
        },
        _ => b.expr,
    }
}

/// A NULL of type `t`.
fn null_of(t: DataType) -> Expr {
    Expr::Cast {
        expr: Box::new(Expr::Literal(Value::Null)),
        to: t,
    }
}
