//! Calls of scalar functions ([`crate::functions`]) in an expression: the type a call
//! computes, and its evaluated arguments turned into columns of one length for the function
//! (of one row when every argument is a scalar). `NULLIF` is module `case`'s.

use super::val::{owned, to_scalar, Val};
use crate::column::Column;
use crate::error::Result;
use crate::functions::{self, ScalarFunc};
use crate::types::DataType;

/// Calls `func` on its evaluated arguments `vals` over a batch of `n` rows.
pub(super) fn call<'a>(func: ScalarFunc, vals: Vec<Val<'a>>, n: usize) -> Result<Val<'a>> {
    // A volatile function makes a value per row even from constant arguments.
    let all_scalar = !func.is_volatile() && vals.iter().all(Val::is_scalar);
    let len = if all_scalar { 1 } else { n };
    let types: Vec<Option<DataType>> = vals.iter().map(Val::dt).collect();
    let out = func.result_type(&types);
    let cols: Vec<Column> = vals.into_iter().map(|v| v.into_column(len, out)).collect();
    let col = functions::call(func, &cols, len, out)?;
    Ok(if all_scalar {
        to_scalar(owned(col))
    } else {
        owned(col)
    })
}

#[cfg(test)]
mod tests {
    use crate::eval::evaluate_scalar;
    use crate::eval::testing::{run, vals};
    use crate::{DataType, Expr, ScalarFunc, Value};

    #[test]
    fn coalesce_nullif_and_functions() {
        let f = |func, args| Expr::Function { func, args };
        let e = f(
            ScalarFunc::Coalesce,
            vec![
                Expr::col(1),
                Expr::Cast {
                    expr: Box::new(Expr::col(0)),
                    to: DataType::Float64,
                },
                Expr::lit(0.5),
            ],
        );
        assert_eq!(
            vals(&e),
            vec![1.5.into(), 2.0.into(), 3.0.into(), (-1.0).into()]
        );
        let e = f(ScalarFunc::NullIf, vec![Expr::col(0), Expr::lit(2)]);
        assert_eq!(vals(&e), vec![1.into(), Value::Null, Value::Null, 4.into()]);
        let e = f(ScalarFunc::NullIf, vec![Expr::lit(2), Expr::lit(2)]);
        assert_eq!(evaluate_scalar(&e, &[]).unwrap(), Value::Null);
        let e = f(ScalarFunc::Upper, vec![Expr::col(2)]);
        assert_eq!(
            vals(&e),
            vec![
                "APPLE".into(),
                "BANANA".into(),
                Value::Null,
                "CHERRY".into()
            ]
        );
        let e = f(ScalarFunc::ConcatOp, vec![Expr::lit("a"), Expr::lit("b")]);
        assert_eq!(evaluate_scalar(&e, &[]).unwrap(), Value::from("ab"));
        let e = f(ScalarFunc::Abs, vec![Expr::lit(Value::Null)]);
        assert_eq!(evaluate_scalar(&e, &[]).unwrap(), Value::Null);
        let e = f(ScalarFunc::Length, vec![Expr::col(2)]);
        assert_eq!(vals(&e), vec![5.into(), 6.into(), Value::Null, 6.into()]);
    }

    #[test]
    fn extract_and_date_trunc() {
        let d = Expr::lit(Value::Date(
            crate::temporal::parse_date("2024-05-19").unwrap(),
        ));
        let f = |func, part: &str| Expr::Function {
            func,
            args: vec![Expr::lit(part), d.clone()],
        };
        assert_eq!(
            run(&f(ScalarFunc::Extract, "year")).unwrap(),
            Value::Int(2024)
        );
        assert_eq!(
            run(&f(ScalarFunc::Extract, "quarter")).unwrap(),
            Value::Int(2)
        );
        assert_eq!(run(&f(ScalarFunc::Extract, "dow")).unwrap(), Value::Int(0));
        assert_eq!(
            run(&f(ScalarFunc::DateTrunc, "month")).unwrap().to_string(),
            "2024-05-01"
        );
        assert!(run(&f(ScalarFunc::Extract, "fortnight")).is_err());
    }
}
