//! `agg(...) FILTER (WHERE cond)`, as PostgreSQL has it: the aggregate over only the rows for
//! which `cond` is true, in a grouped query and as a window function. Every aggregate weir
//! has skips NULL values, so it is bound as the aggregate of `CASE WHEN cond THEN x END`: the
//! rows `cond` does not hold for (false or NULL) add nothing, and a group where it holds for
//! none gets the aggregate of no values (`COUNT` 0, the others NULL). `COUNT(*)` counts `CASE
//! WHEN cond THEN 1 END`.

use sqlparser::ast as sql;
use sqlparser::ast::helpers::attached_token::AttachedToken;

/// `f` without its FILTER clause, the condition moved into the value it aggregates (the first
/// argument, `*` of `COUNT(*)` as `1`, or the `WITHIN GROUP (ORDER BY x)` value of
/// `PERCENTILE_CONT`); `None` when `f` has no FILTER.
pub(super) fn without_filter(f: &sql::Function) -> Option<sql::Function> {
    let cond = f.filter.as_deref()?;
    let only_when = |x: sql::Expr| sql::Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![sql::CaseWhen {
            condition: cond.clone(),
            result: x,
        }],
        else_result: None,
    };
    let mut plain = f.clone();
    plain.filter = None;
    if let Some(key) = plain.within_group.first_mut() {
        key.expr = only_when(key.expr.clone());
        return Some(plain);
    }
    if let sql::FunctionArguments::List(list) = &mut plain.args {
        if let Some(sql::FunctionArg::Unnamed(first)) = list.args.first_mut() {
            let value = match first {
                sql::FunctionArgExpr::Expr(x) => x.clone(),
                sql::FunctionArgExpr::Wildcard => {
                    sql::Expr::value(sql::Value::Number("1".to_string(), false))
                }
                // `t.*` and `* EXCLUDE ...` are refused as an aggregate's argument when bound.
                sql::FunctionArgExpr::QualifiedWildcard(_)
                | sql::FunctionArgExpr::WildcardWithOptions(_) => return Some(plain),
            };
            *first = sql::FunctionArgExpr::Expr(only_when(value));
        }
    }
    Some(plain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    /// The call in `SELECT <call>` without its FILTER, as SQL text.
    fn rewritten(call: &str) -> String {
        let sql = format!("SELECT {call}");
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, &sql)
            .unwrap()
            .remove(0);
        let sql::Statement::Query(q) = stmt else {
            panic!("not a query")
        };
        let sql::SetExpr::Select(s) = *q.body else {
            panic!("not a SELECT")
        };
        let sql::SelectItem::UnnamedExpr(sql::Expr::Function(f)) = &s.projection[0] else {
            panic!("not a call")
        };
        without_filter(f).map_or_else(|| "unchanged".to_string(), |f| f.to_string())
    }

    #[test]
    fn the_condition_moves_into_the_aggregated_value() {
        assert_eq!(
            rewritten("count(*) FILTER (WHERE x > 1)"),
            "count(CASE WHEN x > 1 THEN 1 END)"
        );
        assert_eq!(
            rewritten("sum(DISTINCT a + b) FILTER (WHERE c)"),
            "sum(DISTINCT CASE WHEN c THEN a + b END)"
        );
        assert_eq!(
            rewritten("string_agg(s, ',' ORDER BY k) FILTER (WHERE k < 3)"),
            "string_agg(CASE WHEN k < 3 THEN s END, ',' ORDER BY k)"
        );
        assert_eq!(
            rewritten("percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FILTER (WHERE v > 0)"),
            "percentile_cont(0.5) WITHIN GROUP (ORDER BY CASE WHEN v > 0 THEN v END)"
        );
        assert_eq!(rewritten("count(*)"), "unchanged");
    }
}
