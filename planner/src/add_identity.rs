//! `ALTER TABLE [IF EXISTS] [ONLY] t ALTER [COLUMN] c ADD GENERATED {ALWAYS | BY DEFAULT} AS
//! IDENTITY [( option ... )]`, as `pg_dump` writes an identity column (the table first, the
//! identity after it), which the SQL parser does not read: the statement is taken apart by its
//! tokens. The options are those of the column's sequence: `SEQUENCE NAME [schema.]t_c_seq`
//! (weir names a column's sequence so, and takes no other name), `START [WITH] n`, `INCREMENT
//! [BY] 1`, `[NO] MINVALUE` (1), `[NO] MAXVALUE`, `CACHE n` and `NO CYCLE`; a column's sequence
//! counts 1, 2, 3, ... in weir, so another increment or bound is refused, naming it.

use crate::bind::unsupported;
use crate::catalog::alter::TableChange;
use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::sequence_alter::{keyword, words};
use crate::sequence_names::unqualified;
use crate::statement::Statement;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};
use weir_operators::DataType;

/// Where the column's name is among the words of an `ALTER TABLE ... ADD GENERATED`, and the
/// table's name: `None` for any other statement.
fn target(words: &[&TokenWithSpan]) -> Option<(String, usize)> {
    if keyword(words.first()) != Keyword::ALTER || keyword(words.get(1)) != Keyword::TABLE {
        return None;
    }
    let mut i = 2;
    if keyword(words.get(i)) == Keyword::IF && keyword(words.get(i + 1)) == Keyword::EXISTS {
        i += 2;
    }
    if keyword(words.get(i)) == Keyword::ONLY {
        i += 1;
    }
    let mut name = String::new();
    loop {
        let Token::Word(w) = &words.get(i)?.token else {
            return None;
        };
        name.push_str(&w.to_string());
        i += 1;
        if words.get(i).map(|t| &t.token) != Some(&Token::Period) {
            break;
        }
        name.push('.');
        i += 1;
    }
    if keyword(words.get(i)) != Keyword::ALTER {
        return None;
    }
    i += 1;
    if keyword(words.get(i)) == Keyword::COLUMN {
        i += 1;
    }
    let generated = keyword(words.get(i + 1)) == Keyword::ADD
        && keyword(words.get(i + 2)) == Keyword::GENERATED;
    generated.then_some((name, i))
}

/// Whether the statement is `ALTER TABLE ... ALTER [COLUMN] c ADD GENERATED ...`.
pub(crate) fn is_add_identity(tokens: &[TokenWithSpan]) -> bool {
    target(&words(tokens)).is_some()
}

/// A whole number among the options, after its keyword(s).
fn number(words: &[&TokenWithSpan], i: usize, what: &str) -> Result<i64, PlanError> {
    let negative = words.get(i).map(|t| &t.token) == Some(&Token::Minus);
    let at = if negative { i + 1 } else { i };
    match words.get(at).map(|t| &t.token) {
        Some(Token::Number(n, _)) => n
            .parse::<i64>()
            .map(|v| if negative { -v } else { v })
            .map_err(|_| PlanError::Invalid(format!("{what} must be an integer, not {n}"))),
        _ => Err(PlanError::Syntax(format!("{what} needs a number"))),
    }
}

/// Plans the statement against `catalog`: the column becomes an identity column whose
/// sequence starts at `START` (1 by default).
pub(crate) fn add_identity(
    tokens: &[TokenWithSpan],
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let words = words(tokens);
    let (name, at) = target(&words).ok_or_else(|| {
        PlanError::Syntax("expected ALTER TABLE t ALTER COLUMN c ADD GENERATED ...".into())
    })?;
    let if_exists = keyword(words.get(2)) == Keyword::IF;
    let Some(def) = catalog.table(&unqualified(&name)) else {
        if if_exists {
            return Ok(Statement::AlterTable {
                table: name,
                change: None,
            });
        }
        return Err(PlanError::UnknownTable(name));
    };
    let Token::Word(column_word) = &words[at].token else {
        return Err(PlanError::Syntax(
            "ALTER COLUMN needs a column's name".into(),
        ));
    };
    let column =
        def.schema
            .index_of(&column_word.value)
            .ok_or_else(|| PlanError::UnknownColumn {
                name: format!("{}.{}", def.name, column_word.value),
                position: crate::bind::pos(words[at].span),
            })?;
    if def.schema.fields[column].data_type != DataType::Int64 {
        return Err(PlanError::Type(format!(
            "identity column '{}' must be an integer, not {}",
            def.schema.fields[column].name, def.schema.fields[column].data_type
        )));
    }
    // GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY
    let mut i = at + 3;
    let always = match keyword(words.get(i)) {
        Keyword::ALWAYS => {
            i += 1;
            true
        }
        Keyword::BY if keyword(words.get(i + 1)) == Keyword::DEFAULT => {
            i += 2;
            false
        }
        _ => {
            return Err(PlanError::Syntax(
                "GENERATED needs ALWAYS or BY DEFAULT".into(),
            ))
        }
    };
    if keyword(words.get(i)) != Keyword::AS || keyword(words.get(i + 1)) != Keyword::IDENTITY {
        return Err(PlanError::Syntax(
            "expected AS IDENTITY after GENERATED".into(),
        ));
    }
    i += 2;
    let mut start = 1;
    let expected_name =
        format!("{}_{}_seq", def.name, def.schema.fields[column].name).to_lowercase();
    if words.get(i).map(|t| &t.token) == Some(&Token::LParen) {
        i += 1;
        loop {
            let word = words.get(i);
            match keyword(word) {
                _ if word.map(|t| &t.token) == Some(&Token::RParen) => {
                    i += 1;
                    break;
                }
                Keyword::SEQUENCE if keyword(words.get(i + 1)) == Keyword::NAME => {
                    i += 2;
                    let mut seq = String::new();
                    while let Some(Token::Word(w)) = words.get(i).map(|t| &t.token) {
                        seq.push_str(&w.to_string());
                        i += 1;
                        if words.get(i).map(|t| &t.token) != Some(&Token::Period) {
                            break;
                        }
                        seq.push('.');
                        i += 1;
                    }
                    if unqualified(&seq) != expected_name {
                        return Err(unsupported(
                            format!(
                                "SEQUENCE NAME {seq} (weir names column {}'s sequence {expected_name})",
                                def.schema.fields[column].name
                            ),
                            words[at].span,
                        ));
                    }
                }
                Keyword::START => {
                    i += 1;
                    if keyword(words.get(i)) == Keyword::WITH {
                        i += 1;
                    }
                    start = number(&words, i, "START")?;
                    i += if words.get(i).map(|t| &t.token) == Some(&Token::Minus) {
                        2
                    } else {
                        1
                    };
                    if start < 1 {
                        return Err(PlanError::Invalid(format!(
                            "START value ({start}) of an identity column must be at least 1"
                        )));
                    }
                }
                k @ (Keyword::INCREMENT
                | Keyword::MINVALUE
                | Keyword::MAXVALUE
                | Keyword::CACHE) => {
                    i += 1;
                    if k == Keyword::INCREMENT && keyword(words.get(i)) == Keyword::BY {
                        i += 1;
                    }
                    let n = number(&words, i, &format!("{k:?}"))?;
                    i += if words.get(i).map(|t| &t.token) == Some(&Token::Minus) {
                        2
                    } else {
                        1
                    };
                    let fits = match k {
                        Keyword::INCREMENT | Keyword::MINVALUE => n == 1,
                        Keyword::MAXVALUE => n == i64::MAX,
                        _ => n >= 1,
                    };
                    if !fits {
                        return Err(unsupported(
                            format!(
                                "{k:?} {n} for an identity column (its sequence counts 1, 2, 3, ...)"
                            ),
                            words[at].span,
                        ));
                    }
                }
                // `AS integer`: the column's type is the sequence's.
                Keyword::AS => i += 2,
                Keyword::NO
                    if matches!(
                        keyword(words.get(i + 1)),
                        Keyword::MINVALUE | Keyword::MAXVALUE | Keyword::CYCLE
                    ) =>
                {
                    i += 2
                }
                _ => {
                    let what = word.map_or_else(|| "the end".to_string(), |t| t.token.to_string());
                    return Err(unsupported(
                        format!("the identity option {what}"),
                        word.map_or(words[at].span, |t| t.span),
                    ));
                }
            }
        }
    }
    if let Some(extra) = words.get(i) {
        return Err(PlanError::Syntax(format!(
            "unexpected {} after AS IDENTITY",
            extra.token
        )));
    }
    Ok(Statement::AlterTable {
        table: def.name.clone(),
        change: Some(TableChange::AddIdentity {
            column,
            always,
            start,
        }),
    })
}
