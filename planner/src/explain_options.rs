//! What an EXPLAIN statement asks for: ANALYZE and VERBOSE, written as keywords (`EXPLAIN
//! ANALYZE VERBOSE ...`) or as PostgreSQL's options in parentheses (`EXPLAIN (ANALYZE,
//! VERBOSE false) ...`). Any other option, an output format but TEXT and `EXPLAIN ESTIMATE`
//! are refused by name rather than ignored.

use crate::bind::unsupported;
use crate::error::PlanError;
use sqlparser::ast as sql;
use sqlparser::tokenizer::Span;

/// The options of one EXPLAIN.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ExplainOptions {
    /// Run the query and count what each operator outputs.
    pub(crate) analyze: bool,
    /// Show the logical plans too.
    pub(crate) verbose: bool,
}

impl ExplainOptions {
    /// Reads the keywords `analyze` and `verbose`, the parenthesized `options` and the
    /// `format` of an EXPLAIN at `span`.
    pub(crate) fn read(
        analyze: bool,
        verbose: bool,
        estimate: bool,
        format: Option<&sql::AnalyzeFormatKind>,
        options: Option<&[sql::UtilityOption]>,
        span: Span,
    ) -> Result<ExplainOptions, PlanError> {
        if estimate {
            return Err(unsupported("EXPLAIN ESTIMATE", span));
        }
        if let Some(sql::AnalyzeFormatKind::Keyword(f) | sql::AnalyzeFormatKind::Assignment(f)) =
            format
        {
            if *f != sql::AnalyzeFormat::TEXT {
                return Err(unsupported(format!("EXPLAIN FORMAT {f}"), span));
            }
        }
        let mut asked = ExplainOptions { analyze, verbose };
        for option in options.unwrap_or_default() {
            match option.name.value.to_ascii_lowercase().as_str() {
                "analyze" => asked.analyze = switch(option)?,
                "verbose" => asked.verbose = switch(option)?,
                "format" => {
                    return Err(unsupported(
                        "EXPLAIN (FORMAT ...) (weir writes text)",
                        option.name.span,
                    ))
                }
                _ => {
                    return Err(unsupported(
                        format!("the EXPLAIN option {}", option.name.value.to_uppercase()),
                        option.name.span,
                    ))
                }
            }
        }
        Ok(asked)
    }
}

/// A boolean option's value, as PostgreSQL reads it: absent, `TRUE`/`ON`/`1` for on,
/// `FALSE`/`OFF`/`0` for off.
fn switch(option: &sql::UtilityOption) -> Result<bool, PlanError> {
    let Some(arg) = &option.arg else {
        return Ok(true);
    };
    let word = match arg {
        sql::Expr::Value(v) => match &v.value {
            sql::Value::Boolean(b) => return Ok(*b),
            sql::Value::Number(n, _) => n.clone(),
            sql::Value::SingleQuotedString(s) => s.clone(),
            _ => String::new(),
        },
        sql::Expr::Identifier(id) => id.value.clone(),
        _ => String::new(),
    };
    match word.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(PlanError::Invalid(format!(
            "{} requires a Boolean value, got {arg}{}",
            option.name.value.to_uppercase(),
            crate::error::at(option.name.span)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::ast::Spanned;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    fn options(sql: &str) -> Result<ExplainOptions, PlanError> {
        let stmt = Parser::parse_sql(&GenericDialect {}, sql)
            .unwrap()
            .remove(0);
        let sql::Statement::Explain {
            analyze,
            verbose,
            estimate,
            format,
            options,
            ..
        } = &stmt
        else {
            panic!("not an EXPLAIN: {sql}");
        };
        ExplainOptions::read(
            *analyze,
            *verbose,
            *estimate,
            format.as_ref(),
            options.as_deref(),
            stmt.span(),
        )
    }

    #[test]
    fn keywords_and_parenthesized_options_say_the_same() {
        let both = ExplainOptions {
            analyze: true,
            verbose: true,
        };
        assert_eq!(options("EXPLAIN ANALYZE VERBOSE SELECT 1").unwrap(), both);
        assert_eq!(
            options("EXPLAIN (ANALYZE, VERBOSE) SELECT 1").unwrap(),
            both
        );
        assert_eq!(
            options("EXPLAIN (analyze on, verbose false) SELECT 1").unwrap(),
            ExplainOptions {
                analyze: true,
                verbose: false
            }
        );
        assert_eq!(
            options("EXPLAIN (ANALYZE 0) SELECT 1").unwrap(),
            ExplainOptions::default()
        );
    }

    #[test]
    fn other_options_and_formats_are_refused_by_name() {
        let e = options("EXPLAIN (ANALYZE, BUFFERS) SELECT 1").unwrap_err();
        assert!(e.to_string().contains("the EXPLAIN option BUFFERS"), "{e}");
        let e = options("EXPLAIN (FORMAT JSON) SELECT 1").unwrap_err();
        assert!(e.to_string().contains("EXPLAIN (FORMAT ...)"), "{e}");
        let e = options("EXPLAIN FORMAT JSON SELECT 1").unwrap_err();
        assert!(e.to_string().contains("EXPLAIN FORMAT JSON"), "{e}");
        let e = options("EXPLAIN (ANALYZE maybe) SELECT 1").unwrap_err();
        assert!(
            e.to_string().contains("ANALYZE requires a Boolean value"),
            "{e}"
        );
        assert!(options("EXPLAIN FORMAT TEXT SELECT 1").is_ok());
    }
}
