//! The SQL of sequences: `CREATE SEQUENCE`, `DROP SEQUENCE`, and the calls that take values
//! from one, `nextval('name')` and `setval('name', value [, called])`, or read what the
//! session was given, `currval('name')` and `lastval()`.
//!
//! A call runs where the statement runs, not in a query's operators: `SELECT nextval('s'),
//! setval('t', 5)` (a SELECT without FROM whose items are all such calls) is
//! [`Statement::SequenceCalls`]; `nextval('s')` as a value of `INSERT ... VALUES` or as a
//! column's `DEFAULT` fills the column from the sequence as a `SERIAL` column's own sequence
//! does ([`crate::SequenceFill`]), and so does a whole item of the SELECT of an `INSERT ...
//! SELECT`. Anywhere else (in an expression, in a query over a
//! table) a call is refused, naming where it may go.

use crate::bind::{constant_value, Binder};
use crate::catalog::{Catalog, NamedSequence, SequenceName, SequenceOwner};
use crate::error::PlanError;
use crate::sequence_names::{function_name, nextval_call, plain_args, sequence_text, unqualified};
use crate::statement::{SequenceCall, Statement};
use sqlparser::ast as sql;
use sqlparser::ast::Spanned;
use weir_operators::{DataType, Field, Schema, Value};

/// Where a sequence call may go, for the errors that refuse one elsewhere.
pub(crate) const WHERE_CALLS_GO: &str = "as a whole item of a SELECT without FROM \
(SELECT nextval('s')), as a value of INSERT ... VALUES, or as a column's DEFAULT";

/// Whether `name` (lowercase, unqualified) is a function of sequences.
pub(crate) fn is_sequence_function(name: &str) -> bool {
    matches!(name, "nextval" | "setval" | "currval" | "lastval")
}

/// The error for a sequence function called where it cannot be.
pub(crate) fn misplaced_call(name: &str, span: sqlparser::tokenizer::Span) -> PlanError {
    let what = match name {
        "currval" | "lastval" => format!(
            "{name}() here: it goes as a whole item of a SELECT without FROM (SELECT \
             {name}(...)){}, or use INSERT ... RETURNING for an inserted row's key",
            if name == "currval" {
                " or as a value of INSERT ... VALUES"
            } else {
                ""
            }
        ),
        _ => format!("{name}() here: a sequence function goes {WHERE_CALLS_GO}"),
    };
    crate::bind::unsupported(what, span)
}

/// The sequence `DEFAULT e` of a column of type `ty` takes its values from (checked: it
/// exists, and the column holds integers), or `None` when `e` is no `nextval` call.
pub(crate) fn checked_default_sequence(
    e: &sql::Expr,
    column: &str,
    ty: DataType,
    catalog: &Catalog,
) -> Result<Option<SequenceName>, PlanError> {
    let Some(name) = nextval_call(e) else {
        return Ok(None);
    };
    let sequence = catalog.resolve_sequence(&name?)?;
    if ty != DataType::Int64 {
        return Err(PlanError::Type(format!(
            "column '{column}' is {ty}: a DEFAULT of {e} needs an integer column"
        )));
    }
    Ok(Some(sequence))
}

/// A number of a `CREATE SEQUENCE` option: an integer literal, possibly negative.
pub(crate) fn option_number(e: &sql::Expr, option: &str) -> Result<i64, PlanError> {
    let bad = || {
        PlanError::Invalid(format!(
            "{option} of CREATE SEQUENCE must be an integer, not {e}"
        ))
    };
    match e {
        sql::Expr::UnaryOp {
            op: sql::UnaryOperator::Minus,
            expr,
        } => option_number(expr, option)?.checked_neg().ok_or_else(bad),
        sql::Expr::Nested(x) => option_number(x, option),
        sql::Expr::Value(v) => match &v.value {
            sql::Value::Number(n, _) => n.parse().map_err(|_| bad()),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

/// The smallest and largest values of a sequence of type `t` (`AS t`).
pub(crate) fn type_bounds(t: &sql::DataType) -> Result<(i64, i64), PlanError> {
    match t {
        sql::DataType::SmallInt(_) | sql::DataType::Int2(_) => {
            Ok((i16::MIN.into(), i16::MAX.into()))
        }
        sql::DataType::Int(_) | sql::DataType::Integer(_) | sql::DataType::Int4(_) => {
            Ok((i32::MIN.into(), i32::MAX.into()))
        }
        sql::DataType::BigInt(_) | sql::DataType::Int8(_) => Ok((i64::MIN, i64::MAX)),
        other => Err(PlanError::Invalid(format!(
            "a sequence is SMALLINT, INTEGER or BIGINT, not {other}"
        ))),
    }
}

/// `CREATE SEQUENCE [IF NOT EXISTS] name [AS type] [INCREMENT [BY] n] [MINVALUE n | NO
/// MINVALUE] [MAXVALUE n | NO MAXVALUE] [START [WITH] n] [CACHE n] [NO CYCLE]`, with
/// PostgreSQL's defaults: ascending from `MINVALUE` (1) to the type's largest value,
/// descending from `MAXVALUE` (-1) to its smallest. `CACHE` is taken and does nothing more
/// (every client reserves values in blocks); `OWNED BY table.column` makes the column its
/// owner (dropping the column or its table drops the sequence); `CYCLE` and `TEMPORARY` are
/// refused.
pub(crate) fn create_sequence(stmt: &sql::Statement) -> Result<Statement, PlanError> {
    let sql::Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        sequence_options,
    } = stmt
    else {
        return Err(PlanError::Invalid(format!("not CREATE SEQUENCE: {stmt}")));
    };
    if *temporary {
        return Err(crate::bind::unsupported(
            "CREATE TEMPORARY SEQUENCE",
            stmt.span(),
        ));
    }
    let (mut increment, mut min, mut max, mut start) = (1i64, None, None, None);
    let mut owner = None;
    let (mut type_min, mut type_max) = (i64::MIN, i64::MAX);
    for option in sequence_options {
        match option {
            sql::SequenceOptions::DataType(t) => (type_min, type_max) = type_bounds(t)?,
            sql::SequenceOptions::IncrementBy(e, _) => increment = option_number(e, "INCREMENT")?,
            sql::SequenceOptions::MinValue(e) => {
                min = e
                    .as_ref()
                    .map(|e| option_number(e, "MINVALUE"))
                    .transpose()?
            }
            sql::SequenceOptions::MaxValue(e) => {
                max = e
                    .as_ref()
                    .map(|e| option_number(e, "MAXVALUE"))
                    .transpose()?
            }
            sql::SequenceOptions::StartWith(e, _) => start = Some(option_number(e, "START")?),
            sql::SequenceOptions::Cache(e) => {
                if option_number(e, "CACHE")? < 1 {
                    return Err(PlanError::Invalid(format!(
                        "CACHE of CREATE SEQUENCE must be at least 1, not {e}"
                    )));
                }
            }
            sql::SequenceOptions::Cycle(no) => {
                if !*no {
                    return Err(crate::bind::unsupported(
                        "CREATE SEQUENCE ... CYCLE (a sequence stops at its bound)",
                        stmt.span(),
                    ));
                }
            }
            sql::SequenceOptions::OwnedBy(None) => owner = None,
            sql::SequenceOptions::OwnedBy(Some(column)) => owner = Some(owning_column(column)?),
        }
    }
    if increment == 0 {
        return Err(PlanError::Invalid(
            "INCREMENT of CREATE SEQUENCE must not be zero".into(),
        ));
    }
    let min = min.unwrap_or(if increment > 0 { 1 } else { type_min });
    let max = max.unwrap_or(if increment > 0 { type_max } else { -1 });
    let start = start.unwrap_or(if increment > 0 { min } else { max });
    let name_text = name.to_string();
    if min > max || min < type_min || max > type_max {
        return Err(PlanError::Invalid(format!(
            "sequence {name_text}: MINVALUE ({min}) must be at most MAXVALUE ({max}), both within the sequence's type"
        )));
    }
    if start < min || start > max {
        return Err(PlanError::Invalid(format!(
            "sequence {name_text}: START value ({start}) must lie within MINVALUE ({min}) and MAXVALUE ({max})"
        )));
    }
    Ok(Statement::CreateSequence {
        sequence: NamedSequence {
            name: unqualified(&name_text),
            next: start,
            start,
            increment,
            min,
            max,
            made: 0,
            owner,
        },
        if_not_exists: *if_not_exists,
    })
}

/// `DROP SEQUENCE [IF EXISTS] name, ...`.
pub(crate) fn drop_sequence(
    names: &[sql::ObjectName],
    if_exists: bool,
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let mut dropped = Vec::new();
    for name in names {
        let key = unqualified(&name.to_string());
        if catalog.named_sequence(&key).is_none() && !if_exists {
            return Err(PlanError::UnknownSequence(name.to_string()));
        }
        dropped.push(key);
    }
    Ok(Statement::DropSequence {
        names: dropped,
        if_exists,
    })
}

/// The call select item `item` is, with its alias.
fn call_of(item: &sql::SelectItem) -> Option<(&sql::Function, Option<String>)> {
    match item {
        sql::SelectItem::UnnamedExpr(sql::Expr::Function(f)) => Some((f, None)),
        sql::SelectItem::ExprWithAlias {
            expr: sql::Expr::Function(f),
            alias,
        } => Some((f, Some(alias.value.clone()))),
        _ => None,
    }
}

/// `SELECT nextval('s') [AS a], setval('t', v [, called]), ...`: a SELECT without FROM whose
/// items are all calls of sequence functions, as [`Statement::SequenceCalls`]; `None` when
/// `q` is no such SELECT (a sequence call left in it is refused when it is bound).
pub(crate) fn sequence_calls(
    q: &sql::Query,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Option<Statement>, PlanError> {
    let sql::SetExpr::Select(select) = q.body.as_ref() else {
        return Ok(None);
    };
    if !select.from.is_empty() || q.with.is_some() {
        return Ok(None);
    }
    let is_call = |item: &sql::SelectItem| {
        call_of(item).is_some_and(|(f, _)| is_sequence_function(&function_name(f)))
    };
    if !select.projection.iter().any(is_call) {
        return Ok(None);
    }
    let plain = select.selection.is_none()
        && select.having.is_none()
        && matches!(&select.group_by, sql::GroupByExpr::Expressions(g, m) if g.is_empty() && m.is_empty())
        && q.order_by.is_none()
        && q.limit_clause.is_none()
        && select.distinct.is_none();
    if !plain || !select.projection.iter().all(is_call) {
        return Err(crate::bind::unsupported(
            format!("a sequence function beside other clauses or items: it goes {WHERE_CALLS_GO}"),
            q.span(),
        ));
    }
    let mut calls = Vec::new();
    let mut fields = Vec::new();
    for item in &select.projection {
        let Some((f, alias)) = call_of(item) else {
            continue;
        };
        let name = function_name(f);
        let args = plain_args(f).unwrap_or_default();
        let sequence = |arg: Option<&&sql::Expr>| -> Result<SequenceName, PlanError> {
            let arg = arg.ok_or_else(|| {
                PlanError::Invalid(format!("{name} needs the sequence's name: {f}"))
            })?;
            let text = sequence_text(arg).ok_or_else(|| {
                crate::bind::unsupported(
                    format!("{name}({arg}): the sequence must be named by a quoted literal"),
                    arg.span(),
                )
            })?;
            catalog.resolve_sequence(&text)
        };
        let call = match (name.as_str(), args.len()) {
            ("nextval", 1) => SequenceCall::Next(sequence(args.first())?),
            ("setval", 2 | 3) => {
                let value = match constant_value(args[1], binder, DataType::Int64, "setval")? {
                    Value::Int(v) => v,
                    other => {
                        return Err(PlanError::Invalid(format!(
                            "setval needs a BIGINT value, not {other}"
                        )))
                    }
                };
                let called = match args.get(2) {
                    None => true,
                    Some(e) => match constant_value(e, binder, DataType::Boolean, "setval")? {
                        Value::Bool(b) => b,
                        other => {
                            return Err(PlanError::Invalid(format!(
                                "setval's third argument is a BOOLEAN, not {other}"
                            )))
                        }
                    },
                };
                SequenceCall::Set {
                    sequence: sequence(args.first())?,
                    value,
                    called,
                }
            }
            ("currval", 1) => SequenceCall::Current(sequence(args.first())?),
            ("lastval", 0) => SequenceCall::Last,
            ("nextval" | "setval" | "currval" | "lastval", _) => {
                return Err(PlanError::Invalid(format!(
                    "{name} takes {}: {f}",
                    match name.as_str() {
                        "nextval" | "currval" => "one argument",
                        "lastval" => "no argument",
                        _ => "two or three arguments",
                    }
                )))
            }
            _ => return Err(misplaced_call(&name, f.name.span())),
        };
        calls.push(call);
        fields.push(Field::new(alias.unwrap_or(name), DataType::Int64));
    }
    binder.params.check_types()?;
    Ok(Some(Statement::SequenceCalls {
        schema: Schema::new(fields),
        calls,
    }))
}

/// A query with its `nextval` items replaced, and those items: (position, sequence).
pub(crate) type DrawnItems = (sql::Query, Vec<(usize, SequenceName)>);

/// The items of `q` (a SELECT feeding an `INSERT ... SELECT`) that are `nextval('s')`, by
/// position, each with its sequence, and `q` with them replaced by a BIGINT NULL: the
/// statement fills those columns from the sequences, row by row, when it runs (SQLAlchemy
/// inserts many rows as `INSERT ... SELECT nextval('s'), p1 FROM (VALUES ...)`). `None` when
/// no item is such a call.
pub(crate) fn drawn_items(
    q: &sql::Query,
    catalog: &Catalog,
) -> Result<Option<DrawnItems>, PlanError> {
    let sql::SetExpr::Select(select) = q.body.as_ref() else {
        return Ok(None);
    };
    let mut drawn = Vec::new();
    let mut projection = select.projection.clone();
    for (i, item) in projection.iter_mut().enumerate() {
        let expr = match item {
            sql::SelectItem::UnnamedExpr(e) | sql::SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        let Some(name) = nextval_call(expr) else {
            continue;
        };
        drawn.push((i, catalog.resolve_sequence(&name?)?));
        *expr = sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
            .try_with_sql("CAST(NULL AS BIGINT)")
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| PlanError::Invalid(format!("cannot stand NULL in for nextval: {e}")))?;
    }
    if drawn.is_empty() {
        return Ok(None);
    }
    let mut select = select.clone();
    select.projection = projection;
    let query = sql::Query {
        body: Box::new(sql::SetExpr::Select(select)),
        ..q.clone()
    };
    Ok(Some((query, drawn)))
}

/// The column of `OWNED BY [schema.]table.column`, lowercase (checked against the catalog when
/// the sequence is made or changed).
pub(crate) fn owning_column(name: &sql::ObjectName) -> Result<SequenceOwner, PlanError> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| p.to_string().trim_matches('"').to_lowercase())
        .collect();
    match parts.as_slice() {
        [.., table, column] => Ok(SequenceOwner {
            table: table.clone(),
            column: column.clone(),
        }),
        _ => Err(PlanError::Invalid(format!(
            "OWNED BY needs a table's column (table.column), not {name}"
        ))),
    }
}
