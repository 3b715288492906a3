//! `CREATE EXTERNAL TABLE`: a table whose rows are read in place from Parquet or CSV files.
//! `sqlparser` knows the statement only in Hive's form (no `STORED AS CSV`, `OPTIONS` with
//! `=`), so it is recognized from its first words and parsed here with the parser's pieces,
//! accepting DataFusion's spelling:
//!
//! ```text
//! CREATE [OR REPLACE] EXTERNAL TABLE [IF NOT EXISTS] name [(column type, ...)]
//!     STORED AS PARQUET | CSV
//!     [WITH HEADER ROW] [DELIMITER 'c']
//!     LOCATION 'file, directory or glob'
//!     [OPTIONS ('has_header' 'true', 'delimiter' ';', 'null' 'NA', ...)]
//! ```
//!
//! Without columns, the runtime takes them from the files. A `PRIMARY KEY` (on a column, or
//! as `PRIMARY KEY (a, b)`, also alone in the parentheses when the columns come from the
//! files) is declared, not checked: the files are not read to check it, and the planner
//! trusts it for its estimates only (a key that does not hold gives a slower plan, not a
//! wrong answer).

use crate::bind::{map_type, unsupported};
use crate::ddl::object_name;
use crate::error::PlanError;
use crate::statement::Statement;
use sqlparser::ast::{self as sql, Spanned};
use sqlparser::dialect::GenericDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};
use weir_operators::external::{CsvLayout, ExternalSource, FileFormat};
use weir_operators::{Field, Schema};

/// Whether `tokens` begin `CREATE [OR REPLACE] EXTERNAL`.
pub(crate) fn is_create_external(tokens: &[TokenWithSpan]) -> bool {
    let words: Vec<Keyword> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .take(4)
        .map(|t| match &t.token {
            Token::Word(w) => w.keyword,
            _ => Keyword::NoKeyword,
        })
        .collect();
    matches!(
        words.as_slice(),
        [Keyword::CREATE, Keyword::EXTERNAL, ..]
            | [
                Keyword::CREATE,
                Keyword::OR,
                Keyword::REPLACE,
                Keyword::EXTERNAL
            ]
    )
}

fn syntax(e: ParserError) -> PlanError {
    match e {
        ParserError::ParserError(s) | ParserError::TokenizerError(s) => PlanError::Syntax(s),
        ParserError::RecursionLimitExceeded => PlanError::Syntax("statement too deep".into()),
    }
}

/// What the clauses after the columns said.
#[derive(Default)]
struct Clauses {
    format: Option<String>,
    location: Option<String>,
    csv: CsvLayout,
    /// Whether a CSV-only clause was given (refused for Parquet).
    csv_clause: Option<&'static str>,
}

/// Plans `CREATE EXTERNAL TABLE` from its tokens.
pub(crate) fn create_external_table(tokens: Vec<TokenWithSpan>) -> Result<Statement, PlanError> {
    let dialect = GenericDialect {};
    let mut p = Parser::new(&dialect).with_tokens_with_locations(tokens);
    p.expect_keyword_is(Keyword::CREATE).map_err(syntax)?;
    let replace = p.parse_keywords(&[Keyword::OR, Keyword::REPLACE]);
    p.expect_keyword_is(Keyword::EXTERNAL).map_err(syntax)?;
    p.expect_keyword_is(Keyword::TABLE).map_err(syntax)?;
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    if replace && if_not_exists {
        return Err(PlanError::Invalid(
            "OR REPLACE and IF NOT EXISTS cannot both be given".into(),
        ));
    }
    let name_ast = p.parse_object_name(false).map_err(syntax)?;
    let name = object_name(&name_ast)?;
    let (columns, constraints) = p.parse_columns().map_err(syntax)?;
    let mut key: Vec<String> = Vec::new();
    let two_keys = || PlanError::Invalid(format!("table '{name}' has more than one primary key"));
    for c in &constraints {
        match c {
            sql::TableConstraint::PrimaryKey(pk) if key.is_empty() => {
                for col in &pk.columns {
                    match &col.column.expr {
                        sql::Expr::Identifier(id) => key.push(id.value.clone()),
                        other => {
                            return Err(unsupported(
                                format!("primary key part {other}"),
                                other.span(),
                            ))
                        }
                    }
                }
            }
            sql::TableConstraint::PrimaryKey(_) => return Err(two_keys()),
            other => {
                return Err(unsupported(
                    "constraints other than PRIMARY KEY on an external table (it is read-only)",
                    other.span(),
                ))
            }
        }
    }
    let mut fields: Vec<Field> = Vec::with_capacity(columns.len());
    for c in &columns {
        crate::catalog::alter::check_new_column(&fields, &c.name.value)?;
        for o in &c.options {
            if matches!(o.option, sql::ColumnOption::PrimaryKey(_)) {
                if !key.is_empty() {
                    return Err(two_keys());
                }
                key.push(c.name.value.clone());
                continue;
            }
            return Err(unsupported(
                format!(
                    "{} on column '{}' of an external table",
                    o.option, c.name.value
                ),
                c.name.span,
            ));
        }
        fields.push(Field::new(
            c.name.value.clone(),
            map_type(&c.data_type, c.span())?,
        ));
    }
    let clauses = parse_clauses(&mut p)?;
    let format = match clauses.format.as_deref().map(str::to_ascii_uppercase) {
        None => {
            return Err(PlanError::Invalid(format!(
                "external table '{name}' needs STORED AS PARQUET or STORED AS CSV"
            )))
        }
        Some(f) if f == "PARQUET" => {
            if let Some(clause) = clauses.csv_clause {
                return Err(PlanError::Invalid(format!(
                    "{clause} applies to CSV files, not to PARQUET"
                )));
            }
            FileFormat::Parquet
        }
        Some(f) if f == "CSV" => FileFormat::Csv(clauses.csv),
        Some(f) => {
            return Err(unsupported(
                format!("STORED AS {f} (weir reads PARQUET and CSV files)"),
                name_ast.span(),
            ))
        }
    };
    let Some(location) = clauses.location else {
        return Err(PlanError::Invalid(format!(
            "external table '{name}' needs LOCATION 'file, directory or glob'"
        )));
    };
    if location.trim().is_empty() {
        return Err(PlanError::Invalid(format!(
            "external table '{name}' has an empty LOCATION"
        )));
    }
    Ok(Statement::CreateExternalTable {
        name,
        columns: (!fields.is_empty()).then(|| Schema::new(fields)),
        source: ExternalSource { format, location },
        key,
        if_not_exists,
        replace,
    })
}

/// The clauses after the columns, in any order, up to the end of the statement.
fn parse_clauses(p: &mut Parser<'_>) -> Result<Clauses, PlanError> {
    let mut c = Clauses::default();
    loop {
        if p.consume_token(&Token::SemiColon) || p.peek_token().token == Token::EOF {
            if p.peek_token().token != Token::EOF {
                return Err(unsupported("multiple statements", p.peek_token().span));
            }
            return Ok(c);
        }
        if p.parse_keywords(&[Keyword::STORED, Keyword::AS]) {
            let f = p.parse_identifier().map_err(syntax)?;
            once(&mut c.format, f.value, "STORED AS")?;
        } else if p.parse_keyword(Keyword::LOCATION) {
            let l = p.parse_literal_string().map_err(syntax)?;
            once(&mut c.location, l, "LOCATION")?;
        } else if p.parse_keywords(&[Keyword::WITH, Keyword::HEADER, Keyword::ROW]) {
            c.csv.header = true;
            c.csv_clause = Some("WITH HEADER ROW");
        } else if p.parse_keyword(Keyword::DELIMITER) {
            let d = p.parse_literal_string().map_err(syntax)?;
            c.csv.delimiter = delimiter(&d)?;
            c.csv_clause = Some("DELIMITER");
        } else if p.parse_keyword(Keyword::OPTIONS) {
            p.expect_token(&Token::LParen).map_err(syntax)?;
            while !p.consume_token(&Token::RParen) {
                let key = p.parse_literal_string().map_err(syntax)?;
                // DataFusion writes `'key' 'value'`; `'key' = 'value'` is read too.
                let _ = p.consume_token(&Token::Eq);
                let value = p.parse_literal_string().map_err(syntax)?;
                option(&mut c, &key, &value)?;
                let _ = p.consume_token(&Token::Comma);
            }
        } else {
            let t = p.peek_token();
            return Err(PlanError::Syntax(format!(
                "expected STORED AS, LOCATION, WITH HEADER ROW, DELIMITER or OPTIONS in CREATE EXTERNAL TABLE, found {} at {}",
                t.token, t.span.start
            )));
        }
    }
}

fn once(slot: &mut Option<String>, value: String, clause: &str) -> Result<(), PlanError> {
    if slot.is_some() {
        return Err(PlanError::Invalid(format!("{clause} given twice")));
    }
    *slot = Some(value);
    Ok(())
}

fn delimiter(d: &str) -> Result<u8, PlanError> {
    match d.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ if d == "\\t" => Ok(b'\t'),
        _ => Err(PlanError::Invalid(format!(
            "DELIMITER must be one ASCII character, not '{d}'"
        ))),
    }
}

/// One `OPTIONS` entry: `has_header`, `delimiter`, `null` (optionally prefixed `format.`).
fn option(c: &mut Clauses, key: &str, value: &str) -> Result<(), PlanError> {
    let k = key.to_ascii_lowercase();
    match k.strip_prefix("format.").unwrap_or(&k) {
        "has_header" | "header" => {
            c.csv.header = match value.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(PlanError::Invalid(format!(
                        "option '{key}' must be 'true' or 'false', not '{value}'"
                    )))
                }
            };
            c.csv_clause = Some("option 'has_header'");
        }
        "delimiter" => {
            c.csv.delimiter = delimiter(value)?;
            c.csv_clause = Some("option 'delimiter'");
        }
        "null" | "null_value" => {
            c.csv.null = value.to_string();
            c.csv_clause = Some("option 'null'");
        }
        _ => {
            return Err(PlanError::Invalid(format!(
                "unknown option '{key}' of an external table (has_header, delimiter, null)"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::tokenizer::Tokenizer;

    fn plan(sql: &str) -> Result<Statement, PlanError> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        assert!(is_create_external(&tokens), "{sql}");
        create_external_table(tokens)
    }

    #[test]
    fn parquet_without_columns() {
        let Statement::CreateExternalTable {
            name,
            columns,
            source,
            key,
            if_not_exists,
            replace,
        } = plan("CREATE EXTERNAL TABLE lineitem STORED AS PARQUET LOCATION 'data/li/'").unwrap()
        else {
            panic!("not an external table")
        };
        assert_eq!(name, "lineitem");
        assert_eq!(columns, None);
        assert_eq!(source.format, FileFormat::Parquet);
        assert_eq!(source.location, "data/li/");
        assert!(key.is_empty());
        assert!(!if_not_exists && !replace);
    }

    #[test]
    fn csv_with_columns_and_options() {
        let Statement::CreateExternalTable {
            columns, source, ..
        } = plan(
            "create or replace external table t (a BIGINT, b VARCHAR) stored as csv \
             location '/x/*.csv' options ('format.has_header' 'true', 'delimiter' ';', 'null' = 'NA');",
        )
        .unwrap()
        else {
            panic!("not an external table")
        };
        assert_eq!(columns.unwrap().len(), 2);
        let Statement::CreateExternalTable { key, columns, .. } =
            plan("CREATE EXTERNAL TABLE t (PRIMARY KEY (a, b)) STORED AS PARQUET LOCATION 'x'")
                .unwrap()
        else {
            panic!("not an external table")
        };
        assert_eq!(
            (key, columns),
            (vec!["a".to_string(), "b".to_string()], None)
        );
        let Statement::CreateExternalTable { key, .. } = plan(
            "CREATE EXTERNAL TABLE t (a BIGINT PRIMARY KEY, b BIGINT) STORED AS PARQUET LOCATION 'x'",
        )
        .unwrap() else {
            panic!("not an external table")
        };
        assert_eq!(key, ["a"]);
        assert_eq!(
            source.format,
            FileFormat::Csv(CsvLayout {
                header: true,
                delimiter: b';',
                null: "NA".into()
            })
        );
        let Statement::CreateExternalTable { source, .. } = plan(
            "CREATE EXTERNAL TABLE t STORED AS CSV WITH HEADER ROW DELIMITER '|' LOCATION 'f.csv'",
        )
        .unwrap() else {
            panic!("not an external table")
        };
        assert_eq!(
            source.format,
            FileFormat::Csv(CsvLayout {
                header: true,
                delimiter: b'|',
                null: String::new()
            })
        );
    }

    #[test]
    fn mistakes_are_named() {
        let e = |sql: &str| plan(sql).unwrap_err().to_string();
        assert!(e("CREATE EXTERNAL TABLE t LOCATION 'x'").contains("STORED AS"));
        assert!(e("CREATE EXTERNAL TABLE t STORED AS PARQUET").contains("LOCATION"));
        assert!(e("CREATE EXTERNAL TABLE t STORED AS ORC LOCATION 'x'").contains("STORED AS ORC"));
        assert!(
            e("CREATE EXTERNAL TABLE t STORED AS PARQUET WITH HEADER ROW LOCATION 'x'")
                .contains("CSV")
        );
        assert!(
            e("CREATE EXTERNAL TABLE t STORED AS CSV LOCATION 'x' OPTIONS ('colour' 'red')")
                .contains("unknown option 'colour'")
        );
        assert!(
            e("CREATE EXTERNAL TABLE t STORED AS CSV LOCATION 'x' DELIMITER ';;'")
                .contains("one ASCII character")
        );
        assert!(
            e("CREATE EXTERNAL TABLE t (a BIGINT UNIQUE) STORED AS CSV LOCATION 'x'")
                .contains("external table")
        );
        assert!(e(
            "CREATE EXTERNAL TABLE t (a BIGINT PRIMARY KEY, PRIMARY KEY (a)) STORED AS CSV LOCATION 'x'"
        )
        .contains("more than one primary key"));
        assert!(
            e("CREATE EXTERNAL TABLE t STORED AS CSV LOCATION 'x' LOCATION 'y'").contains("twice")
        );
        assert!(
            e("CREATE EXTERNAL TABLE t (a BIGINT, A BIGINT) STORED AS CSV LOCATION 'x'")
                .contains("column 'A' specified more than once")
        );
        assert!(
            e("CREATE EXTERNAL TABLE t STORED AS CSV LOCATION 'x' PARTITIONED BY (a)")
                .contains("expected STORED AS")
        );
    }
}
