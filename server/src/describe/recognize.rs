//! Telling a describe query from its tokens: the catalog relations it reads, its select
//! list, the object id or name pattern it asks about, and the filters and parameters of the
//! drivers' relation-name and type queries.

use sqlparser::tokenizer::{Token, TokenWithSpan};
use weir_operators::Value;

use super::question::{Describe, Filter, Item, Question, TypeName};

/// The catalog relations a query reads, lower-cased, without the `pg_catalog.` prefix
/// (named with it anywhere but before `(`, or without it right after `FROM` or `JOIN`).
fn catalog_tables(code: &[&Token]) -> Vec<String> {
    // `pg_catalog.name`, not followed by `(` (a function of the catalog's).
    let qualified = code
        .windows(3)
        .enumerate()
        .filter_map(|(i, w)| match (w[0], w[1], w[2]) {
            (Token::Word(s), Token::Period, Token::Word(t))
                if s.value.eq_ignore_ascii_case("pg_catalog")
                    && !matches!(code.get(i + 3), Some(Token::LParen)) =>
            {
                Some(t.value.to_lowercase())
            }
            _ => None,
        });
    let bare = code.windows(2).filter_map(|w| match (w[0], w[1]) {
        (Token::Word(k), Token::Word(t))
            if (k.value.eq_ignore_ascii_case("FROM") || k.value.eq_ignore_ascii_case("JOIN"))
                && t.value.to_lowercase().starts_with("pg_") =>
        {
            Some(t.value.to_lowercase())
        }
        _ => None,
    });
    qualified.chain(bare).collect()
}

/// Whether `sql` is one of psql's describe queries, and which.
pub fn psql_describe(tokens: &[TokenWithSpan]) -> Option<Describe> {
    let code: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF | Token::SemiColon))
        .collect();
    if !matches!(code.first(), Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("SELECT")) {
        return None;
    }
    let mut items = select_list(&code[1..])?;
    if let Some(inner) = star_over_subquery(&code) {
        // `SELECT * FROM (SELECT ...) alias ...` (JDBC's getColumns): the inner select list
        // names the columns.
        items = select_list(inner)?;
    }
    let tables = catalog_tables(&code);
    let reads = |t: &str| tables.iter().any(|x| x == t);
    let reads_only = |t: &str| reads(t) && tables.iter().all(|x| x == t || x == "pg_catalog");
    let named = |n: &str| items.iter().any(|i| *i == Item::Named(n.to_string()));
    let oid = || quoted_oid(&code);
    let question = if reads("pg_class")
        && reads("pg_namespace")
        && named("nspname")
        && code.iter().any(|t| matches!(t, Token::Tilde))
    {
        if !named("relname") || !named("oid") {
            return None;
        }
        Question::Lookup {
            pattern: pattern(&code)?,
        }
    } else if reads("pg_attribute") && named("table_name") && named("format_type") {
        Question::Columns {
            filters: filters(&code)?,
        }
    } else if reads("pg_constraint") && reads("pg_index") && named("cols") {
        Question::Constraints {
            kind: values_of(&code, "contype")?.into_iter().next()?,
            oids: values_of(&code, "conrelid")?,
        }
    } else if reads("pg_index") && named("non_unique") && named("index_name") {
        // JDBC's getIndexInfo: `NOT i.indisunique AS NON_UNIQUE` in its select list, and
        // `AND i.indisunique` in its WHERE when only unique indexes are asked for.
        let mentions = code
            .iter()
            .filter(|t| matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case("indisunique")))
            .count();
        Question::JdbcIndexInfo {
            table: values_of(&code, "relname")?.into_iter().next()?,
            unique_only: mentions > 1,
        }
    } else if reads("pg_constraint") && named("fk_name") && named("pktable_name") {
        // JDBC's getImportedKeys names the table as `fkc.relname = ...`, getExportedKeys as
        // `pkc.relname = ...`.
        let (table, exported) = match qualified_value(&code, "fkc", "relname") {
            Some(t) => (t, false),
            None => (qualified_value(&code, "pkc", "relname")?, true),
        };
        Question::JdbcForeignKeys { table, exported }
    } else if reads("pg_constraint") && named("sametable") && named("condef") {
        Question::ForeignKeys { oid: oid()? }
    } else if reads("pg_constraint") && named("ontable") && mentions(&code, "confrelid") {
        Question::ReferencedBy { oid: oid()? }
    } else if reads_only("pg_constraint")
        && named("conname")
        && calls(&code, "pg_get_constraintdef")
        && values_of(&code, "contype").is_some_and(|kinds| kinds == [TypeName::Literal("c".into())])
    {
        Question::CheckConstraints { oid: oid()? }
    } else if reads("pg_constraint")
        && reads("pg_class")
        && named("conname")
        && calls(&code, "pg_get_constraintdef")
    {
        Question::ConstraintDefinitions {
            kind: values_of(&code, "contype")?.into_iter().next()?,
            filters: filters(&code)?,
        }
    } else if reads_only("pg_settings") && named("setting") {
        Question::Setting {
            name: values_of(&code, "name")?.into_iter().next()?,
        }
    } else if reads("pg_index") && named("indrelid") && named("elements") {
        Question::TableIndexes {
            oids: values_of(&code, "indrelid")?,
        }
    } else if reads("pg_index") && named("indisprimary") {
        Question::Indexes { oid: oid()? }
    } else if reads("pg_attribute") && named("attname") && named("format_type") {
        Question::Attributes { oid: oid()? }
    } else if reads("pg_class") && named("relchecks") && named("relkind") {
        Question::Relation { oid: oid()? }
    } else if reads("pg_attribute") && named("atttypid") && named("attnotnull") {
        // The patterns are in the WHERE of the subquery the columns come from.
        Question::JdbcColumns {
            table: like_pattern(&code, "relname"),
            schema: like_pattern(&code, "nspname"),
            column: like_pattern(&code, "attname"),
        }
    } else if reads("pg_index") && named("key_seq") && named("pk_name") {
        Question::JdbcPrimaryKeys {
            table: values_of(&code, "relname")?.into_iter().next()?,
        }
    } else if reads("pg_class") && named("table_name") && named("table_type") {
        // JDBC's DatabaseMetaData.getTables: name and schema patterns (LIKE), and the kinds
        // of the table types asked for (`c.relkind = 'r'` in its WHERE).
        let at = outer_where(&code)?;
        let kinds = code[at..]
            .windows(3)
            .filter_map(|w| match (w[0], w[1], w[2]) {
                (Token::Word(k), Token::Eq, Token::SingleQuotedString(v))
                    if k.value.eq_ignore_ascii_case("relkind") =>
                {
                    v.chars().next()
                }
                _ => None,
            })
            .collect();
        Question::JdbcTables {
            name: like_pattern(&code[at..], "relname"),
            schema: like_pattern(&code[at..], "nspname"),
            kinds,
        }
    } else if reads("pg_class") && reads("pg_namespace") && !reads("pg_attribute") {
        Question::Relations {
            filters: filters(&code)?,
        }
    } else if reads("pg_type") && calls(&code, "to_regtype") {
        Question::TypeLookup {
            name: argument(&code, "to_regtype")?,
        }
    } else if named("pg_get_viewdef") && items.len() == 1 {
        Question::ViewDefinition { oid: oid()? }
    } else if reads_only("pg_am") && named("amname") {
        Question::AccessMethods {
            name: match outer_where(&code) {
                Some(_) => Some(values_of(&code, "amname")?.into_iter().next()?),
                None => None,
            },
        }
    } else if reads_only("pg_namespace") && (named("nspname") || named("table_schem")) {
        // SQLAlchemy's get_schema_names leaves out `pg_` names (`NOT LIKE 'pg/_%'`).
        let not_like = code.windows(2).any(|w| {
            matches!((w[0], w[1]), (Token::Word(n), Token::Word(l))
                if n.value.eq_ignore_ascii_case("NOT") && l.value.eq_ignore_ascii_case("LIKE"))
        });
        Question::Schemas { system: !not_like }
    } else if reads_only("pg_sequence") && mentions(&code, "seqrelid") {
        Question::Sequence { oid: oid()? }
    } else if reads("pg_depend") && named("deptype") && mentions(&code, "objid") {
        Question::SequenceOwner { oid: oid()? }
    } else if reads_only("pg_opclass") && negates(&code, "opcdefault") {
        // The operator classes that are not their type's default: weir's indexes use
        // only the defaults.
        Question::Nothing
    } else if [
        "pg_policy",
        "pg_statistic_ext",
        "pg_publication",
        "pg_inherits",
        "pg_trigger",
        "pg_rewrite",
    ]
    .iter()
    .any(|t| reads(t))
    {
        Question::Nothing
    } else {
        return None;
    };
    let params = placeholders(&code);
    Some(Describe {
        question,
        items,
        params,
    })
}

/// The select list of the subquery a `SELECT * FROM (SELECT ...)` reads from (the tokens
/// after its `SELECT`), when the query is one.
fn star_over_subquery<'a>(code: &'a [&'a Token]) -> Option<&'a [&'a Token]> {
    match code {
        [_, Token::Mul, Token::Word(from), Token::LParen, Token::Word(select), inner @ ..]
            if from.value.eq_ignore_ascii_case("FROM")
                && select.value.eq_ignore_ascii_case("SELECT") =>
        {
            Some(inner)
        }
        _ => None,
    }
}

/// The items of a select list (the tokens after `SELECT`, up to the `FROM` outside any
/// parentheses, or the end).
fn select_list(code: &[&Token]) -> Option<Vec<Item>> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut end = code.len();
    for (i, t) in code.iter().enumerate() {
        match t {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth -= 1,
            Token::Comma if depth == 0 => {
                items.push(item(&code[start..i])?);
                start = i + 1;
            }
            Token::Word(w) if depth == 0 && w.value.eq_ignore_ascii_case("FROM") => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    items.push(item(&code[start..end])?);
    Some(items)
}

/// What one select item names: its alias, else the function it calls or the column it
/// reads (the last part of `c.relkind`), the item of the scalar subquery it is, or the
/// constant it is.
fn item(tokens: &[&Token]) -> Option<Item> {
    let word = |t: &Token| match t {
        Token::Word(w) => Some(w.value.to_lowercase()),
        _ => None,
    };
    if let [.., Token::Word(as_), last] = tokens {
        if as_.value.eq_ignore_ascii_case("AS") {
            // A quoted alias keeps its case (psql's `AS "Type"` heads its column so).
            return match last {
                Token::Word(w) if w.quote_style.is_some() => Some(Item::Named(w.value.clone())),
                _ => word(last).map(Item::Named),
            };
        }
    }
    match tokens {
        [] => None,
        [Token::SingleQuotedString(s)] => Some(Item::Literal(Value::Str(s.clone()))),
        [Token::Number(n, _)] => Some(Item::Literal(
            n.parse().map(Value::Int).unwrap_or(Value::Null),
        )),
        [Token::Word(w)] if w.value.eq_ignore_ascii_case("NULL") => {
            Some(Item::Literal(Value::Null))
        }
        [Token::Word(w)] if w.value.eq_ignore_ascii_case("TRUE") => {
            Some(Item::Literal(Value::Bool(true)))
        }
        [Token::Word(w)] if w.value.eq_ignore_ascii_case("FALSE") => {
            Some(Item::Literal(Value::Bool(false)))
        }
        // A scalar subquery is named for its own item, as PostgreSQL names it:
        // `(SELECT pg_catalog.pg_get_expr(...) FROM ...)` is `pg_get_expr`.
        [Token::LParen, select, rest @ ..] if word(select).as_deref() == Some("select") => {
            let from = rest
                .iter()
                .position(|t| word(t).as_deref() == Some("from"))
                .unwrap_or(rest.len());
            item(&rest[..from])
        }
        _ => {
            let call = tokens.iter().position(|t| matches!(t, Token::LParen));
            let named = match call {
                Some(0) => None,
                Some(at) => word(tokens[at - 1]),
                None => tokens.iter().rev().find_map(|t| word(t)),
            };
            Some(Item::Named(named.unwrap_or_default()))
        }
    }
}

/// The columns a relation-name query filters on.
const FILTERED: [&str; 4] = ["relname", "relkind", "relpersistence", "nspname"];

/// The filters of a relation-name query's WHERE: each value (a string or a parameter) is
/// the last filtered column's, compared as the last operator said. `None` when a value of
/// the WHERE is not a filtered column's (the query asks more than this answers).
fn filters(code: &[&Token]) -> Option<Vec<Filter>> {
    let at = outer_where(code)?;
    let comparison = |t: Option<&&Token>| {
        matches!(
            t,
            Some(Token::Eq | Token::Neq | Token::Lt | Token::Gt | Token::LtEq | Token::GtEq)
        )
    };
    let mut out: Vec<Filter> = Vec::new();
    // The filtered column the next values compare with, once `=`, `!=` or `IN` follows it.
    let mut column: Option<String> = None;
    let mut compared = false;
    let mut negated = false;
    for k in at + 1..code.len() {
        let t = code[k];
        match t {
            Token::Word(w) if FILTERED.contains(&w.value.to_lowercase().as_str()) => {
                column = Some(w.value.to_lowercase());
                (compared, negated) = (false, false);
            }
            Token::Word(w) if w.value.eq_ignore_ascii_case("ORDER") => break,
            Token::Word(w) if w.value.eq_ignore_ascii_case("IN") => compared = true,
            Token::Eq => compared = true,
            Token::Neq => (compared, negated) = (true, true),
            // Another comparison (a range, a pattern), or another column: not a filter this
            // answers.
            Token::Lt | Token::Gt | Token::LtEq | Token::GtEq | Token::Tilde => column = None,
            Token::Word(w)
                if ["LIKE", "ILIKE", "SIMILAR"]
                    .iter()
                    .any(|k| w.value.eq_ignore_ascii_case(k)) =>
            {
                column = None
            }
            Token::Word(_)
                if matches!(code[k - 1], Token::Period) || comparison(code.get(k + 1)) =>
            {
                column = None
            }
            Token::SingleQuotedString(_) | Token::Placeholder(_) => {
                let value = match t {
                    Token::SingleQuotedString(v) => TypeName::Literal(v.clone()),
                    Token::Placeholder(p) => {
                        TypeName::Param(p.strip_prefix('$')?.parse::<usize>().ok()?.checked_sub(1)?)
                    }
                    _ => return None,
                };
                let column = column.clone().filter(|_| compared)?;
                match out
                    .iter_mut()
                    .find(|f| f.column == column && f.negated == negated)
                {
                    Some(f) => f.values.push(value),
                    None => out.push(Filter {
                        column,
                        negated,
                        values: vec![value],
                    }),
                }
            }
            _ => {}
        }
    }
    Some(out)
}

/// The position of the query's own `WHERE`: the first outside any parentheses.
fn outer_where(code: &[&Token]) -> Option<usize> {
    let mut depth = 0i32;
    for (i, t) in code.iter().enumerate() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.value.eq_ignore_ascii_case("WHERE") => {
                return Some(i)
            }
            _ => {}
        }
    }
    None
}

/// The number of parameters the query takes: the highest `$n` it names.
fn placeholders(code: &[&Token]) -> usize {
    code.iter()
        .filter_map(|t| match t {
            Token::Placeholder(p) => p.strip_prefix('$')?.parse::<usize>().ok(),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// The values column `column` is compared with where the query first compares it:
/// `column = v`, `column IN (v, ...)` or `column = ANY (ARRAY[v, ...])`, each a string, a
/// number or a parameter (a cast after it, `$1::VARCHAR`, is read past). `None` when the
/// query never compares the column so, or a value is something else.
fn values_of(code: &[&Token], column: &str) -> Option<Vec<TypeName>> {
    let at = code.windows(2).position(|w| match (w[0], w[1]) {
        (Token::Word(c), Token::Eq) => c.value.eq_ignore_ascii_case(column),
        (Token::Word(c), Token::Word(i)) => {
            c.value.eq_ignore_ascii_case(column) && i.value.eq_ignore_ascii_case("IN")
        }
        _ => false,
    })?;
    let mut values = Vec::new();
    let mut k = at + 2;
    // One value right after `=`, or a parenthesized list.
    let list = match code.get(k) {
        Some(Token::LParen) => true,
        Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("ANY") => {
            k += 1;
            true
        }
        _ => false,
    };
    while let Some(t) = code.get(k) {
        match t {
            Token::SingleQuotedString(s) => values.push(TypeName::Literal(s.clone())),
            Token::Number(n, _) => values.push(TypeName::Literal(n.clone())),
            Token::Placeholder(p) => values.push(TypeName::Param(
                p.strip_prefix('$')?.parse::<usize>().ok()?.checked_sub(1)?,
            )),
            Token::DoubleColon => k += 1,
            Token::LParen | Token::LBracket | Token::Comma if list => {}
            Token::Word(w) if list && w.value.eq_ignore_ascii_case("ARRAY") => {}
            _ => break,
        }
        k += 1;
        if !list {
            break;
        }
    }
    (!values.is_empty()).then_some(values)
}

/// The pattern of `column LIKE 'pattern'`, if the query has one.
fn like_pattern(code: &[&Token], column: &str) -> Option<String> {
    code.windows(3).find_map(|w| match (w[0], w[1], w[2]) {
        (Token::Word(c), Token::Word(l), Token::SingleQuotedString(p))
            if c.value.eq_ignore_ascii_case(column) && l.value.eq_ignore_ascii_case("LIKE") =>
        {
            Some(p.clone())
        }
        _ => None,
    })
}

/// Whether the query says `NOT ... column` (`NOT pg_catalog.pg_opclass.opcdefault`).
fn negates(code: &[&Token], column: &str) -> bool {
    code.windows(6).any(|w| {
        matches!(w[0], Token::Word(n) if n.value.eq_ignore_ascii_case("NOT"))
            && w[1..]
                .iter()
                .take_while(|t| matches!(t, Token::Word(_) | Token::Period))
                .any(|t| matches!(t, Token::Word(c) if c.value.eq_ignore_ascii_case(column)))
    })
}

/// Whether the query names `word` anywhere.
fn mentions(code: &[&Token], word: &str) -> bool {
    code.iter()
        .any(|t| matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case(word)))
}

/// The value of `qualifier.column = value` (a string or a parameter), if the query has it.
fn qualified_value(code: &[&Token], qualifier: &str, column: &str) -> Option<TypeName> {
    let at = code
        .windows(4)
        .position(|w| match (w[0], w[1], w[2], w[3]) {
            (Token::Word(q), Token::Period, Token::Word(c), Token::Eq) => {
                q.value.eq_ignore_ascii_case(qualifier) && c.value.eq_ignore_ascii_case(column)
            }
            _ => false,
        })?;
    values_of(&code[at + 2..], column)?.into_iter().next()
}

/// Whether the query calls function `f`.
fn calls(code: &[&Token], f: &str) -> bool {
    code.windows(2).any(|w| {
        matches!((w[0], w[1]), (Token::Word(n), Token::LParen) if n.value.eq_ignore_ascii_case(f))
    })
}

/// The argument of the query's call of `f`: a string, or a parameter (`$n`).
fn argument(code: &[&Token], f: &str) -> Option<TypeName> {
    code.windows(3).find_map(|w| match (w[0], w[1], w[2]) {
        (Token::Word(n), Token::LParen, arg) if n.value.eq_ignore_ascii_case(f) => match arg {
            Token::SingleQuotedString(s) => Some(TypeName::Literal(s.clone())),
            Token::Placeholder(p) => p
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n >= 1)
                .map(|n| TypeName::Param(n - 1)),
            _ => None,
        },
        _ => None,
    })
}

/// psql's name pattern: the string after `OPERATOR(pg_catalog.~)`.
fn pattern(code: &[&Token]) -> Option<String> {
    let at = code.iter().position(|t| matches!(t, Token::Tilde))?;
    code[at..].iter().find_map(|t| match t {
        Token::SingleQuotedString(s) => Some(s.clone()),
        _ => None,
    })
}

/// The object id the query asks about: its first quoted number (`c.oid = '16415'`).
fn quoted_oid(code: &[&Token]) -> Option<i64> {
    code.iter().find_map(|t| match t {
        Token::SingleQuotedString(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    })
}
