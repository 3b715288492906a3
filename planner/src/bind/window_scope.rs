//! What the binder keeps of the window functions of the SELECT it is binding: its `WINDOW`
//! clause, whether the clause being bound may hold window functions, and the calls met so
//! far, each standing in its expression as a placeholder column until the windows are placed
//! over the SELECT's rows.

use sqlparser::ast::{self as sql, Visit, Visitor};
use std::ops::ControlFlow;
use weir_operators::plan::{SortKey, WindowExpr};
use weir_operators::Expr;

/// Placeholder columns for window results: an expression refers to the `k`-th window call
/// of its SELECT as `Column(WINDOW_SLOT + k)` until the windows are placed.
pub(crate) const WINDOW_SLOT: usize = usize::MAX / 8;

/// A window function call, bound over the rows its window reads (the SELECT's rows after
/// WHERE, or its groups after HAVING).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WindowCall {
    /// Partition keys.
    pub partition_by: Vec<Expr>,
    /// Order within a partition.
    pub order_by: Vec<SortKey>,
    /// The function, its arguments and frame.
    pub function: WindowExpr,
    /// Its column's name.
    pub name: String,
}

impl WindowCall {
    /// The call with every expression it reads over the rows (partition keys, ORDER BY,
    /// arguments) replaced by `f` of it.
    pub fn map_exprs(&mut self, f: &dyn Fn(&Expr) -> Expr) {
        self.partition_by.iter_mut().for_each(|e| *e = f(e));
        self.order_by.iter_mut().for_each(|k| k.expr = f(&k.expr));
        self.function.args.iter_mut().for_each(|e| *e = f(e));
    }
}

/// The window functions of one SELECT.
#[derive(Debug, Default)]
pub(crate) struct WindowScope {
    /// The `WINDOW` clause's definitions, in order.
    pub named: Vec<sql::NamedWindowDefinition>,
    /// The clause being bound when window functions may not appear in it (`"WHERE"`).
    pub refused: Option<&'static str>,
    /// Whether a window function's arguments or spec are being bound (nesting is refused).
    pub nested: bool,
    /// The calls met so far; call `k` stands as `Column(WINDOW_SLOT + k)`.
    pub calls: Vec<WindowCall>,
}

impl WindowScope {
    /// The scope of a SELECT whose `WINDOW` clause is `named`.
    pub fn new(named: Vec<sql::NamedWindowDefinition>) -> Self {
        WindowScope {
            named,
            ..WindowScope::default()
        }
    }

    /// A scope where no window function may appear, naming `clause` in the error.
    pub fn refusing(clause: &'static str) -> Self {
        WindowScope {
            refused: Some(clause),
            ..WindowScope::default()
        }
    }
}

/// Whether an AST expression holds a window function call (`... OVER ...`), subqueries
/// included.
pub(crate) fn contains_window(e: &sql::Expr) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &sql::Expr) -> ControlFlow<()> {
            match e {
                sql::Expr::Function(f) if f.over.is_some() => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    e.visit(&mut Finder).is_break()
}
