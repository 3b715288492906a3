//! Calls into a kernel: timed, for EXPLAIN ANALYZE ([`timed`]), and guarded, so that a panic
//! in a kernel (a bug) is its query's failure ([`guarded`]): without the guard the actor
//! running the kernel would die without a word, and its query would wait for its timeout
//! while the rest of the node goes on.

use crate::exec::edge::EdgeStat;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;
use weir_operators::{Error, Result};

/// Runs `work` (a call into the kernel whose output edge is `stat`) and adds the time it took
/// to the kernel's working time.
pub(crate) fn timed<T>(stat: &EdgeStat, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let done = work();
    stat.busy(started.elapsed());
    done
}

/// Runs `work` (a call into operator `op`'s kernel); a panic in it is an internal error naming
/// the operator and the panic's message. The kernel is not used again after such an error:
/// its actor fails its query and stops.
pub(crate) fn guarded<T>(op: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|payload| {
        Err(Error::Internal(format!(
            "{op} failed unexpectedly: {} (a bug in weir; the query was stopped)",
            message(payload.as_ref())
        )))
    })
}

/// A panic's message, when it has one.
fn message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_an_error_naming_the_operator_and_its_message() {
        let e = guarded::<()>("HashJoin", || panic!("index {} out of range", 7)).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("HashJoin failed unexpectedly: index 7 out of range"),
            "{text}"
        );
        let e = guarded::<()>("Sort", || std::panic::panic_any(42)).unwrap_err();
        assert!(e.to_string().contains("a panic without a message"), "{e}");
        // Errors and values pass through untouched.
        assert_eq!(guarded("Filter", || Ok(3)).unwrap(), 3);
        let e = guarded::<()>("Filter", || Err(Error::Type("bad".into()))).unwrap_err();
        assert!(matches!(e, Error::Type(_)), "{e:?}");
    }
}
