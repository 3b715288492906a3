//! Scalar expressions over the columns of a batch, as produced by the planner.
//!
//! Column references are positional (resolved by the planner); evaluation lives in
//! [`crate::eval`] and works a batch at a time.

use crate::functions::ScalarFunc;
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

    /// The result type of this arithmetic operator (`+ - * / %`) on numeric operands of
    /// types `a` and `b`: BIGINT for two integers, DOUBLE if either is DOUBLE or for decimal
    /// division; otherwise DECIMAL with PostgreSQL's scale rules (`+ - %` the larger scale,
    /// `*` the sum of the scales). `None` when an operand is not numeric.
    pub fn arithmetic_result(self, a: DataType, b: DataType) -> Option<DataType> {
        use BinaryOp as O;
        let u = DataType::numeric_union(a, b)?;
        if !matches!(u, DataType::Decimal { .. }) {
            return Some(u);
        }
        let ((pa, sa), (pb, sb)) = (a.as_decimal()?, b.as_decimal()?);
        Some(match self {
            O::Mul => DataType::decimal(pa.saturating_add(pb), sa.saturating_add(sb)),
            O::Div => DataType::Float64,
            O::Add | O::Sub => {
                let DataType::Decimal { precision, scale } = u else {
                    return Some(u);
                };
                DataType::decimal(precision.saturating_add(1), scale)
            }
            _ => u,
        })
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

/// A typed scalar expression. Every variant's result type is known at plan time. Decoded ones
/// nest at most [`crate::decode::MAX_DECODE_DEPTH`] levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub enum Expr {
    /// The input column at this position.
    Column(usize),
    /// A constant.
    Literal(Value),
    /// Positional parameter (0-based), bound at execution.
    Param(usize),
    /// Column `i` of the enclosing query's row, inside a correlated subquery. Only the
    /// planner sees it: decorrelation turns it into a join condition before execution, and
    /// evaluating it is an error.
    OuterColumn(usize),
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
    /// `expr [NOT] LIKE pattern [ESCAPE c]` with `%` and `_` wildcards.
    Like {
        /// Tested string expression.
        expr: Box<Expr>,
        /// Pattern expression (usually a literal or parameter).
        pattern: Box<Expr>,
        /// `NOT LIKE` when true.
        negated: bool,
        /// The escape character: before `%`, `_` or itself it matches that character.
        escape: Option<char>,
    },
    /// `CASE [operand] WHEN w THEN t ... [ELSE e] END`. With an operand, a branch is taken
    /// where `operand = w`; without, where `w` is TRUE. No branch and no ELSE gives NULL. A
    /// branch's result is evaluated only on the rows that take it.
    Case {
        /// The operand of a simple CASE.
        operand: Option<Box<Expr>>,
        /// `(WHEN, THEN)` pairs, in order.
        branches: Vec<(Expr, Expr)>,
        /// The ELSE result.
        else_result: Option<Box<Expr>>,
    },
    /// A scalar function call.
    Function {
        /// The function.
        func: ScalarFunc,
        /// Its arguments.
        args: Vec<Expr>,
    },
    /// `CAST(expr AS to)`.
    Cast {
        /// Converted expression.
        expr: Box<Expr>,
        /// Target type.
        to: DataType,
    },
}

crate::decode::checked_serde!(Expr, nested "an expression");

impl Expr {
    /// A column reference.
    pub fn col(i: usize) -> Expr {
        Expr::Column(i)
    }

    /// The column `self` refers to, when it is a plain column reference.
    pub fn column_index(&self) -> Option<usize> {
        match self {
            Expr::Column(i) => Some(*i),
            _ => None,
        }
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

    /// The direct sub-expressions, in evaluation order.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Column(_) | Expr::OuterColumn(_) | Expr::Literal(_) | Expr::Param(_) => vec![],
            Expr::Binary { left, right, .. } => vec![left, right],
            Expr::Not(e) | Expr::Negate(e) | Expr::IsNull { expr: e, .. } => vec![e],
            Expr::Cast { expr, .. } => vec![expr],
            Expr::InList { expr, list, .. } => {
                let mut v: Vec<&Expr> = vec![expr];
                v.extend(list);
                v
            }
            Expr::Between {
                expr, low, high, ..
            } => vec![expr, low, high],
            Expr::Like { expr, pattern, .. } => vec![expr, pattern],
            Expr::Case {
                operand,
                branches,
                else_result,
            } => {
                let mut v: Vec<&Expr> = operand.iter().map(|e| &**e).collect();
                for (w, t) in branches {
                    v.push(w);
                    v.push(t);
                }
                v.extend(else_result.iter().map(|e| &**e));
                v
            }
            Expr::Function { args, .. } => args.iter().collect(),
        }
    }

    /// The same node with every direct sub-expression replaced by `f` of it.
    pub fn map_children(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> Expr {
        let mut b = |e: &Expr| Box::new(f(e));
        match self {
            Expr::Column(_) | Expr::OuterColumn(_) | Expr::Literal(_) | Expr::Param(_) => {
                self.clone()
            }
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
                list: list.iter().map(|e| *b(e)).collect(),
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
                escape,
            } => Expr::Like {
                expr: b(expr),
                pattern: b(pattern),
                negated: *negated,
                escape: *escape,
            },
            Expr::Case {
                operand,
                branches,
                else_result,
            } => Expr::Case {
                operand: operand.as_deref().map(&mut b),
                branches: branches.iter().map(|(w, t)| (*b(w), *b(t))).collect(),
                else_result: else_result.as_deref().map(&mut b),
            },
            Expr::Function { func, args } => Expr::Function {
                func: *func,
                args: args.iter().map(|e| *b(e)).collect(),
            },
        }
    }

    /// Rewrites the tree top-down: where `f` returns a replacement it is used as is (its
    /// children are not visited); elsewhere the node is kept and its children rewritten.
    pub fn transform(&self, f: &mut dyn FnMut(&Expr) -> Option<Expr>) -> Expr {
        match f(self) {
            Some(e) => e,
            None => self.map_children(&mut |c| c.transform(f)),
        }
    }

    /// Whether `pred` holds for this node or any node below it.
    pub fn any(&self, pred: &dyn Fn(&Expr) -> bool) -> bool {
        pred(self) || self.children().into_iter().any(|c| c.any(pred))
    }

    /// Whether the expression calls a function whose value changes from call to call
    /// (`random()`): it is evaluated for each row, never folded into a constant nor read once
    /// for a whole scan.
    pub fn is_volatile(&self) -> bool {
        self.any(&|e| matches!(e, Expr::Function { func, .. } if func.is_volatile()))
    }

    /// Calls `f` on every column index this expression reads (outer references excluded).
    pub fn visit_columns(&self, f: &mut dyn FnMut(usize)) {
        match self {
            Expr::Column(i) => f(*i),
            other => other
                .children()
                .into_iter()
                .for_each(|c| c.visit_columns(f)),
        }
    }

    /// The conjuncts of a conjunction (`a AND b AND c` gives `[a, b, c]`; anything else is
    /// its own one conjunct), left to right.
    pub fn conjuncts(&self) -> Vec<&Expr> {
        let mut out = Vec::new();
        let mut todo = vec![self];
        while let Some(e) = todo.pop() {
            match e {
                Expr::Binary {
                    op: BinaryOp::And,
                    left,
                    right,
                } => {
                    todo.push(right);
                    todo.push(left);
                }
                other => out.push(other),
            }
        }
        out
    }

    /// Rewrites every column index through `map` (used when inputs are pruned or reordered).
    pub fn map_columns(&self, map: &dyn Fn(usize) -> usize) -> Expr {
        self.transform(&mut |e| match e {
            Expr::Column(i) => Some(Expr::Column(map(*i))),
            _ => None,
        })
    }
}

impl Expr {
    /// Renders the expression as SQL, naming column `i` by `col(i)`.
    pub fn render(&self, col: &dyn Fn(usize) -> String) -> String {
        let f = |e: &Expr| e.render(col);
        let not = |n: bool| if n { "NOT " } else { "" };
        match self {
            Expr::Column(i) => col(*i),
            Expr::Literal(Value::Str(s)) => format!("'{}'", s.replace('\'', "''")),
            Expr::Literal(v) => v.to_sql(),
            Expr::Param(i) => format!("${}", i + 1),
            Expr::OuterColumn(i) => format!("outer.#{i}"),
            Expr::Binary { op, left, right } => {
                format!("({} {} {})", f(left), op.symbol(), f(right))
            }
            Expr::Not(e) => format!("NOT {}", f(e)),
            Expr::Negate(e) => format!("-{}", f(e)),
            Expr::IsNull { expr, negated } => format!("{} IS {}NULL", f(expr), not(*negated)),
            Expr::InList {
                expr,
                list,
                negated,
            } => format!(
                "{} {}IN ({})",
                f(expr),
                not(*negated),
                list.iter().map(f).collect::<Vec<_>>().join(", ")
            ),
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => format!(
                "{} {}BETWEEN {} AND {}",
                f(expr),
                not(*negated),
                f(low),
                f(high)
            ),
            Expr::Like {
                expr,
                pattern,
                negated,
                escape,
            } => {
                let esc = escape.map_or(String::new(), |c| format!(" ESCAPE '{c}'"));
                format!("{} {}LIKE {}{esc}", f(expr), not(*negated), f(pattern))
            }
            Expr::Cast { expr, to } => format!("CAST({} AS {to})", f(expr)),
            Expr::Case {
                operand,
                branches,
                else_result,
            } => {
                let mut out = String::from("CASE");
                if let Some(o) = operand {
                    out.push(' ');
                    out.push_str(&f(o));
                }
                for (w, t) in branches {
                    out.push_str(&format!(" WHEN {} THEN {}", f(w), f(t)));
                }
                if let Some(e) = else_result {
                    out.push_str(&format!(" ELSE {}", f(e)));
                }
                out.push_str(" END");
                out
            }
            Expr::Function {
                func: ScalarFunc::ConcatOp,
                args,
            } => format!("({})", args.iter().map(f).collect::<Vec<_>>().join(" || ")),
            Expr::Function {
                func:
                    func @ (ScalarFunc::BitAnd
                    | ScalarFunc::BitOr
                    | ScalarFunc::ShiftLeft
                    | ScalarFunc::ShiftRight),
                args,
            } => format!(
                "({})",
                args.iter()
                    .map(f)
                    .collect::<Vec<_>>()
                    .join(&format!(" {} ", func.name()))
            ),
            Expr::Function {
                func: ScalarFunc::BitNot,
                args,
            } => format!("(~{})", args.iter().map(f).collect::<Vec<_>>().join("")),
            Expr::Function { func, args } => format!(
                "{}({})",
                func.name(),
                args.iter().map(f).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(&|i| format!("#{i}")))
    }
}
