//! Binding of scalar SQL constructs beyond operators: `CASE`, function calls and the special
//! syntaxes that are functions underneath (`SUBSTRING(s FROM a FOR b)`, `TRIM(BOTH x FROM s)`,
//! `POSITION(a IN b)`, `OVERLAY(s PLACING r FROM a FOR b)`, `CEIL`/`FLOOR`, `||`).
//!
//! Argument counts and types are checked here, naming the function and its position, so the
//! evaluator only ever sees calls it can run. Types follow PostgreSQL: numeric functions keep
//! their argument's type (`power` and `sqrt` give DOUBLE), `mod` of two integers is an integer.

use super::{at, type_name, AggCtx, Binder, Scope, B};
use crate::error::PlanError;
use sqlparser::ast::{self as sql, Spanned};
use weir_operators::{DataType, Expr, ScalarFunc, Value};

/// What kind of argument a function takes at a position.
#[derive(Clone, Copy)]
enum Arg {
    /// Any numeric type.
    Numeric,
    /// BIGINT (integer literals and columns).
    Integer,
    /// DOUBLE (integers are widened).
    Double,
    /// VARCHAR.
    Text,
    /// Anything, converted to VARCHAR.
    AnyAsText,
}

impl Arg {
    fn describe(self) -> &'static str {
        match self {
            Arg::Numeric | Arg::Double => "a numeric",
            Arg::Integer => "an integer",
            Arg::Text => "a VARCHAR",
            Arg::AnyAsText => "any",
        }
    }
}

/// Accepted argument counts of a function, and the kind of each argument.
fn signature(func: ScalarFunc) -> (usize, usize, &'static [Arg]) {
    use ScalarFunc as F;
    match func {
        F::Abs | F::Floor | F::Ceil | F::Sign => (1, 1, &[Arg::Numeric]),
        F::Round | F::Trunc => (1, 2, &[Arg::Numeric, Arg::Integer]),
        F::Mod => (2, 2, &[Arg::Numeric, Arg::Numeric]),
        F::Power => (2, 2, &[Arg::Double, Arg::Double]),
        F::Sqrt => (1, 1, &[Arg::Double]),
        F::Math(m) => {
            let (fewest, most) = m.arity();
            (fewest, most, &[Arg::Double])
        }
        F::MakeDate => (3, 3, &[Arg::Integer]),
        F::MakeTimestamp => (
            6,
            6,
            &[
                Arg::Integer,
                Arg::Integer,
                Arg::Integer,
                Arg::Integer,
                Arg::Integer,
                Arg::Double,
            ],
        ),
        F::ToTimestamp => (1, 1, &[Arg::Double]),
        F::ToDate | F::ToTimestampText => (2, 2, &[Arg::Text, Arg::Text]),
        // Bound in `special_calls` (the template must be a constant).
        F::ToNumber(_) => (2, 2, &[Arg::Text, Arg::Text]),
        // The template, then values of any type as text.
        F::Format => (1, usize::MAX, &[Arg::Text, Arg::AnyAsText]),
        F::QuoteIdent => (1, 1, &[Arg::Text]),
        F::QuoteLiteral | F::QuoteNullable => (1, 1, &[Arg::AnyAsText]),
        F::Gcd | F::Lcm => (2, 2, &[Arg::Integer, Arg::Integer]),
        F::ToHex => (1, 1, &[Arg::Integer]),
        F::Overlay => (3, 4, &[Arg::Text, Arg::Text, Arg::Integer, Arg::Integer]),
        // Bound in `special_calls`.
        F::WidthBucket => (4, 4, &[]),
        F::NumNulls | F::NumNonNulls => (1, usize::MAX, &[]),
        F::Ascii | F::OctetLength => (1, 1, &[Arg::Text]),
        F::Chr => (1, 1, &[Arg::Integer]),
        F::Translate => (3, 3, &[Arg::Text, Arg::Text, Arg::Text]),
        F::RegexpLike => (2, 3, &[Arg::Text, Arg::Text, Arg::Text]),
        F::RegexpReplace => (3, 4, &[Arg::Text, Arg::Text, Arg::Text, Arg::Text]),
        F::SimilarToEscape => (1, 2, &[Arg::Text, Arg::Text]),
        F::RegexpSubstring => (2, 2, &[Arg::Text, Arg::Text]),
        F::RegexpCount => (2, 4, &[Arg::Text, Arg::Text, Arg::Integer, Arg::Text]),
        F::RegexpSubstr => (
            2,
            6,
            &[
                Arg::Text,
                Arg::Text,
                Arg::Integer,
                Arg::Integer,
                Arg::Text,
                Arg::Integer,
            ],
        ),
        F::RegexpInstr => (
            2,
            7,
            &[
                Arg::Text,
                Arg::Text,
                Arg::Integer,
                Arg::Integer,
                Arg::Integer,
                Arg::Text,
                Arg::Integer,
            ],
        ),
        F::Lower | F::Upper | F::Length => (1, 1, &[Arg::Text]),
        F::Substring => (2, 3, &[Arg::Text, Arg::Integer, Arg::Integer]),
        F::Trim | F::LTrim | F::RTrim => (1, 2, &[Arg::Text, Arg::Text]),
        F::Replace => (3, 3, &[Arg::Text, Arg::Text, Arg::Text]),
        F::StrPos | F::StartsWith => (2, 2, &[Arg::Text, Arg::Text]),
        F::ConcatOp => (2, 2, &[Arg::AnyAsText, Arg::AnyAsText]),
        F::Concat => (1, usize::MAX, &[Arg::AnyAsText]),
        // Unified across arguments, checked separately.
        F::Coalesce => (1, usize::MAX, &[]),
        F::NullIf => (2, 2, &[]),
        // Checked by `date_part_args`.
        F::Extract | F::DateTrunc => (2, 2, &[]),
        // Bound from EXTRACT, through `date_part_args`.
        F::ExtractSeconds | F::ExtractMilliseconds => (2, 2, &[]),
        F::AddInterval => (4, 4, &[]),
        F::TooManyRows => (1, 1, &[]),
        F::Repeat => (2, 2, &[Arg::Text, Arg::Integer]),
        F::LPad | F::RPad => (2, 3, &[Arg::Text, Arg::Integer, Arg::Text]),
        F::BitAnd | F::BitOr | F::ShiftLeft | F::ShiftRight => {
            (2, 2, &[Arg::Integer, Arg::Integer])
        }
        F::BitNot => (1, 1, &[Arg::Integer]),
        F::Left | F::Right => (2, 2, &[Arg::Text, Arg::Integer]),
        F::SplitPart => (3, 3, &[Arg::Text, Arg::Text, Arg::Integer]),
        F::InitCap | F::Reverse | F::Md5 => (1, 1, &[Arg::Text]),
        F::Random | F::ClockTimestamp => (0, 0, &[]),
        // A DATE or TIMESTAMP, then the template (checked in `format_call_args`).
        F::ToChar => (2, 2, &[]),
        // The separator, then values of any type as text.
        F::ConcatWs => (2, usize::MAX, &[Arg::Text, Arg::AnyAsText]),
        // Unified across arguments, as `coalesce`.
        F::Greatest | F::Least => (1, usize::MAX, &[]),
    }
}

impl Binder<'_> {
    /// `b` as an expression of type `t`: numeric widening as [`Binder::coerce`], and an
    /// untyped NULL made a NULL of type `t`.
    pub(super) fn typed(&mut self, b: B, t: DataType) -> Expr {
        if b.ty.is_none() && matches!(b.expr, Expr::Literal(Value::Null)) {
            return Expr::Cast {
                expr: Box::new(b.expr),
                to: t,
            };
        }
        self.coerce(b, t)
    }

    /// Unifies the types of `args` for `what` (numeric types widen BIGINT → DECIMAL →
    /// DOUBLE, DATE to TIMESTAMP).
    pub(super) fn common_type(
        &self,
        args: &[B],
        what: &str,
        e: &sql::Expr,
    ) -> Result<Option<DataType>, PlanError> {
        let mut acc: Option<DataType> = None;
        for (i, b) in args.iter().enumerate() {
            let Some(t) = b.ty else { continue };
            acc = Some(match acc.map(|a| (a, super::common_supertype(a, t))) {
                None => t,
                Some((_, Some(u))) => u,
                Some((a, None)) => {
                    return Err(PlanError::Type(format!(
                        "{what}: argument {} is {t}, earlier ones are {a}, in '{e}'{}",
                        i + 1,
                        at(e.span())
                    )))
                }
            });
        }
        Ok(acc)
    }

    /// `NULLIF(a, b)` as PostgreSQL types it: of `a`'s type (NULL where `a = b`, compared in
    /// the type both meet at, else `a` as it is), so `NULLIF(73, 2.5) / 2` divides integers.
    /// An untyped NULL `a` takes `b`'s type.
    fn nullif(&mut self, args: Vec<B>, e: &sql::Expr) -> Result<B, PlanError> {
        let t = self.common_type(&args, "function nullif", e)?;
        let t = t.unwrap_or(DataType::Int64);
        let [a, b] = <[B; 2]>::try_from(args).map_err(|_| {
            PlanError::Invalid(format!("function nullif takes 2 arguments{}", at(e.span())))
        })?;
        let out = a.ty.unwrap_or(t);
        if out == t {
            let exprs = vec![self.typed(a, t), self.typed(b, t)];
            return Ok(B::new(
                Expr::Function {
                    func: ScalarFunc::NullIf,
                    args: exprs,
                },
                Some(t),
            ));
        }
        let value = a.expr.clone();
        let equal = self.typed(a, t).eq(self.typed(b, t));
        Ok(B::new(
            Expr::Case {
                operand: None,
                branches: vec![(
                    equal,
                    Expr::Cast {
                        expr: Box::new(Expr::Literal(Value::Null)),
                        to: out,
                    },
                )],
                else_result: Some(Box::new(value)),
            },
            Some(out),
        ))
    }

    /// Type-checks a call of `func` on bound arguments, converting them as it needs.
    pub(super) fn call(
        &mut self,
        func: ScalarFunc,
        name: &str,
        args: Vec<B>,
        e: &sql::Expr,
    ) -> Result<B, PlanError> {
        use ScalarFunc as F;
        let (min, max, kinds) = signature(func);
        if args.len() < min || args.len() > max {
            let expected = match (min, max) {
                (a, b) if a == b => format!("{a}"),
                (a, usize::MAX) => format!("at least {a}"),
                (a, b) => format!("{a} to {b}"),
            };
            return Err(PlanError::Invalid(format!(
                "function {name} takes {expected} argument{}, got {}{}",
                if max == 1 { "" } else { "s" },
                args.len(),
                at(e.span())
            )));
        }
        if matches!(func, F::Extract | F::DateTrunc) {
            let (func, exprs, out) = self.date_part_args(func, name, args, e)?;
            let call = Expr::Function { func, args: exprs };
            let exact = matches!(func, F::ExtractSeconds | F::ExtractMilliseconds);
            if exact && !name.eq_ignore_ascii_case("extract") {
                // `date_part` answers DOUBLE, as PostgreSQL's does; EXTRACT the exact value.
                let to = DataType::Float64;
                let cast = Expr::Cast {
                    expr: Box::new(call),
                    to,
                };
                return Ok(B::new(cast, Some(to)));
            }
            return Ok(B::new(call, Some(out)));
        }
        if func == F::AddInterval {
            return Err(super::unsupported(format!("function {name}"), e.span()));
        }
        if func.is_volatile() {
            self.calls_volatile = true;
        }
        if func == F::ToChar {
            let exprs = self.format_call_args(args, e)?;
            return Ok(B::new(
                Expr::Function { func, args: exprs },
                Some(DataType::Utf8),
            ));
        }
        if let Some(b) = self.decimal_call(func, name, &args, e)? {
            return Ok(b);
        }
        if func == F::NullIf {
            return self.nullif(args, e);
        }
        if func == F::WidthBucket {
            return self.width_bucket(args, e);
        }
        if let F::ToNumber(_) = func {
            return self.bind_to_number(args, e);
        }
        if matches!(func, F::NumNulls | F::NumNonNulls) {
            return Ok(Self::count_nulls(func, args));
        }
        if matches!(func, F::Coalesce | F::Greatest | F::Least) {
            let t = self.common_type(&args, &format!("function {name}"), e)?;
            let t = t.unwrap_or(DataType::Int64);
            let exprs = args.into_iter().map(|b| self.typed(b, t)).collect();
            return Ok(B::new(Expr::Function { func, args: exprs }, Some(t)));
        }
        let int_inputs = args
            .iter()
            .zip(
                kinds
                    .iter()
                    .chain(std::iter::repeat(kinds.last().unwrap_or(&Arg::Text))),
            )
            .filter(|(_, k)| matches!(k, Arg::Numeric))
            .all(|(b, _)| b.ty != Some(DataType::Float64));
        let mut exprs = Vec::with_capacity(args.len());
        // The types the arguments are bound at, from which the call's type is read.
        let mut types = Vec::with_capacity(args.len());
        for (i, b) in args.into_iter().enumerate() {
            let kind = kinds.get(i).or(kinds.last()).copied().unwrap_or(Arg::Text);
            let bad = |b: &B| {
                PlanError::Type(format!(
                    "function {name} needs {} argument {}, got {} in '{e}'{}",
                    kind.describe(),
                    i + 1,
                    type_name(b.ty),
                    at(e.span())
                ))
            };
            let t = match kind {
                Arg::Numeric => {
                    if b.ty.is_some_and(|t| !t.is_numeric()) {
                        return Err(bad(&b));
                    }
                    if int_inputs {
                        DataType::Int64
                    } else {
                        DataType::Float64
                    }
                }
                Arg::Integer => {
                    if b.ty.is_some_and(|t| t != DataType::Int64) {
                        return Err(bad(&b));
                    }
                    DataType::Int64
                }
                Arg::Double => {
                    if b.ty.is_some_and(|t| !t.is_numeric()) {
                        return Err(bad(&b));
                    }
                    DataType::Float64
                }
                Arg::Text => {
                    if b.ty.is_some_and(|t| t != DataType::Utf8) {
                        return Err(bad(&b));
                    }
                    DataType::Utf8
                }
                Arg::AnyAsText => DataType::Utf8,
            };
            let x = match (kind, b.ty) {
                (Arg::AnyAsText, Some(DataType::Utf8)) => b.expr,
                (Arg::AnyAsText, Some(_)) => Expr::Cast {
                    expr: Box::new(b.expr),
                    to: DataType::Utf8,
                },
                _ => self.typed(b, t),
            };
            exprs.push(x);
            types.push(Some(t));
        }
        let out = func.result_type(&types);
        Ok(B::new(Expr::Function { func, args: exprs }, Some(out)))
    }

    /// Binds a numeric function whose first argument is a DECIMAL (and whose others are not
    /// DOUBLE): `abs`, `sign`, `floor`, `ceil` and `round` keep exact decimals (`round(x, n)`
    /// with a constant `n >= 0` gives scale `n`, as PostgreSQL; `floor`, `ceil` and `round(x)`
    /// scale 0), `mod` works at the larger scale. `None` for any other call.
    fn decimal_call(
        &mut self,
        func: ScalarFunc,
        name: &str,
        args: &[B],
        e: &sql::Expr,
    ) -> Result<Option<B>, PlanError> {
        use ScalarFunc as F;
        let Some(DataType::Decimal { precision, scale }) = args.first().and_then(|b| b.ty) else {
            return Ok(None);
        };
        if !matches!(
            func,
            F::Abs | F::Sign | F::Floor | F::Ceil | F::Round | F::Trunc | F::Mod
        ) {
            return Ok(None);
        }
        if args.iter().any(|b| b.ty == Some(DataType::Float64)) {
            return Ok(None);
        }
        let x = args[0].clone();
        let out = match func {
            F::Floor | F::Ceil => DataType::decimal(precision, 0),
            F::Trunc if args.len() == 1 => DataType::decimal(precision, 0),
            F::Round if args.len() == 1 => {
                let to = DataType::decimal(precision.saturating_sub(scale).saturating_add(1), 0);
                return Ok(Some(B::new(super::cast_expr(x.expr, to), Some(to))));
            }
            F::Round => match &args[1].expr {
                Expr::Literal(Value::Int(n)) if (0..=38).contains(n) => {
                    // Rounding to n digits is a cast to scale n (half away from zero).
                    let n = *n as u8;
                    let int_digits = precision.saturating_sub(scale).saturating_add(1);
                    let to = DataType::decimal(int_digits.saturating_add(n), n);
                    return Ok(Some(B::new(super::cast_expr(x.expr, to), Some(to))));
                }
                _ => {
                    if args[1].ty.is_some_and(|t| t != DataType::Int64) {
                        return Err(PlanError::Type(format!(
                            "function {name} needs an integer argument 2, got {} in '{e}'{}",
                            type_name(args[1].ty),
                            at(e.span())
                        )));
                    }
                    DataType::decimal(precision, scale)
                }
            },
            F::Mod => {
                let Some(other) = args.get(1).and_then(|b| b.ty) else {
                    return Ok(None);
                };
                match DataType::numeric_union(DataType::decimal(precision, scale), other) {
                    Some(u @ DataType::Decimal { .. }) => u,
                    _ => return Ok(None),
                }
            }
            _ => DataType::decimal(precision, scale),
        };
        let (min, max, _) = signature(func);
        if args.len() < min || args.len() > max {
            return Ok(None);
        }
        let exprs = match func {
            F::Mod => args.iter().map(|b| self.typed(b.clone(), out)).collect(),
            F::Round => vec![x.expr, self.typed(args[1].clone(), DataType::Int64)],
            F::Trunc if args.len() == 2 => {
                if args[1].ty.is_some_and(|t| t != DataType::Int64) {
                    return Err(PlanError::Type(format!(
                        "function {name} needs an integer argument 2, got {} in '{e}'{}",
                        type_name(args[1].ty),
                        at(e.span())
                    )));
                }
                vec![x.expr, self.typed(args[1].clone(), DataType::Int64)]
            }
            _ => vec![x.expr],
        };
        Ok(Some(B::new(
            Expr::Function { func, args: exprs },
            Some(out),
        )))
    }

    /// Binds the arguments of a plain function call.
    fn call_args(
        &mut self,
        f: &sql::Function,
        name: &str,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
        lenient: bool,
    ) -> Result<Vec<B>, PlanError> {
        let span = f.name.span();
        if f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
            return Err(super::unsupported(
                format!("clauses of function {name}"),
                span,
            ));
        }
        let list = match &f.args {
            sql::FunctionArguments::List(l) => l,
            sql::FunctionArguments::None => return Ok(Vec::new()),
            sql::FunctionArguments::Subquery(_) => {
                return Err(super::unsupported("subqueries", span))
            }
        };
        if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
            return Err(super::unsupported(
                format!("clauses of function {name}"),
                span,
            ));
        }
        let mut out: Vec<B> = Vec::with_capacity(list.args.len());
        for (i, a) in list.args.iter().enumerate() {
            match a {
                sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(x)) => {
                    let b = self.expr(x, scope, agg.as_deref_mut());
                    // After a first argument that is never NULL, the others of COALESCE are
                    // never read: one that names a column the query does not group by is
                    // left out (see `function`).
                    let unread = lenient && out.first().and_then(non_null_constant).is_some();
                    match b {
                        Err(PlanError::Invalid(m)) if unread && m.contains(NOT_GROUPED) => {}
                        b => out.push(b?),
                    }
                }
                _ => {
                    return Err(super::unsupported(
                        format!("argument {} of function {name}", i + 1),
                        span,
                    ))
                }
            }
        }
        Ok(out)
    }

    /// Binds a call of a scalar function by name.
    pub(super) fn function(
        &mut self,
        f: &sql::Function,
        e: &sql::Expr,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        // `pg_catalog.lower(x)` is `lower(x)`, as `pg_dump` and drivers write calls.
        let name = f.name.to_string().to_lowercase();
        let name = name
            .strip_prefix("pg_catalog.")
            .unwrap_or(&name)
            .to_string();
        if let Some(clock) = self.clock_function(f, &name, e)? {
            return Ok(clock);
        }
        if name == "pg_typeof" {
            let args = self.call_args(f, &name, scope, agg, false)?;
            return Self::type_of(args, e);
        }
        let Some(func) = ScalarFunc::from_name(&name).filter(|f| *f != ScalarFunc::ConcatOp) else {
            if super::table_functions::is_table_function(&name) {
                if let Some((call, column)) = &self.select_table_call {
                    if *call == e.to_string() {
                        // The call this SELECT's rows were expanded by: its column.
                        let ty = scope.types.get(*column).copied();
                        return Ok(B::new(Expr::Column(*column), ty));
                    }
                }
                return Err(super::unsupported(
                    format!(
                        "{name} here (a set-returning function: write it in FROM, as in \
                         SELECT ... FROM t, {name}(...) AS g, or once in a select list, \
                         outside aggregates, CASE and COALESCE, and as a whole item there \
                         in a grouped or windowed query)"
                    ),
                    e.span(),
                ));
            }
            let last = f.name.0.last().map(|p| p.to_string().to_lowercase());
            if let Some(call) = last.filter(|n| crate::sequences::is_sequence_function(n)) {
                return Err(crate::sequences::misplaced_call(&call, e.span()));
            }
            return Err(super::unsupported(format!("function {}", f.name), e.span()));
        };
        let coalesce = func == ScalarFunc::Coalesce;
        let args = self.call_args(f, &name, scope, agg, coalesce)?;
        // `to_timestamp(text, template)` reads text; `to_timestamp(seconds)` counts seconds.
        let func = match func {
            ScalarFunc::ToTimestamp if args.len() == 2 => ScalarFunc::ToTimestampText,
            other => other,
        };
        // `COALESCE(c, ...)` of a constant `c` that is not NULL is `c`, of its own type, as
        // SQLite has it (PostgreSQL gives it the type all the arguments meet at): the
        // arguments must still meet at a type.
        if let Some(c) = args
            .first()
            .and_then(non_null_constant)
            .filter(|_| coalesce)
        {
            self.call(func, &name, args, e)?;
            return Ok(c);
        }
        self.call(func, &name, args, e)
    }

    /// The functions of the statement's time: `now()`, `CURRENT_TIMESTAMP`,
    /// `LOCALTIMESTAMP`, `transaction_timestamp()`, `statement_timestamp()` (a TIMESTAMP)
    /// and `CURRENT_DATE` (a DATE), all the statement's one time; `None` for any other
    /// function.
    fn clock_function(
        &mut self,
        f: &sql::Function,
        name: &str,
        e: &sql::Expr,
    ) -> Result<Option<B>, PlanError> {
        let date = match name {
            "now"
            | "current_timestamp"
            | "localtimestamp"
            | "transaction_timestamp"
            | "statement_timestamp" => false,
            "current_date" => true,
            _ => return Ok(None),
        };
        let no_args = match &f.args {
            sql::FunctionArguments::None => true,
            sql::FunctionArguments::List(l) => l.args.is_empty(),
            sql::FunctionArguments::Subquery(_) => false,
        };
        if !no_args {
            return Err(super::unsupported(
                format!("arguments of {} (a precision)", f.name),
                e.span(),
            ));
        }
        let now = self.statement_time();
        Ok(Some(if date {
            let day = now.div_euclid(weir_operators::temporal::MICROS_PER_DAY) as i32;
            B::new(Expr::Literal(Value::Date(day)), Some(DataType::Date))
        } else {
            B::new(
                Expr::Literal(Value::Timestamp(now)),
                Some(DataType::Timestamp),
            )
        }))
    }

    /// Binds the special syntaxes that are functions underneath.
    pub(super) fn special(
        &mut self,
        e: &sql::Expr,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        use sql::Expr as E;
        let mut bind = |x: &sql::Expr, this: &mut Self| this.expr(x, scope, agg.as_deref_mut());
        match e {
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![bind(expr, self)?];
                match substring_from {
                    Some(x) => args.push(bind(x, self)?),
                    // `SUBSTRING(s FOR n)` starts at 1; `substring(s)` alone is an arity error.
                    None if substring_for.is_some() => {
                        args.push(B::new(Expr::Literal(Value::Int(1)), Some(DataType::Int64)))
                    }
                    None => {}
                }
                if let Some(x) = substring_for {
                    args.push(bind(x, self)?);
                }
                // A text FROM is a pattern, as PostgreSQL reads it: a regular expression, or
                // with a text FOR (the escape) SIMILAR TO's.
                let text = |b: &B| b.ty == Some(DataType::Utf8);
                if args.get(1).is_some_and(text) && args.iter().skip(2).all(text) {
                    let mut args = args.into_iter();
                    let (s, pattern) = (args.next().expect("two"), args.next().expect("two"));
                    let pattern = match args.next() {
                        Some(escape) => self.call(
                            ScalarFunc::SimilarToEscape,
                            "substring",
                            vec![pattern, escape],
                            e,
                        )?,
                        None => pattern,
                    };
                    return self.call(
                        ScalarFunc::RegexpSubstring,
                        "substring",
                        vec![s, pattern],
                        e,
                    );
                }
                self.call(ScalarFunc::Substring, "substring", args, e)
            }
            E::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters,
            } => {
                let (func, name) = match trim_where {
                    Some(sql::TrimWhereField::Leading) => (ScalarFunc::LTrim, "ltrim"),
                    Some(sql::TrimWhereField::Trailing) => (ScalarFunc::RTrim, "rtrim"),
                    _ => (ScalarFunc::Trim, "trim"),
                };
                let mut args = vec![bind(expr, self)?];
                if let Some(w) = trim_what {
                    args.push(bind(w, self)?);
                }
                for c in trim_characters.iter().flatten() {
                    args.push(bind(c, self)?);
                }
                self.call(func, name, args, e)
            }
            E::Position { expr, r#in } => {
                let sub = bind(expr, self)?;
                let text = bind(r#in, self)?;
                self.call(ScalarFunc::StrPos, "position", vec![text, sub], e)
            }
            E::Overlay {
                expr,
                overlay_what,
                overlay_from,
                overlay_for,
            } => {
                let mut args = vec![bind(expr, self)?, bind(overlay_what, self)?];
                args.push(bind(overlay_from, self)?);
                if let Some(x) = overlay_for {
                    args.push(bind(x, self)?);
                }
                self.call(ScalarFunc::Overlay, "overlay", args, e)
            }
            E::Ceil { expr, field } | E::Floor { expr, field } => {
                let (func, name) = if matches!(e, E::Ceil { .. }) {
                    (ScalarFunc::Ceil, "ceil")
                } else {
                    (ScalarFunc::Floor, "floor")
                };
                if !matches!(
                    field,
                    sql::CeilFloorKind::DateTimeField(sql::DateTimeField::NoDateTime)
                ) {
                    return Err(super::unsupported(format!("{name} with a scale"), e.span()));
                }
                let x = bind(expr, self)?;
                self.call(func, name, vec![x], e)
            }
            _ => Err(super::unsupported(format!("expression '{e}'"), e.span())),
        }
    }

    /// Binds `CASE [operand] WHEN ... THEN ... [ELSE ...] END`.
    pub(super) fn case(
        &mut self,
        e: &sql::Expr,
        operand: Option<&sql::Expr>,
        conditions: &[sql::CaseWhen],
        else_result: Option<&sql::Expr>,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<B, PlanError> {
        let op = match operand {
            Some(o) => Some(self.expr(o, scope, agg.as_deref_mut())?),
            None => None,
        };
        let mut whens = Vec::with_capacity(conditions.len());
        let mut thens = Vec::with_capacity(conditions.len() + 1);
        for c in conditions {
            whens.push(self.expr(&c.condition, scope, agg.as_deref_mut())?);
            thens.push(self.expr(&c.result, scope, agg.as_deref_mut())?);
        }
        let has_else = else_result.is_some();
        if let Some(x) = else_result {
            thens.push(self.expr(x, scope, agg)?);
        }
        // Results share one type; so do the operand and the WHEN values of a simple CASE.
        let t = self.common_type(&thens, "CASE results", e)?;
        let t = t.unwrap_or(DataType::Int64);
        let mut results: Vec<Expr> = thens.into_iter().map(|b| self.typed(b, t)).collect();
        let else_expr = if has_else { results.pop() } else { None };
        let (operand, whens) = match op {
            Some(o) => {
                let mut all = vec![o];
                all.extend(whens);
                let wt = self.unify(&all.iter().map(|b| b.ty).collect::<Vec<_>>(), e)?;
                let mut exprs: Vec<Expr> = match wt {
                    Some(wt) => all.into_iter().map(|b| self.coerce(b, wt)).collect(),
                    None => all.into_iter().map(|b| b.expr).collect(),
                };
                let o = exprs.remove(0);
                (Some(Box::new(o)), exprs)
            }
            None => {
                let mut out = Vec::with_capacity(whens.len());
                for w in whens {
                    out.push(self.boolean(w, e)?);
                }
                (None, out)
            }
        };
        Ok(B::new(
            Expr::Case {
                operand,
                branches: whens.into_iter().zip(results).collect(),
                else_result: else_expr.map(Box::new),
            },
            Some(t),
        ))
    }
}

/// The start of the error for a column that an aggregating query reads outside an aggregate
/// without grouping by it.
pub(super) const NOT_GROUPED: &str = "must appear in the GROUP BY clause";

/// `b` as a literal, when it is a constant (`- + 60` too) that is not NULL.
fn non_null_constant(b: &B) -> Option<B> {
    let constant = !b.expr.any(&|x| {
        matches!(
            x,
            Expr::Column(_) | Expr::OuterColumn(_) | Expr::Param(_) | Expr::Function { .. }
        )
    });
    if !constant {
        return None;
    }
    match crate::optimizer::simplify::fold(&b.expr) {
        Expr::Literal(v) if !v.is_null() => Some(B::new(Expr::Literal(v), b.ty)),
        _ => None,
    }
}
