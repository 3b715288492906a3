//! Mathematical functions on DOUBLE, as PostgreSQL has them: logarithms and exponentials
//! (`ln`, `log`, `log10`, `exp`), roots (`cbrt`), trigonometry (`sin`, `cos`, `tan`, `asin`,
//! `acos`, `atan`, `atan2`), angle conversion (`degrees`, `radians`) and `pi()`. An argument
//! outside a function's domain is an error, as PostgreSQL's (`cannot take logarithm of zero`,
//! `input is out of range`), and a result past DOUBLE's range an overflow error.

use super::catalogue::{MathFunc, ScalarFunc};
use super::support::{all_valid, type_err};
use crate::column::{Column, ColumnBuilder};
use crate::error::{Error, Result};
use crate::types::DataType;

/// The logarithm of `x` in base `base`, or why there is none.
fn log_of(x: f64, base: f64) -> Result<f64> {
    if x == 0.0 || base == 0.0 {
        return Err(Error::Arithmetic("cannot take logarithm of zero".into()));
    }
    if x < 0.0 || base < 0.0 {
        return Err(Error::Arithmetic(
            "cannot take logarithm of a negative number".into(),
        ));
    }
    if base == 1.0 {
        return Err(Error::DivisionByZero("division by zero".into()));
    }
    Ok(if base == 10.0 {
        x.log10()
    } else {
        x.ln() / base.ln()
    })
}

/// `f(x)` for a function of one argument, or why not.
fn one(func: MathFunc, x: f64) -> Result<f64> {
    use MathFunc as F;
    let in_range = |ok: bool, r: f64| {
        if ok || x.is_nan() {
            Ok(r)
        } else {
            Err(Error::Arithmetic("input is out of range".into()))
        }
    };
    match func {
        F::Ln => log_of(x, std::f64::consts::E),
        F::Log | F::Log10 => log_of(x, 10.0),
        F::Exp => Ok(x.exp()),
        F::Cbrt => Ok(x.cbrt()),
        F::Sin | F::Cos | F::Tan => {
            let r = match func {
                F::Sin => x.sin(),
                F::Cos => x.cos(),
                _ => x.tan(),
            };
            in_range(x.is_finite(), r)
        }
        F::Asin => in_range((-1.0..=1.0).contains(&x), x.asin()),
        F::Acos => in_range((-1.0..=1.0).contains(&x), x.acos()),
        F::Atan => Ok(x.atan()),
        F::Degrees => Ok(x.to_degrees()),
        F::Radians => Ok(x.to_radians()),
        _ => Err(Error::Internal(format!(
            "{} takes one argument",
            func.name()
        ))),
    }
}

/// Evaluates one of this module's functions over DOUBLE `args` of `n` rows each.
pub(super) fn call(func: MathFunc, args: &[Column], n: usize) -> Result<Column> {
    use MathFunc as F;
    let mut b = ColumnBuilder::new(DataType::Float64, n);
    if func == F::Pi {
        for _ in 0..n {
            b.push_f64(std::f64::consts::PI);
        }
        return Ok(b.finish());
    }
    let x = args[0]
        .as_f64()
        .ok_or_else(|| type_err(ScalarFunc::Math(func), args))?;
    let y = match args.get(1) {
        Some(c) => Some(
            c.as_f64()
                .ok_or_else(|| type_err(ScalarFunc::Math(func), args))?,
        ),
        None => None,
    };
    for i in 0..n {
        if !all_valid(args, i) {
            b.push_null();
            continue;
        }
        let r = match (func, y) {
            // log(b, x): the logarithm of x in base b.
            (F::Log, Some(y)) => log_of(y[i], x[i])?,
            (F::Atan2, Some(y)) => x[i].atan2(y[i]),
            _ => one(func, x[i])?,
        };
        if r.is_infinite() && x[i].is_finite() && y.is_none_or(|y| y[i].is_finite()) {
            return Err(Error::Overflow(format!(
                "DOUBLE overflow in {}",
                func.name()
            )));
        }
        b.push_f64(r);
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(func: MathFunc, args: &[f64]) -> Result<f64> {
        let cols: Vec<Column> = args.iter().map(|&a| Column::from_f64(vec![a])).collect();
        let c = call(func, &cols, 1)?;
        Ok(c.as_f64().expect("a DOUBLE column")[0])
    }

    #[test]
    fn logarithms_refuse_zero_and_negative_numbers_and_base_one() {
        assert!((eval(MathFunc::Ln, &[std::f64::consts::E]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(eval(MathFunc::Log, &[1000.0]).unwrap(), 3.0);
        assert_eq!(eval(MathFunc::Log10, &[0.01]).unwrap(), -2.0);
        assert!((eval(MathFunc::Log, &[2.0, 8.0]).unwrap() - 3.0).abs() < 1e-12);
        let err = |f, a: &[f64]| eval(f, a).unwrap_err().to_string();
        assert!(err(MathFunc::Ln, &[0.0]).contains("logarithm of zero"));
        assert!(err(MathFunc::Log, &[-1.0]).contains("negative number"));
        assert!(err(MathFunc::Log, &[1.0, 5.0]).contains("division by zero"));
    }

    #[test]
    fn trigonometry_checks_its_domain_and_exp_overflows_as_an_error() {
        assert_eq!(
            eval(MathFunc::Asin, &[1.0]).unwrap(),
            std::f64::consts::FRAC_PI_2
        );
        assert!(eval(MathFunc::Acos, &[1.5]).is_err());
        assert!(eval(MathFunc::Sin, &[f64::INFINITY]).is_err());
        assert_eq!(
            eval(MathFunc::Atan2, &[1.0, 0.0]).unwrap(),
            std::f64::consts::FRAC_PI_2
        );
        assert_eq!(
            eval(MathFunc::Degrees, &[std::f64::consts::PI]).unwrap(),
            180.0
        );
        assert_eq!(eval(MathFunc::Cbrt, &[-27.0]).unwrap(), -3.0);
        assert!(eval(MathFunc::Exp, &[1000.0]).is_err());
        assert_eq!(eval(MathFunc::Exp, &[f64::NEG_INFINITY]).unwrap(), 0.0);
    }
}
