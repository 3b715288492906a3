//! `ALTER SEQUENCE [IF EXISTS] name option ...`, which the SQL parser does not read: the
//! statement is taken apart by its tokens. `RESTART [[WITH] n]` is read here; the options it
//! shares with `CREATE SEQUENCE` (`AS`, `INCREMENT`, `MINVALUE`, `MAXVALUE`, `START`, `CACHE`,
//! `NO CYCLE`, `OWNED BY table.column`, `OWNED BY NONE`) are read by the parser as `CREATE
//! SEQUENCE`'s would be. `OWNER TO` changes nothing (weir has no roles); `RENAME TO`, `SET
//! ...` and `CYCLE` are refused by name.

use crate::bind::unsupported;
use crate::catalog::{Catalog, SequenceChanges};
use crate::error::PlanError;
use crate::sequence_names::unqualified;
use crate::sequences::{option_number, type_bounds};
use crate::statement::Statement;
use sqlparser::ast as sql;
use sqlparser::dialect::GenericDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The tokens of a statement without whitespace and a final semicolon.
pub(crate) fn words(tokens: &[TokenWithSpan]) -> Vec<&TokenWithSpan> {
    let mut words: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .collect();
    while words.last().is_some_and(|t| t.token == Token::SemiColon) {
        words.pop();
    }
    words
}

/// The keyword token `t` is (`NoKeyword` for any other token).
pub(crate) fn keyword(t: Option<&&TokenWithSpan>) -> Keyword {
    match t.map(|t| &t.token) {
        Some(Token::Word(w)) => w.keyword,
        _ => Keyword::NoKeyword,
    }
}

/// Whether the statement is `ALTER SEQUENCE ...`.
pub(crate) fn is_alter_sequence(tokens: &[TokenWithSpan]) -> bool {
    let words = words(tokens);
    keyword(words.first()) == Keyword::ALTER && keyword(words.get(1)) == Keyword::SEQUENCE
}

/// Plans `ALTER SEQUENCE` against `catalog`: the sequence it names (a `SERIAL` column's by
/// its `<table>_<column>_seq` name too) and what it changes.
pub(crate) fn alter_sequence(
    tokens: &[TokenWithSpan],
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let words = words(tokens);
    let mut i = 2;
    let if_exists = keyword(words.get(i)) == Keyword::IF;
    if if_exists {
        if keyword(words.get(i + 1)) != Keyword::EXISTS {
            return Err(PlanError::Syntax(
                "ALTER SEQUENCE IF must be followed by EXISTS".into(),
            ));
        }
        i += 2;
    }
    // The name: words joined by periods.
    let mut name = String::new();
    loop {
        match words.get(i).map(|t| &t.token) {
            Some(Token::Word(w)) => name.push_str(&w.to_string()),
            _ => {
                return Err(PlanError::Syntax(
                    "ALTER SEQUENCE needs the name of a sequence".into(),
                ))
            }
        }
        i += 1;
        if words.get(i).map(|t| &t.token) != Some(&Token::Period) {
            break;
        }
        name.push('.');
        i += 1;
    }
    let mut rest = &words[i..];
    match keyword(rest.first()) {
        // weir has no roles: a new owner changes nothing (as `pg_dump`'s scripts write it).
        Keyword::OWNER if keyword(rest.get(1)) == Keyword::TO && rest.len() == 3 => rest = &[],
        k @ (Keyword::RENAME | Keyword::OWNER | Keyword::SET) => {
            return Err(unsupported(
                format!("ALTER SEQUENCE ... {k:?}"),
                rest[0].span,
            ))
        }
        _ if rest.is_empty() && words.len() == i => {
            return Err(PlanError::Syntax(format!(
            "ALTER SEQUENCE {name} changes nothing: give it an option (RESTART, INCREMENT BY, ...)"
        )))
        }
        _ => {}
    }
    let (restart, options) = take_restart(rest)?;
    let mut changes = SequenceChanges {
        restart,
        ..SequenceChanges::default()
    };
    if !options.is_empty() {
        let text: Vec<String> = options.iter().map(|t| t.token.to_string()).collect();
        let create = format!("CREATE SEQUENCE s {}", text.join(" "));
        let parsed = Parser::parse_sql(&GenericDialect {}, &create)
            .map_err(|e| PlanError::Syntax(format!("ALTER SEQUENCE {name}: {e}")))?;
        let Some(sql::Statement::CreateSequence {
            sequence_options, ..
        }) = parsed.first()
        else {
            return Err(PlanError::Syntax(format!(
                "ALTER SEQUENCE {name}: options not understood"
            )));
        };
        for option in sequence_options {
            read_option(option, &mut changes, &options)?;
        }
    }
    let sequence = match catalog.resolve_sequence(&unqualified(&name)) {
        Ok(sequence) => Some(sequence),
        Err(PlanError::UnknownSequence(_)) if if_exists => None,
        Err(e) => return Err(e),
    };
    Ok(Statement::AlterSequence { sequence, changes })
}

/// The `RESTART [[WITH] n]` of an ALTER SEQUENCE's options (the last one given), and the
/// other options' tokens.
fn take_restart<'t>(
    options: &[&'t TokenWithSpan],
) -> Result<(Option<Option<i64>>, Vec<&'t TokenWithSpan>), PlanError> {
    let mut restart = None;
    let mut rest = Vec::with_capacity(options.len());
    let mut i = 0;
    while i < options.len() {
        if keyword(options.get(i)) != Keyword::RESTART {
            rest.push(options[i]);
            i += 1;
            continue;
        }
        i += 1;
        let with = keyword(options.get(i)) == Keyword::WITH;
        if with {
            i += 1;
        }
        let negative = options.get(i).map(|t| &t.token) == Some(&Token::Minus);
        let at = if negative { i + 1 } else { i };
        let value = match options.get(at).map(|t| &t.token) {
            Some(Token::Number(n, _)) => {
                i = at + 1;
                let v: i64 = n.parse().map_err(|_| {
                    PlanError::Invalid(format!("RESTART of a sequence must be an integer, not {n}"))
                })?;
                Some(if negative { -v } else { v })
            }
            _ if with => {
                return Err(PlanError::Syntax(
                    "RESTART WITH must be followed by a number".into(),
                ))
            }
            _ => None,
        };
        restart = Some(value);
    }
    Ok((restart, rest))
}

/// Records `option` in `changes`; `tokens` are the options, for the position of a refusal.
fn read_option(
    option: &sql::SequenceOptions,
    changes: &mut SequenceChanges,
    tokens: &[&TokenWithSpan],
) -> Result<(), PlanError> {
    match option {
        sql::SequenceOptions::DataType(t) => changes.of_type = Some(type_bounds(t)?),
        sql::SequenceOptions::IncrementBy(e, _) => {
            changes.increment = Some(option_number(e, "INCREMENT")?)
        }
        sql::SequenceOptions::MinValue(e) => {
            changes.min = Some(
                e.as_ref()
                    .map(|e| option_number(e, "MINVALUE"))
                    .transpose()?,
            )
        }
        sql::SequenceOptions::MaxValue(e) => {
            changes.max = Some(
                e.as_ref()
                    .map(|e| option_number(e, "MAXVALUE"))
                    .transpose()?,
            )
        }
        sql::SequenceOptions::StartWith(e, _) => changes.start = Some(option_number(e, "START")?),
        sql::SequenceOptions::Cache(e) => {
            if option_number(e, "CACHE")? < 1 {
                return Err(PlanError::Invalid(format!(
                    "CACHE of a sequence must be at least 1, not {e}"
                )));
            }
        }
        sql::SequenceOptions::Cycle(true) => {}
        sql::SequenceOptions::OwnedBy(None) => changes.owned_by = Some(None),
        sql::SequenceOptions::Cycle(false) => {
            return Err(unsupported(
                "ALTER SEQUENCE ... CYCLE (a sequence stops at its bound)",
                tokens[0].span,
            ))
        }
        sql::SequenceOptions::OwnedBy(Some(column)) => {
            changes.owned_by = Some(Some(crate::sequences::owning_column(column)?))
        }
    }
    Ok(())
}
