//! Scalar expressions over the columns of a batch, as produced by the planner.
//!
//! Column references are positional (resolved by the planner); evaluation lives in
//! [`crate::eval`] and works a batch at a time.

use crate::types::DataType;
use crate::value::Value;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `=`
    Eq,
    /// `<>` or `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `AND` (three-valued)
    And,
    /// `OR` (three-valued)
    Or,
}

impl BinaryOp {
    /// Whether the operator compares its operands and yields a boolean.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
        )
    }

    /// Whether the operator is arithmetic.
    pub fn is_arithmetic(self) -> bool {
        matches!(
            self,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod
        )
    }

    /// The SQL spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
        }
    }
}

/// A typed scalar expression. Every variant's result type is known at plan time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// The input column at this position.
    Column(usize),
    /// A constant.
    Literal(Value),
    /// Positional parameter (0-based), bound at execution.
    Param(usize),
    /// `left op right`. Integer arithmetic stays integer (errors on overflow and division by
    /// zero); mixing an integer and a float gives a float.
    Binary {
        /// Operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// `NOT expr` (three-valued).
    Not(Box<Expr>),
    /// `-expr`.
    Negate(Box<Expr>),
    /// `expr IS NULL` or, with `negated`, `expr IS NOT NULL`. Never NULL itself.
    IsNull {
        /// Tested expression.
        expr: Box<Expr>,
        /// `IS NOT NULL` when true.
        negated: bool,
    },
    /// `expr [NOT] IN (list)`, with SQL NULL semantics.
    InList {
        /// Tested expression.
        expr: Box<Expr>,
        /// Candidate values.
        list: Vec<Expr>,
        /// `NOT IN` when true.
        negated: bool,
    },
    /// `expr [NOT] BETWEEN low AND high` (inclusive).
    Between {
        /// Tested expression.
        expr: Box<Expr>,
        /// Lower bound.
        low: Box<Expr>,
        /// Upper bound.
        high: Box<Expr>,
        /// `NOT BETWEEN` when true.
        negated: bool,
    },
    /// `expr [NOT] LIKE pattern` with `%` and `_` wildcards.
    Like {
        /// Tested string expression.
        expr: Box<Expr>,
        /// Pattern expression (usually a literal or parameter).
        pattern: Box<Expr>,
        /// `NOT LIKE` when true.
        negated: bool,
    },
    /// `CAST(expr AS to)`.
    Cast {
        /// Converted expression.
        expr: Box<Expr>,
        /// Target type.
        to: DataType,
    },
}

impl Expr {
    /// A column reference.
    pub fn col(i: usize) -> Expr {
        Expr::Column(i)
    }

    /// A literal.
    pub fn lit(v: impl Into<Value>) -> Expr {
        Expr::Literal(v.into())
    }

    /// `self op right`.
    pub fn binary(self, op: BinaryOp, right: Expr) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(self),
            right: Box::new(right),
        }
    }

    /// `self = right`.
    pub fn eq(self, right: Expr) -> Expr {
        self.binary(BinaryOp::Eq, right)
    }

    /// `self AND right`.
    pub fn and(self, right: Expr) -> Expr {
        self.binary(BinaryOp::And, right)
    }

    /// Calls `f` on every column index this expression reads.
    pub fn visit_columns(&self, f: &mut dyn FnMut(usize)) {
        match self {
            Expr::Column(i) => f(*i),
            Expr::Literal(_) | Expr::Param(_) => {}
            Expr::Binary { left, right, .. } => {
                left.visit_columns(f);
                right.visit_columns(f);
            }
            Expr::Not(e) | Expr::Negate(e) | Expr::IsNull { expr: e, .. } => e.visit_columns(f),
            Expr::Cast { expr, .. } => expr.visit_columns(f),
            Expr::InList { expr, list, .. } => {
                expr.visit_columns(f);
                list.iter().for_each(|e| e.visit_columns(f));
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                expr.visit_columns(f);
                low.visit_columns(f);
                high.visit_columns(f);
            }
            Expr::Like { expr, pattern, .. } => {
                expr.visit_columns(f);
                pattern.visit_columns(f);
            }
        }
    }

    /// Rewrites every column index through `map` (used when inputs are pruned or reordered).
    pub fn map_columns(&self, map: &dyn Fn(usize) -> usize) -> Expr {
        let b = |e: &Expr| Box::new(e.map_columns(map));
        match self {
            Expr::Column(i) => Expr::Column(map(*i)),
            Expr::Literal(_) | Expr::Param(_) => self.clone(),
            Expr::Binary { op, left, right } => Expr::Binary {
                op: *op,
                left: b(left),
                right: b(right),
            },
            Expr::Not(e) => Expr::Not(b(e)),
            Expr::Negate(e) => Expr::Negate(b(e)),
            Expr::IsNull { expr, negated } => Expr::IsNull {
                expr: b(expr),
                negated: *negated,
            },
            Expr::Cast { expr, to } => Expr::Cast {
                expr: b(expr),
                to: *to,
            },
            Expr::InList {
                expr,
                list,
                negated,
            } => Expr::InList {
                expr: b(expr),
                list: list.iter().map(|e| e.map_columns(map)).collect(),
                negated: *negated,
            },
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => Expr::Between {
                expr: b(expr),
                low: b(low),
                high: b(high),
                negated: *negated,
            },
            Expr::Like {
                expr,
                pattern,
                negated,
            } => Expr::Like {
                expr: b(expr),
                pattern: b(pattern),
                negated: *negated,
            },
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column(i) => write!(f, "#{i}"),
            Expr::Literal(Value::Str(s)) => write!(f, "'{s}'"),
            Expr::Literal(v) => write!(f, "{v}"),
            Expr::Param(i) => write!(f, "${}", i + 1),
            Expr::Binary { op, left, right } => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Not(e) => write!(f, "NOT {e}"),
            Expr::Negate(e) => write!(f, "-{e}"),
            Expr::IsNull { expr, negated } => {
                write!(f, "{expr} IS {}NULL", if *negated { "NOT " } else { "" })
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                write!(f, "{expr} {}IN (", if *negated { "NOT " } else { "" })?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(")")
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => write!(
                f,
                "{expr} {}BETWEEN {low} AND {high}",
                if *negated { "NOT " } else { "" }
            ),
            Expr::Like {
                expr,
                pattern,
                negated,
            } => write!(
                f,
                "{expr} {}LIKE {pattern}",
                if *negated { "NOT " } else { "" }
            ),
            Expr::Cast { expr, to } => write!(f, "CAST({expr} AS {to})"),
        }
    }
}
