//! The names PostgreSQL gives a result's columns, for the RowDescription of a query or of a
//! write's `RETURNING`.
//!
//! weir names an unaliased expression by its text (`count(*)`, `x + 1`), as SQLite does;
//! PostgreSQL names it by what it is (`count`, `?column?`), and clients read columns by those
//! names (psycopg's `dict_row`, JDBC's `getInt("count")`, pandas' headers). The server renames
//! the columns of the statement's outermost select list (the leftmost branch of a set
//! operation) by PostgreSQL's rules (`FigureColname` in its parser): an alias is itself, folded
//! to lower case unless quoted; a column reference is the column's name; a function call, an
//! aggregate or a window function is the function's name (`TRIM` is `btrim`, `EXTRACT` is
//! `extract`); `CASE` is its `ELSE` result's name if that has one, else `case`; a cast is its
//! operand's name, or the type's name for a constant (`'1'::int` is `int4`, `true` is
//! `bool`); a scalar subquery is its column's name; `EXISTS` is `exists`; anything else
//! (operators, constants) is `?column?`. Columns of a `*` keep the names weir gives them.

use sqlparser::ast::{self as sql, Expr, SelectItem, SetExpr, TrimWhereField, Value};
use weir_operators::DataType;

/// The name of one item of a select list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnName {
    /// The name weir gives the column (a column reference's).
    Weir,
    /// `*` or `t.*`: any number of columns, named by weir.
    Wildcard,
    /// This name.
    Named(String),
}

/// The names of the columns `stmt` returns, one per select-list item (empty for a statement
/// whose columns keep weir's names).
pub fn column_names(stmt: &sql::Statement) -> Vec<ColumnName> {
    let items = match stmt {
        sql::Statement::Query(q) => query_items(q),
        sql::Statement::Insert(i) => i.returning.as_deref(),
        sql::Statement::Update(u) => u.returning.as_deref(),
        sql::Statement::Delete(d) => d.returning.as_deref(),
        _ => None,
    };
    items
        .map(|items| items.iter().map(item_name).collect())
        .unwrap_or_default()
}

/// Renames `columns` by `names`: the items before the first `*` name the first columns, the
/// items after the last `*` the last ones. Columns that do not line up with the items (a
/// statement that returns other columns than its select list) keep their names.
pub fn rename(names: &[ColumnName], columns: &mut [(String, DataType)]) {
    let first_star = names.iter().position(|n| *n == ColumnName::Wildcard);
    let (leading, trailing) = match first_star {
        None if names.len() != columns.len() => return,
        None => (names, &[][..]),
        Some(at) => {
            let last_star = names.iter().rposition(|n| *n == ColumnName::Wildcard);
            let after = last_star.map_or(names.len(), |l| l + 1);
            (&names[..at], &names[after..])
        }
    };
    if leading.len() + trailing.len() > columns.len() {
        return;
    }
    let (head, tail) = columns.split_at_mut(columns.len() - trailing.len());
    let pairs = leading
        .iter()
        .zip(head.iter_mut())
        .chain(trailing.iter().zip(tail.iter_mut()));
    for (name, column) in pairs {
        if let ColumnName::Named(name) = name {
            column.0 = name.clone();
        }
    }
}

/// The select list whose items name a query's columns: its body's, or its leftmost
/// branch's.
fn query_items(q: &sql::Query) -> Option<&[SelectItem]> {
    let mut body = q.body.as_ref();
    loop {
        match body {
            SetExpr::Select(select) => return Some(&select.projection),
            SetExpr::Query(inner) => body = inner.body.as_ref(),
            SetExpr::SetOperation { left, .. } => body = left.as_ref(),
            _ => return None,
        }
    }
}

/// The name of one select-list item.
fn item_name(item: &SelectItem) -> ColumnName {
    match item {
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => ColumnName::Wildcard,
        SelectItem::ExprWithAlias { alias, .. } => ColumnName::Named(ident(alias)),
        SelectItem::UnnamedExpr(e) => match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => ColumnName::Weir,
            e => ColumnName::Named(
                figure(e)
                    .map(|(name, _)| name)
                    .unwrap_or_else(|| "?column?".into()),
            ),
        },
        _ => ColumnName::Weir,
    }
}

/// How surely a name names an expression, as PostgreSQL ranks them: a cast's operand or a
/// `CASE`'s `ELSE` gives its name only when it is `Sure`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    /// A name of last resort (`case`, a cast's type).
    Fallback,
    /// The name of a column, a function, a subquery's column.
    Sure,
}

/// The name PostgreSQL gives expression `e`, or `None` for `?column?`.
fn figure(e: &Expr) -> Option<(String, Strength)> {
    let sure = |name: &str| Some((name.to_string(), Strength::Sure));
    match e {
        Expr::Identifier(i) => Some((ident(i), Strength::Sure)),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| (ident(i), Strength::Sure)),
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => figure(inner),
        Expr::Function(f) => {
            let last = f.name.0.last()?.as_ident()?;
            Some((ident(last), Strength::Sure))
        }
        Expr::Cast {
            expr, data_type, ..
        } => match figure(expr) {
            Some((name, Strength::Sure)) => Some((name, Strength::Sure)),
            _ => Some((type_name(data_type), Strength::Fallback)),
        },
        Expr::TypedString(t) => Some((type_name(&t.data_type), Strength::Fallback)),
        Expr::Value(v) if matches!(v.value, Value::Boolean(_)) => {
            Some(("bool".into(), Strength::Fallback))
        }
        Expr::Case { else_result, .. } => match else_result.as_deref().and_then(figure) {
            Some((name, Strength::Sure)) => Some((name, Strength::Sure)),
            _ => Some(("case".into(), Strength::Fallback)),
        },
        Expr::Subquery(q) => {
            let first = query_items(q)?.first()?;
            match item_name(first) {
                ColumnName::Named(name) => Some((name, Strength::Sure)),
                ColumnName::Weir => match first {
                    SelectItem::UnnamedExpr(e) => figure(e),
                    _ => None,
                },
                ColumnName::Wildcard => None,
            }
        }
        Expr::Exists { negated: false, .. } => sure("exists"),
        Expr::Extract { .. } => sure("extract"),
        Expr::Substring { .. } => sure("substring"),
        Expr::Position { .. } => sure("position"),
        Expr::Overlay { .. } => sure("overlay"),
        Expr::Ceil { .. } => sure("ceil"),
        Expr::Floor { .. } => sure("floor"),
        Expr::AtTimeZone { .. } => sure("timezone"),
        Expr::Trim { trim_where, .. } => match trim_where {
            Some(TrimWhereField::Leading) => sure("ltrim"),
            Some(TrimWhereField::Trailing) => sure("rtrim"),
            _ => sure("btrim"),
        },
        Expr::Array(_) => sure("array"),
        Expr::Tuple(_) => sure("row"),
        Expr::Interval(_) => Some(("interval".into(), Strength::Fallback)),
        _ => None,
    }
}

/// An identifier as PostgreSQL keeps it: folded to lower case unless quoted.
fn ident(i: &sql::Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

/// The name PostgreSQL gives a type written `t` (its own name for the standard ones:
/// `INTEGER` is `int4`).
fn type_name(t: &sql::DataType) -> String {
    use sql::DataType as T;
    let name = match t {
        T::Int(_) | T::Integer(_) | T::Int4(_) => "int4",
        T::SmallInt(_) | T::Int2(_) => "int2",
        T::BigInt(_) | T::Int8(_) => "int8",
        T::Real | T::Float4 => "float4",
        T::Double(_) | T::DoublePrecision | T::Float8 | T::Float(_) => "float8",
        T::Decimal(_) | T::Numeric(_) | T::Dec(_) => "numeric",
        T::Boolean | T::Bool => "bool",
        T::Varchar(_) | T::CharacterVarying(_) | T::CharVarying(_) => "varchar",
        T::Char(_) | T::Character(_) => "bpchar",
        T::Text => "text",
        T::Date => "date",
        T::Timestamp(_, sql::TimezoneInfo::WithTimeZone | sql::TimezoneInfo::Tz) => "timestamptz",
        T::Timestamp(..) => "timestamp",
        T::Time(..) => "time",
        T::Interval { .. } => "interval",
        T::Custom(name, _) => {
            return name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(ident)
                .unwrap_or_else(|| "?column?".into())
        }
        other => return other.to_string().to_lowercase(),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    /// The names PostgreSQL would give the columns of `sql` (weir's, `*`, for the others).
    fn names(sql: &str) -> Vec<String> {
        let stmt = Parser::parse_sql(&GenericDialect {}, sql)
            .unwrap()
            .remove(0);
        column_names(&stmt)
            .into_iter()
            .map(|n| match n {
                ColumnName::Weir => "weir".into(),
                ColumnName::Wildcard => "*".into(),
                ColumnName::Named(n) => n,
            })
            .collect()
    }

    #[test]
    fn functions_and_aggregates_are_named_by_the_function() {
        assert_eq!(
            names("SELECT count(*), SUM(x), Count(DISTINCT x), pg_catalog.upper(s), coalesce(x, 1), current_date FROM t"),
            ["count", "sum", "count", "upper", "coalesce", "current_date"]
        );
        assert_eq!(
            names("SELECT TRIM(s), TRIM(LEADING 'a' FROM s), EXTRACT(YEAR FROM d), SUBSTRING(s FROM 2), POSITION('a' IN s) FROM t"),
            ["btrim", "ltrim", "extract", "substring", "position"]
        );
    }

    #[test]
    fn operators_and_constants_have_no_name() {
        assert_eq!(
            names("SELECT x + 1, -x, 1, 'a', NULL, x IS NULL, x BETWEEN 1 AND 2 FROM t"),
            ["?column?"; 7]
        );
    }

    #[test]
    fn casts_take_their_operands_name_or_their_types() {
        assert_eq!(
            names("SELECT x::text, CAST(upper(s) AS VARCHAR(3)), '1'::INTEGER, CAST(1 AS BIGINT), (x + 1)::numeric, true, DATE '2020-01-01', 1::\"MyType\" FROM t"),
            ["x", "upper", "int4", "int8", "numeric", "bool", "date", "MyType"]
        );
    }

    #[test]
    fn case_takes_its_else_results_name() {
        assert_eq!(
            names("SELECT CASE WHEN x > 1 THEN 1 ELSE x END, CASE WHEN x > 1 THEN 1 END, CASE x WHEN 1 THEN 'a' ELSE 'b' END FROM t"),
            ["x", "case", "case"]
        );
    }

    #[test]
    fn aliases_fold_unless_quoted_and_columns_keep_weirs_names() {
        assert_eq!(
            names("SELECT 1 AS Foo, 2 AS \"Bar\", t.X, y FROM t"),
            ["foo", "Bar", "weir", "weir"]
        );
    }

    #[test]
    fn subqueries_name_by_their_column() {
        assert_eq!(
            names("SELECT (SELECT max(id) FROM t), (SELECT id AS k FROM t LIMIT 1), (SELECT id FROM t LIMIT 1), EXISTS (SELECT 1), NOT EXISTS (SELECT 1)"),
            ["max", "k", "id", "exists", "?column?"]
        );
    }

    #[test]
    fn set_operations_take_the_leftmost_branchs_names() {
        assert_eq!(
            names("SELECT count(*) FROM t UNION ALL (SELECT sum(x) AS s FROM u)"),
            ["count"]
        );
        assert_eq!(
            names("(SELECT x + 1 FROM t) EXCEPT SELECT y FROM u"),
            ["?column?"]
        );
    }

    #[test]
    fn returning_lists_are_named_as_select_lists() {
        assert_eq!(
            names("INSERT INTO t VALUES (1) RETURNING id * 2, id, upper(s) AS U"),
            ["?column?", "weir", "u"]
        );
        assert_eq!(names("DELETE FROM t RETURNING *"), ["*"]);
        assert!(names("INSERT INTO t VALUES (1)").is_empty());
        assert!(names("VALUES (1, 2)").is_empty());
    }

    /// Columns named `names`, all BIGINT.
    fn columns(names: &[&str]) -> Vec<(String, DataType)> {
        names
            .iter()
            .map(|n| (n.to_string(), DataType::Int64))
            .collect()
    }

    /// The names of `columns`.
    fn just_names(columns: &[(String, DataType)]) -> Vec<&str> {
        columns.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn a_star_keeps_weirs_names_between_renamed_items() {
        let stmt = Parser::parse_sql(
            &GenericDialect {},
            "SELECT count(*) AS n, *, x + 1 FROM t GROUP BY id, x",
        )
        .unwrap()
        .remove(0);
        let mut cols = columns(&["n", "id", "x", "x + 1"]);
        rename(&column_names(&stmt), &mut cols);
        assert_eq!(just_names(&cols), ["n", "id", "x", "?column?"]);
    }

    #[test]
    fn columns_that_do_not_line_up_keep_their_names() {
        let names = vec![ColumnName::Named("count".into())];
        let mut cols = columns(&["a", "b"]);
        rename(&names, &mut cols);
        assert_eq!(just_names(&cols), ["a", "b"]);
        let names = vec![
            ColumnName::Named("a".into()),
            ColumnName::Wildcard,
            ColumnName::Named("b".into()),
        ];
        let mut cols = columns(&["x"]);
        rename(&names, &mut cols);
        assert_eq!(just_names(&cols), ["x"]);
    }
}
