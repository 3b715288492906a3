//! Collations: weir orders and compares text by its bytes (UTF-8, so by code point), which is
//! PostgreSQL's `"C"` collation. `COLLATE "C"`, `"POSIX"`, `ucs_basic` and `"default"` (weir's
//! default is that order) are accepted on columns and expressions, with or without
//! `pg_catalog.`; any other collation is refused, naming it.

use crate::error::PlanError;
use sqlparser::ast as sql;

/// Whether `name` is a collation that orders text by its bytes, as weir always does.
pub(crate) fn is_byte_order(name: &sql::ObjectName) -> bool {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| p.to_string().trim_matches('"').to_lowercase())
        .collect();
    let last = match parts.as_slice() {
        [last] => last,
        [schema, last] if schema == "pg_catalog" => last,
        _ => return false,
    };
    matches!(last.as_str(), "c" | "posix" | "ucs_basic" | "default")
}

/// The error for a collation weir does not have, given `place` (` on column 'a'`, or empty).
pub(crate) fn unsupported(
    name: &sql::ObjectName,
    place: &str,
    span: sqlparser::tokenizer::Span,
) -> PlanError {
    crate::error::unsupported(
        format!(
            "COLLATE {name}{place} (weir orders text by its bytes, as COLLATE \"C\": only \
             \"C\", \"POSIX\", ucs_basic and \"default\" are accepted)"
        ),
        span,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(parts: &[&str]) -> sql::ObjectName {
        sql::ObjectName::from(
            parts
                .iter()
                .map(|p| sql::Ident::new(*p))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn only_the_byte_order_collations_are_accepted() {
        assert!(is_byte_order(&name(&["C"])));
        assert!(is_byte_order(&name(&["pg_catalog", "default"])));
        assert!(is_byte_order(&name(&["POSIX"])));
        assert!(!is_byte_order(&name(&["en_US"])));
        assert!(!is_byte_order(&name(&["other", "C"])));
    }
}
