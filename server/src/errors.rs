//! weir's errors as PostgreSQL errors: each [`Error`] variant (and each planning error) has
//! its SQLSTATE, so a driver raises the exception it raises for PostgreSQL (psycopg's
//! `UniqueViolation` for 23505, JDBC's `PSQLException` with `getSQLState()`, ...).
//!
//! | weir error | SQLSTATE | condition |
//! |---|---|---|
//! | `Plan(Syntax)` | 42601 | syntax_error |
//! | `Plan(UnknownTable)`, `Plan(UnknownSequence)` | 42P01 | undefined_table |
//! | `Plan(UnknownColumn)` | 42703 | undefined_column |
//! | `Plan(AmbiguousColumn)` | 42702 | ambiguous_column |
//! | `Plan(Unsupported)` | 0A000 | feature_not_supported |
//! | `Plan(Type)`, `Plan(ParamType)` | 42804 | datatype_mismatch |
//! | `Plan(ParamCount)` | 08P01 | protocol_violation |
//! | `Plan(TableExists)`, `Plan(IndexExists)`, `Plan(RelationExists)` | 42P07 | duplicate_table |
//! | `Plan(Invalid)` | 42000 | syntax_error_or_access_rule_violation |
//! | `Plan(Depended)` | 2BP01 | dependent_objects_still_exist |
//! | `DuplicateKey`, `DuplicateUnique` | 23505 | unique_violation |
//! | `ForeignKey` | 23503 | foreign_key_violation |
//! | `CheckViolation` | 23514 | check_violation |
//! | `NullKey`, `Plan(NullValue)` | 23502 | not_null_violation |
//! | `DivisionByZero` | 22012 | division_by_zero |
//! | `Overflow` | 22003 | numeric_value_out_of_range |
//! | `Cast` | 22P02 | invalid_text_representation |
//! | `SequenceExhausted` | 2200H | sequence_generator_limit_exceeded |
//! | `SequenceUndefined` | 55000 | object_not_in_prerequisite_state |
//! | `Execution`, `Invalid` | 22000 | data_exception |
//! | `OutOfMemory`, `Killed`, `BreakerOpen` | 53200 | out_of_memory (retry later) |
//! | `Overloaded`, `AdmissionTimeout` | 53000 | insufficient_resources (retry later) |
//! | `Cancelled`, `Timeout` | 57014 | query_canceled |
//! | `NodeDown`, `ReadRefused` | 57P03 | cannot_connect_now (retry later) |
//! | `Shutdown` | 57P01 | admin_shutdown |
//! | `Disk` | 58030 | io_error |
//! | `Connect` | 08001 | sqlclient_unable_to_establish_sqlconnection |
//! | `CatalogChanged`, `WriteConflict` | 40001 | serialization_failure (run it again) |
//! | anything else | XX000 | internal_error |

use pgwire::error::{ErrorInfo, PgWireError, SEVERITY_ERROR, SEVERITY_FATAL};
use weir_planner::PlanError;
use weir_runtime::Error;

/// An error to send the client: SQLSTATE `code`, `message`.
pub fn user_error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        SEVERITY_ERROR.to_string(),
        code.to_string(),
        message.into(),
    )))
}

/// An error that ends the connection (FATAL): SQLSTATE `code`, `message`.
pub fn fatal_error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        SEVERITY_FATAL.to_string(),
        code.to_string(),
        message.into(),
    )))
}

/// The SQLSTATE of a planning error.
pub fn plan_sqlstate(e: &PlanError) -> &'static str {
    match e {
        PlanError::Syntax(_) => "42601",
        PlanError::UnknownTable(_) | PlanError::UnknownSequence(_) => "42P01",
        PlanError::UnknownColumn { .. } => "42703",
        PlanError::AmbiguousColumn(_) => "42702",
        PlanError::Unsupported { .. } => "0A000",
        PlanError::Type(_) | PlanError::ParamType { .. } => "42804",
        PlanError::ParamCount { .. } => "08P01",
        PlanError::TableExists(_) | PlanError::IndexExists(_) | PlanError::RelationExists(_) => {
            "42P07"
        }
        PlanError::Invalid(_) => "42000",
        PlanError::Depended(_) => "2BP01",
        PlanError::NullValue { .. } => "23502",
    }
}

/// The SQLSTATE of a weir error.
pub fn sqlstate(e: &Error) -> &'static str {
    match e {
        Error::Plan(p) => plan_sqlstate(p),
        Error::DuplicateKey { .. } | Error::DuplicateUnique { .. } => "23505",
        Error::ForeignKey { .. } => "23503",
        Error::CheckViolation { .. } => "23514",
        Error::NullKey { .. } => "23502",
        Error::DivisionByZero { .. } => "22012",
        Error::Overflow { .. } => "22003",
        Error::Cast { .. } => "22P02",
        Error::SequenceExhausted(_) => "2200H",
        Error::SequenceUndefined(_) => "55000",
        Error::Execution { .. } | Error::Invalid(_) => "22000",
        Error::OutOfMemory(_) | Error::Killed(_) | Error::BreakerOpen { .. } => "53200",
        Error::Overloaded(_) | Error::AdmissionTimeout { .. } => "53000",
        Error::Cancelled | Error::Timeout(_) => "57014",
        Error::NodeDown(_) | Error::ReadRefused { .. } => "57P03",
        Error::Shutdown => "57P01",
        Error::Disk { .. } => "58030",
        // disk_full: the spill quota is the disk a query may use.
        Error::SpillQuota { .. } => "53100",
        Error::Connect(_) => "08001",
        Error::CatalogChanged { .. } | Error::WriteConflict { .. } => "40001",
        _ => "XX000",
    }
}

/// A weir error as the error the client receives.
pub fn to_pg(e: Error) -> PgWireError {
    user_error(sqlstate(&e), e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_kind_of_error_has_its_sqlstate() {
        let node = || "node-1".to_string();
        let cases = [
            (Error::Plan(PlanError::Syntax("x".into())), "42601"),
            (Error::Plan(PlanError::UnknownTable("t".into())), "42P01"),
            (
                Error::Plan(PlanError::UnknownColumn {
                    name: "c".into(),
                    position: String::new(),
                }),
                "42703",
            ),
            (
                Error::DuplicateKey {
                    table: "t".into(),
                    column: "id".into(),
                    value: weir_operators::Value::Int(1),
                },
                "23505",
            ),
            (
                Error::DivisionByZero {
                    node: node(),
                    message: "x".into(),
                },
                "22012",
            ),
            (Error::OutOfMemory(node()), "53200"),
            (Error::Killed(node()), "53200"),
            (
                Error::BreakerOpen {
                    node: node(),
                    attempts: 3,
                },
                "53200",
            ),
            (Error::Overloaded("queue full".into()), "53000"),
            (Error::CatalogChanged { epoch: 4 }, "40001"),
            (
                Error::WriteConflict {
                    table: "t".into(),
                    message: "x".into(),
                },
                "40001",
            ),
            (
                Error::AdmissionTimeout {
                    node: node(),
                    waited: Duration::from_secs(1),
                    position: 2,
                },
                "53000",
            ),
            (Error::Cancelled, "57014"),
            (Error::Timeout(Duration::from_secs(1)), "57014"),
            (Error::NodeDown(node()), "57P03"),
            (
                Error::ReadRefused {
                    node: node(),
                    message: "no read lease".into(),
                },
                "57P03",
            ),
            (Error::Shutdown, "57P01"),
            (
                Error::DuplicateUnique {
                    table: "t".into(),
                    index: "t_x_key".into(),
                    key: "x = 1".into(),
                },
                "23505",
            ),
            (
                Error::ForeignKey {
                    what: "insert or update",
                    table: "child".into(),
                    constraint: "child_pid_fkey".into(),
                    detail: "key (pid) = (5) is not present in table parent".into(),
                },
                "23503",
            ),
            (
                Error::Plan(PlanError::Depended("cannot drop table 'p'".into())),
                "2BP01",
            ),
        ];
        for (e, code) in cases {
            assert_eq!(sqlstate(&e), code, "{e}");
            match to_pg(e) {
                PgWireError::UserError(info) => assert_eq!(info.code, code),
                other => panic!("{other:?}"),
            }
        }
    }
}
