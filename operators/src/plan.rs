//! The serializable physical plan: the operator tree of one fragment.
//!
//! The planner builds it; the runtime ships it to nodes (inside a start request) and turns each
//! node into an actor running the matching kernel from [`crate::kernels`].

use crate::expr::Expr;
pub use crate::table_function::{SeriesStep, TableFunction};
use crate::types::{DataType, Schema};
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AggFunc {
    /// `COUNT(*)`: rows, NULLs included.
    CountStar,
    /// `COUNT(expr)`: non-NULL values.
    Count,
    /// `SUM(expr)`: integer sum for integers (error on overflow), float sum for floats.
    Sum,
    /// `AVG(expr)`: always a float.
    Avg,
    /// `MIN(expr)`.
    Min,
    /// `MAX(expr)`.
    Max,
    /// `TOTAL(expr)` (SQLite's): the sum as a DOUBLE, `0.0` over no values (never NULL).
    Total,
    /// `STRING_AGG(expr, separator)` and `GROUP_CONCAT(expr [, separator])`: the non-NULL
    /// values as text, joined by the text of [`AggregateExpr::param`], in the order they arrive (no
    /// order is promised); NULL over no values.
    StringAgg,
    /// `PERCENTILE_CONT(f) WITHIN GROUP (ORDER BY expr)` and `MEDIAN(expr)` (`f` = 0.5): the
    /// value at fraction `f` ([`AggregateExpr::param`]) of the group's sorted non-NULL
    /// values, interpolated between the two nearest as PostgreSQL does; a DOUBLE, NULL over no
    /// values. It needs a group's values all at once ([`AggFunc::is_holistic`]).
    PercentileCont,
    /// `VAR_SAMP(expr)` and `VARIANCE(expr)`: the sample variance of the non-NULL values
    /// (squared deviations from their mean over `n - 1`), a DOUBLE; NULL over fewer than two
    /// values. The partial state is the count, sum and sum of squared deviations
    /// ([`AggregateExpr::state_types`]), merged as Youngs and Cramer do, not a sum of squares
    /// that loses the digits of values far from zero.
    VarSamp,
    /// `VAR_POP(expr)`: the population variance (over `n`), NULL over no values.
    VarPop,
    /// `STDDEV_SAMP(expr)` and `STDDEV(expr)`: the square root of [`AggFunc::VarSamp`].
    StddevSamp,
    /// `STDDEV_POP(expr)`: the square root of [`AggFunc::VarPop`].
    StddevPop,
}

impl AggFunc {
    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::CountStar | AggFunc::Count => "COUNT",
            AggFunc::Sum => "SUM",
            AggFunc::Avg => "AVG",
            AggFunc::Min => "MIN",
            AggFunc::Max => "MAX",
            AggFunc::Total => "TOTAL",
            AggFunc::StringAgg => "STRING_AGG",
            AggFunc::PercentileCont => "PERCENTILE_CONT",
            AggFunc::VarSamp => "VAR_SAMP",
            AggFunc::VarPop => "VAR_POP",
            AggFunc::StddevSamp => "STDDEV_SAMP",
            AggFunc::StddevPop => "STDDEV_POP",
        }
    }

    /// Whether the function is one of the variances or standard deviations, whose state is the
    /// values' count, sum and sum of squared deviations.
    pub fn is_moment(self) -> bool {
        matches!(
            self,
            AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop
        )
    }

    /// Whether the function needs every value of a group at once: it has no partial state
    /// that merges, so it runs in one place ([`AggMode::Single`]) and does not spill.
    pub fn is_holistic(self) -> bool {
        matches!(self, AggFunc::PercentileCont)
    }
}

/// One aggregate of a hash aggregation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateExpr {
    /// Function.
    pub func: AggFunc,
    /// Argument (`None` only for `COUNT(*)`).
    pub arg: Option<Expr>,
    /// Type of the argument (`Int64` for `COUNT(*)`).
    pub input_type: DataType,
    /// The function's constant parameter: the text that joins the values of
    /// [`AggFunc::StringAgg`], the fraction of [`AggFunc::PercentileCont`] (`None` for the
    /// other functions).
    pub param: Option<Value>,
    /// The order the values are taken in (`STRING_AGG(x, ',' ORDER BY y)`), over the
    /// aggregation's input; empty when any order does. An ordered aggregate runs in one place
    /// over its input sorted so ([`AggregateExpr::is_holistic`]): every ordered aggregate of
    /// one aggregation has the same order.
    #[serde(default)]
    pub order_by: Vec<SortKey>,
}

impl AggregateExpr {
    /// An aggregate of `func` over `arg` (of type `input_type`), with no parameter.
    pub fn new(func: AggFunc, arg: Option<Expr>, input_type: DataType) -> AggregateExpr {
        AggregateExpr {
            func,
            arg,
            input_type,
            param: None,
            order_by: Vec::new(),
        }
    }

    /// The call as SQL around its argument's text `arg` (`None`: no argument):
    /// `COUNT(*)`, `SUM(x)`, `STRING_AGG(x, ',')`, `PERCENTILE_CONT(0.25, x)`.
    pub fn call_text(&self, arg: Option<&str>) -> String {
        let name = self.func.name();
        match (self.func, arg, &self.param) {
            (AggFunc::CountStar, ..) => "COUNT(*)".to_string(),
            (_, Some(arg), Some(Value::Str(s))) => format!("{name}({arg}, '{s}')"),
            (_, Some(arg), Some(p)) => format!("{name}({p}, {arg})"),
            (_, Some(arg), None) => format!("{name}({arg})"),
            (_, None, _) => format!("{name}()"),
        }
    }

    /// Whether the aggregate needs its values all at once or in an order
    /// ([`AggFunc::is_holistic`], an `ORDER BY`): it runs in one place ([`AggMode::Single`])
    /// and does not spill.
    pub fn is_holistic(&self) -> bool {
        self.func.is_holistic() || !self.order_by.is_empty()
    }

    /// Type of the final result: `BIGINT` for counts, `DOUBLE` for AVG, TOTAL, the
    /// percentiles, variances and standard deviations, text for STRING_AGG, the input type
    /// otherwise.
    pub fn output_type(&self) -> DataType {
        match self.func {
            AggFunc::CountStar | AggFunc::Count => DataType::Int64,
            AggFunc::Avg
            | AggFunc::Total
            | AggFunc::PercentileCont
            | AggFunc::VarSamp
            | AggFunc::VarPop
            | AggFunc::StddevSamp
            | AggFunc::StddevPop => DataType::Float64,
            AggFunc::StringAgg => DataType::Utf8,
            // An exact SUM keeps the scale with the widest precision (as PostgreSQL).
            AggFunc::Sum => match self.input_type {
                DataType::Decimal { scale, .. } => {
                    DataType::decimal(crate::types::MAX_DECIMAL_PRECISION, scale)
                }
                t => t,
            },
            AggFunc::Min | AggFunc::Max => self.input_type,
        }
    }

    /// Types of the partial state columns this aggregate emits in [`AggMode::Partial`] and
    /// reads in [`AggMode::Final`]: counts are one `BIGINT`; SUM, MIN and MAX one column of the
    /// output type (NULL when no value was seen), as are TOTAL's (a DOUBLE) and STRING_AGG's
    /// (the text joined so far); AVG a `DOUBLE` sum and a `BIGINT` count (for
    /// a DECIMAL input an exact `DECIMAL(38, s)` sum and the count); the variances and
    /// standard deviations a `BIGINT` count, a `DOUBLE` sum and a `DOUBLE` sum of squared
    /// deviations from the mean.
    pub fn state_types(&self) -> Vec<DataType> {
        match self.func {
            AggFunc::CountStar | AggFunc::Count => vec![DataType::Int64],
            AggFunc::Avg => match self.input_type {
                DataType::Decimal { scale, .. } => vec![
                    DataType::decimal(crate::types::MAX_DECIMAL_PRECISION, scale),
                    DataType::Int64,
                ],
                _ => vec![DataType::Float64, DataType::Int64],
            },
            AggFunc::Sum | AggFunc::Total | AggFunc::StringAgg | AggFunc::PercentileCont => {
                vec![self.output_type()]
            }
            AggFunc::Min | AggFunc::Max => vec![self.input_type],
            AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => {
                vec![DataType::Int64, DataType::Float64, DataType::Float64]
            }
        }
    }
}

/// How a hash aggregation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AggMode {
    /// Whole aggregation in one place: input rows in, final values out.
    Single,
    /// First phase: input rows in; group keys followed by partial states out.
    Partial,
    /// Second phase: group keys (columns `0..group_by.len()`) followed by partial states in,
    /// final values out. `group_by` and aggregate arguments are ignored in this mode.
    Final,
}

/// A sort key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SortKey {
    /// Sorted expression.
    pub expr: Expr,
    /// `DESC` when true.
    pub descending: bool,
    /// NULLs sort before values when true.
    pub nulls_first: bool,
}

/// A window function: what one output column of a [`PhysicalPlan::Window`] computes for
/// each row, from the row's partition and, for the functions that read one, its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WindowFunc {
    /// `ROW_NUMBER()`: the row's position in its partition, from 1.
    RowNumber,
    /// `RANK()`: 1 plus the rows before the row's peer group.
    Rank,
    /// `DENSE_RANK()`: the row's peer group's position in its partition, from 1.
    DenseRank,
    /// `PERCENT_RANK()`: `(rank - 1) / (rows - 1)`, 0 for a partition of one row.
    PercentRank,
    /// `CUME_DIST()`: the rows up to the end of the row's peer group over the partition's rows.
    CumeDist,
    /// `NTILE(n)`: the bucket (1 to `n`) of `n` buckets as equal as can be, the first ones
    /// a row larger when the rows do not divide evenly. `n` is read at each partition's first
    /// row; it must be positive.
    Ntile,
    /// `LAG(value, offset, default)`: `value` at `offset` rows before the row in its
    /// partition, `default` where there is none.
    Lag,
    /// `LEAD(value, offset, default)`: `value` at `offset` rows after the row.
    Lead,
    /// `FIRST_VALUE(value)`: `value` at the frame's first row (NULL for an empty frame).
    FirstValue,
    /// `LAST_VALUE(value)`: `value` at the frame's last row.
    LastValue,
    /// `NTH_VALUE(value, n)`: `value` at the frame's `n`th row (from 1), NULL when the frame
    /// is shorter.
    NthValue,
    /// An aggregate over the frame's rows: `COUNT(*)`, `COUNT`, `SUM`, `AVG`, `MIN`, `MAX`,
    /// with the result types of [`AggregateExpr::output_type`] (COUNT of no rows is 0, the
    /// others NULL).
    Aggregate(AggFunc),
}

impl WindowFunc {
    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            WindowFunc::RowNumber => "ROW_NUMBER",
            WindowFunc::Rank => "RANK",
            WindowFunc::DenseRank => "DENSE_RANK",
            WindowFunc::PercentRank => "PERCENT_RANK",
            WindowFunc::CumeDist => "CUME_DIST",
            WindowFunc::Ntile => "NTILE",
            WindowFunc::Lag => "LAG",
            WindowFunc::Lead => "LEAD",
            WindowFunc::FirstValue => "FIRST_VALUE",
            WindowFunc::LastValue => "LAST_VALUE",
            WindowFunc::NthValue => "NTH_VALUE",
            WindowFunc::Aggregate(a) => a.name(),
        }
    }

    /// Whether the result depends on the frame (the value functions and the aggregates);
    /// the ranking functions, LAG and LEAD read the whole partition and ignore it.
    pub fn uses_frame(self) -> bool {
        matches!(
            self,
            WindowFunc::FirstValue
                | WindowFunc::LastValue
                | WindowFunc::NthValue
                | WindowFunc::Aggregate(_)
        )
    }
}

/// How a frame's offsets count: rows, peer groups, or ORDER BY values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FrameUnits {
    /// `ROWS`: offsets count rows.
    Rows,
    /// `RANGE`: offsets are distances of the (single, numeric or temporal) ORDER BY value;
    /// `CURRENT ROW` takes the row's peers in.
    Range,
    /// `GROUPS`: offsets count peer groups.
    Groups,
}

impl FrameUnits {
    /// The SQL keyword.
    pub fn name(self) -> &'static str {
        match self {
            FrameUnits::Rows => "ROWS",
            FrameUnits::Range => "RANGE",
            FrameUnits::Groups => "GROUPS",
        }
    }
}

/// One end of a frame. Offsets are constant expressions (literals or parameters), evaluated
/// when the kernel starts: a count of rows or groups (a non-negative BIGINT), or for `RANGE`
/// a non-negative distance in the ORDER BY value's units (days for a DATE, microseconds for
/// a TIMESTAMP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FrameBound {
    /// `UNBOUNDED PRECEDING`: the partition's first row.
    UnboundedPreceding,
    /// `n PRECEDING`.
    Preceding(Expr),
    /// `CURRENT ROW` (with its peers under `RANGE` and `GROUPS`).
    CurrentRow,
    /// `n FOLLOWING`.
    Following(Expr),
    /// `UNBOUNDED FOLLOWING`: the partition's last row.
    UnboundedFollowing,
}

/// Which rows around the current one a frame leaves out (`EXCLUDE ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FrameExclude {
    /// `EXCLUDE NO OTHERS` (the default): nothing.
    NoOthers,
    /// `EXCLUDE CURRENT ROW`: the row itself.
    CurrentRow,
    /// `EXCLUDE GROUP`: the row and its peers.
    Group,
    /// `EXCLUDE TIES`: the row's peers, but not the row.
    Ties,
}

impl FrameExclude {
    /// The SQL clause (`EXCLUDE TIES`), empty for the default.
    pub fn sql(self) -> &'static str {
        match self {
            FrameExclude::NoOthers => "",
            FrameExclude::CurrentRow => "EXCLUDE CURRENT ROW",
            FrameExclude::Group => "EXCLUDE GROUP",
            FrameExclude::Ties => "EXCLUDE TIES",
        }
    }
}

/// A window frame: the rows of its partition a row's frame-sensitive functions read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowFrame {
    /// What the offsets count.
    pub units: FrameUnits,
    /// Where the frame begins.
    pub start: FrameBound,
    /// Where it ends (inclusive).
    pub end: FrameBound,
    /// The rows left out.
    pub exclude: FrameExclude,
}

impl Default for WindowFrame {
    /// SQL's default frame: `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`, which is
    /// the rows up to the current row's last peer with an ORDER BY, and the whole partition
    /// without one (every row is then a peer of every other).
    fn default() -> Self {
        WindowFrame {
            units: FrameUnits::Range,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
            exclude: FrameExclude::NoOthers,
        }
    }
}

/// One window function of a [`PhysicalPlan::Window`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowExpr {
    /// The function.
    pub func: WindowFunc,
    /// Its arguments, over the input's columns, as [`WindowFunc`] lists them: NTILE's bucket
    /// count; LAG's and LEAD's value, offset and default (the planner fills in 1 and NULL);
    /// FIRST_VALUE's and LAST_VALUE's value; NTH_VALUE's value and `n`; an aggregate's
    /// argument (none for `COUNT(*)`).
    pub args: Vec<Expr>,
    /// The result type.
    pub output_type: DataType,
    /// The frame (ignored by the functions that do not read one, see
    /// [`WindowFunc::uses_frame`]).
    pub frame: WindowFrame,
}

impl WindowExpr {
    /// A numbering function without arguments (`ROW_NUMBER`, `RANK`, `DENSE_RANK`), whose
    /// result is a BIGINT: what the planner adds itself to keep the first rows of each set
    /// (`DISTINCT ON`, `FETCH ... WITH TIES`, a correlated `LIMIT`).
    pub fn numbering(func: WindowFunc) -> WindowExpr {
        WindowExpr {
            func,
            args: vec![],
            output_type: DataType::Int64,
            frame: WindowFrame::default(),
        }
    }
}

/// Which input of a join is loaded into memory (the hash table of a hash join).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JoinSide {
    /// The left (first) input.
    Left,
    /// The right (second) input.
    Right,
}

/// What a join outputs. Outer joins output the left input's columns followed by the right
/// input's, with NULLs for the side that has no matching row; semi and anti joins output only
/// the left input's columns.
///
/// Every type works with either [`JoinSide`] as the build side. NULL join keys never match
/// (see [`JoinType::Anti`] for the one exception).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JoinType {
    /// Matching row pairs only.
    Inner,
    /// Matching pairs, plus each left row without a match (right columns NULL).
    Left,
    /// Matching pairs, plus each right row without a match (left columns NULL).
    Right,
    /// Matching pairs, plus the unmatched rows of both sides.
    Full,
    /// Each left row that has at least one match, once (`EXISTS`, `IN`). Left columns only.
    Semi,
    /// Each left row that has no match (`NOT EXISTS`). Left columns only.
    Anti {
        /// SQL `left.k NOT IN (SELECT right.k ...)` semantics (hash join only, exactly one
        /// key, no residual filter): if any right row has a NULL key, no row is output; a left
        /// row whose key is NULL is output only if the right input is empty; otherwise as a
        /// plain anti join. Each instance must see the whole right input, so the planner
        /// broadcasts the right side (or runs the join in one place).
        null_aware: bool,
    },
}

impl JoinType {
    /// The SQL-ish name shown by EXPLAIN: `INNER`, `LEFT`, `RIGHT`, `FULL`, `SEMI`, `ANTI`
    /// or `NULL-AWARE ANTI`.
    pub fn name(self) -> &'static str {
        match self {
            JoinType::Inner => "INNER",
            JoinType::Left => "LEFT",
            JoinType::Right => "RIGHT",
            JoinType::Full => "FULL",
            JoinType::Semi => "SEMI",
            JoinType::Anti { null_aware: false } => "ANTI",
            JoinType::Anti { null_aware: true } => "NULL-AWARE ANTI",
        }
    }

    /// Whether the output has only the left input's columns (semi and anti joins).
    pub fn left_only(self) -> bool {
        matches!(self, JoinType::Semi | JoinType::Anti { .. })
    }
}

/// An index probe that replaces a full scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum IndexLookup {
    /// `column = value`.
    Eq(Expr),
    /// `column IN (values)`.
    In(Vec<Expr>),
    /// A range; each bound is `(value, inclusive)`.
    Range {
        /// Lower bound.
        low: Option<(Expr, bool)>,
        /// Upper bound.
        high: Option<(Expr, bool)>,
    },
    /// Every column of a composite primary key equal to a value: at most one row.
    Key {
        /// The key columns, in key order.
        columns: Vec<usize>,
        /// One value per key column.
        values: Vec<Expr>,
    },
}

/// A node of a fragment's operator tree. Decoded plans nest at most
/// [`crate::decode::MAX_DECODE_DEPTH`] levels, counting their expressions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub enum PhysicalPlan {
    /// Reads the local partitions of a table: optional index probe, then filter, then projection.
    Scan {
        /// Table name.
        table: String,
        /// Full table schema (filter and index columns refer to it).
        table_schema: Schema,
        /// Probe this indexed column instead of reading every row: `(column, lookup)`.
        index: Option<(usize, IndexLookup)>,
        /// Predicate over table columns, applied before projection.
        filter: Option<Expr>,
        /// Table columns to output, in order.
        projection: Vec<usize>,
        /// For an external table, the files its rows are read from (no index then).
        external: Option<Box<crate::external::ExternalSource>>,
    },
    /// Keeps rows where the predicate is true.
    Filter {
        /// Input.
        input: Box<PhysicalPlan>,
        /// Predicate over the input's columns.
        predicate: Expr,
    },
    /// Computes one output column per expression.
    Project {
        /// Input.
        input: Box<PhysicalPlan>,
        /// Output expressions.
        exprs: Vec<Expr>,
    },
    /// Equi-join on `left_keys[i] = right_keys[i]` of any [`JoinType`]; output columns are
    /// the left input's followed by the right input's (the left input's only for semi and
    /// anti joins).
    HashJoin {
        /// Left input.
        left: Box<PhysicalPlan>,
        /// Right input.
        right: Box<PhysicalPlan>,
        /// Key expressions over the left input.
        left_keys: Vec<Expr>,
        /// Key expressions over the right input (same count and comparable types).
        right_keys: Vec<Expr>,
        /// What the join outputs.
        join_type: JoinType,
        /// Residual predicate a key match must also satisfy (NULL counts as false), over the
        /// concatenated row: left columns then right columns, for every join type (semi and
        /// anti joins too).
        filter: Option<Expr>,
        /// Which side is built into the hash table (the smaller one).
        build: JoinSide,
        /// Column types of the left input (the NULL columns of unmatched right rows).
        left_types: Vec<DataType>,
        /// Column types of the right input (the NULL columns of unmatched left rows).
        right_types: Vec<DataType>,
        /// The positions, ascending, of the output columns above that the join emits (what
        /// the plan reads of it); `None` emits them all. Columns not emitted are never
        /// gathered.
        output: Option<Vec<usize>>,
    },
    /// Join without equality keys: a cross join when `filter` is `None`, a theta join
    /// otherwise. The build side is held in memory and every probe row is compared with every
    /// build row. Output columns as for [`PhysicalPlan::HashJoin`]. `JoinType::Anti {
    /// null_aware: true }` is not supported.
    NestedLoopJoin {
        /// Left input.
        left: Box<PhysicalPlan>,
        /// Right input.
        right: Box<PhysicalPlan>,
        /// What the join outputs.
        join_type: JoinType,
        /// Join predicate over left columns then right columns (NULL counts as false);
        /// `None` matches every pair.
        filter: Option<Expr>,
        /// Which side is held in memory (the smaller one).
        build: JoinSide,
        /// Column types of the left input (the NULL columns of unmatched right rows).
        left_types: Vec<DataType>,
        /// Column types of the right input (the NULL columns of unmatched left rows).
        right_types: Vec<DataType>,
    },
    /// Exactly one row with the input's columns: the input's only row, a row of NULLs when
    /// the input is empty, and an error ("scalar subquery returned more than one row") when
    /// it has more. Used for uncorrelated scalar subqueries.
    SingleRow {
        /// Input.
        input: Box<PhysicalPlan>,
        /// Column types of the input (the NULL row's types).
        types: Vec<DataType>,
    },
    /// Hash aggregation; output is group keys followed by aggregates (or partial states).
    HashAggregate {
        /// Input.
        input: Box<PhysicalPlan>,
        /// Group key expressions (ignored in `Final` mode, where keys are the first columns).
        group_by: Vec<Expr>,
        /// Key types, in order.
        group_types: Vec<DataType>,
        /// Aggregates.
        aggs: Vec<AggregateExpr>,
        /// Phase.
        mode: AggMode,
    },
    /// Sorts all input; with `limit`, keeps only the first `limit` rows (top-k).
    Sort {
        /// Input.
        input: Box<PhysicalPlan>,
        /// Keys, most significant first.
        keys: Vec<SortKey>,
        /// Keep at most this many rows.
        limit: Option<usize>,
    },
    /// Window functions: sorts its whole input by partition keys and ORDER BY keys, and
    /// outputs the input's columns followed by one column per function, **in input order**
    /// (the rows of each input batch as they came; a query's ORDER BY is a sort above).
    /// Rows whose partition keys are equal (NULLs equal) form a partition; rows equal in the
    /// ORDER BY keys too are peers.
    Window {
        /// Input.
        input: Box<PhysicalPlan>,
        /// Partition keys over the input's columns.
        partition_by: Vec<Expr>,
        /// Order within a partition.
        order_by: Vec<SortKey>,
        /// The functions, one output column each.
        functions: Vec<WindowExpr>,
        /// Top-N per partition: only the first `n` rows of each partition in window order
        /// are output (the others are dropped as early as the kernel can tell), when the
        /// functions read nothing after a row (the planner checks); `None` outputs every row.
        keep: Option<usize>,
    },
    /// Each input row as many times as its last column (a BIGINT count) says, without that
    /// column: the last step of `INTERSECT ALL` and `EXCEPT ALL`.
    Repeat {
        /// Input.
        input: Box<PhysicalPlan>,
    },
    /// Skips `offset` rows, then passes at most `limit` rows.
    Limit {
        /// Input.
        input: Box<PhysicalPlan>,
        /// Rows to skip.
        offset: usize,
        /// Rows to pass after the offset (`None`: all).
        limit: Option<usize>,
    },
    /// Receives the batches that other fragments send to exchange `id`.
    Exchange {
        /// Exchange id, unique within a query.
        id: u32,
        /// Schema of the batches received.
        schema: Schema,
    },
    /// `UNION ALL`: every input's rows, in arrival order (inputs have the same schema).
    Union {
        /// Inputs, in port order.
        inputs: Vec<PhysicalPlan>,
    },
    /// A constant relation (e.g. `SELECT 1`).
    Values {
        /// Output schema.
        schema: Schema,
        /// Rows.
        rows: Vec<Vec<crate::value::Value>>,
    },
    /// `WITH RECURSIVE name AS (base UNION [ALL] step)`, on one instance: outputs the rows of
    /// input 0 (the base term), then evaluates `step` over the rows the previous round added
    /// (the working table) again and again, outputting what each round adds, until a round
    /// adds nothing. With `distinct` (UNION), a row already output is never added again
    /// (the base's duplicates go too); without (UNION ALL) every row a round makes is added.
    /// More than `max_iterations` rounds is an error naming the query.
    RecursiveUnion {
        /// The query's name, for the iteration limit's error.
        name: String,
        /// Input 0 is the base term; the others are what the step reads besides the working
        /// table (whole relations, read once and held in memory).
        inputs: Vec<PhysicalPlan>,
        /// The recursive term, evaluated in memory each round: its leaves are
        /// [`PhysicalPlan::StepInput`]s and constant [`PhysicalPlan::Values`]; no scans or
        /// exchanges.
        step: Box<PhysicalPlan>,
        /// UNION (rows deduplicated against every row so far) rather than UNION ALL.
        distinct: bool,
        /// The most rounds of the step before the query fails.
        max_iterations: usize,
        /// The column types (of the base term; the step's are cast to them).
        types: Vec<DataType>,
    },
    /// Inside a [`PhysicalPlan::RecursiveUnion`]'s step: port 0 is the working table (the
    /// rows the previous round added), port `k > 0` the rows of the recursive union's input `k`.
    StepInput {
        /// Which rows.
        port: usize,
        /// Their schema.
        schema: Schema,
    },
    /// `generate_series(start, stop, step)`: the integers (or timestamps) from `start` to
    /// `stop` `step` apart, made a batch at a time
    /// ([`crate::kernels::series::SeriesSource`]). The arguments are constant expressions
    /// (literals, parameters), read when the query runs.
    Series {
        /// Output schema: one BIGINT (or TIMESTAMP) column, and the BIGINT ordinal with
        /// `ordinality`.
        schema: Schema,
        /// The first value.
        start: Expr,
        /// The last value, or the bound the values do not pass.
        stop: Expr,
        /// The distance between values.
        step: SeriesStep,
        /// Whether each value is followed by its position in the series, from 1 (`WITH
        /// ORDINALITY`).
        ordinality: bool,
    },
    /// Each input row once per value of table function `function` evaluated on it, the value
    /// (and, with `ordinality`, its position among the row's values, from 1) appended as the
    /// last columns; a row whose call makes no value is dropped
    /// ([`crate::kernels::expand::ExpandOp`]): a table function in FROM that reads the
    /// columns of the FROM items before it (LATERAL), or in a select list.
    Expand {
        /// Input.
        input: Box<PhysicalPlan>,
        /// The function, its arguments over the input's columns.
        function: TableFunction,
        /// Whether the position of each value is appended after it (`WITH ORDINALITY`).
        ordinality: bool,
    },
}

crate::decode::checked_serde!(PhysicalPlan, nested "a plan");

/// How a fragment's output is spread over the instances of the receiving fragment (an
/// exchange's distribution: the planner chooses it, the runtime's exchange senders follow it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Distribution {
    /// Everything to the single receiving instance.
    Gather,
    /// Rows hashed on these expressions (over the sending fragment's output columns).
    Hash(Vec<Expr>),
    /// Every row to every receiving instance.
    Broadcast,
}

/// How many rows a plan node outputs at most, in terms of its inputs' rows: what a row
/// estimate needs to know of each kind of node, in one place (the planner has no
/// selectivities, so a filter keeps every row).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowBound {
    /// It reads rows from outside the plan (a table, literal rows, an exchange): only its
    /// reader knows how many.
    Source,
    /// As many as its one input.
    Input,
    /// At most this many of its one input's rows.
    AtMost(u64),
    /// One row (an aggregate without groups, a scalar subquery's row).
    One,
    /// The larger of its two inputs (an equi-join, bounded by its larger side as a foreign
    /// key join is).
    Larger,
    /// The product of its two inputs (a nested-loop join).
    Product,
    /// This many rows per row of its one input (a series per row: counted from literal
    /// arguments, else a guess).
    Each(f64),
    /// The sum of its inputs (a union).
    Sum,
}

impl PhysicalPlan {
    /// A join of `left` and `right`: a [`PhysicalPlan::HashJoin`] on `left_keys =
    /// right_keys`, or, with no keys, a [`PhysicalPlan::NestedLoopJoin`]; every output column.
    #[allow(clippy::too_many_arguments)]
    pub fn join(
        left: Box<PhysicalPlan>,
        right: Box<PhysicalPlan>,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        join_type: JoinType,
        filter: Option<Expr>,
        build: JoinSide,
        (left_types, right_types): (Vec<DataType>, Vec<DataType>),
    ) -> PhysicalPlan {
        if left_keys.is_empty() {
            PhysicalPlan::NestedLoopJoin {
                left,
                right,
                join_type,
                filter,
                build,
                left_types,
                right_types,
            }
        } else {
            PhysicalPlan::HashJoin {
                left,
                right,
                left_keys,
                right_keys,
                join_type,
                filter,
                build,
                left_types,
                right_types,
                output: None,
            }
        }
    }

    /// How many rows this node outputs, from its inputs' (see [`RowBound`]).
    pub fn row_bound(&self) -> RowBound {
        match self {
            PhysicalPlan::Scan { .. }
            | PhysicalPlan::Exchange { .. }
            | PhysicalPlan::Values { .. }
            | PhysicalPlan::Series { .. }
            | PhysicalPlan::StepInput { .. } => RowBound::Source,
            PhysicalPlan::Filter { .. }
            | PhysicalPlan::Project { .. }
            | PhysicalPlan::Repeat { .. }
            | PhysicalPlan::Window { .. } => RowBound::Input,
            PhysicalPlan::Expand { function, .. } => RowBound::Each(function.estimated_rows(true)),
            PhysicalPlan::SingleRow { .. } => RowBound::One,
            PhysicalPlan::HashAggregate { group_by, .. } if group_by.is_empty() => RowBound::One,
            PhysicalPlan::HashAggregate { .. } => RowBound::Input,
            PhysicalPlan::Sort { limit, .. } => {
                limit.map_or(RowBound::Input, |l| RowBound::AtMost(l as u64))
            }
            PhysicalPlan::Limit { offset, limit, .. } => limit.map_or(RowBound::Input, |l| {
                RowBound::AtMost(offset.saturating_add(l) as u64)
            }),
            PhysicalPlan::HashJoin { .. } => RowBound::Larger,
            PhysicalPlan::NestedLoopJoin { .. } => RowBound::Product,
            // At least its inputs' rows: the rounds it runs are not known.
            PhysicalPlan::Union { .. } | PhysicalPlan::RecursiveUnion { .. } => RowBound::Sum,
        }
    }

    /// Inputs of this node, in port order (a join's left input is port 0). A recursive
    /// union's step is not an input: its kernel evaluates it.
    pub fn children(&self) -> Vec<&PhysicalPlan> {
        match self {
            PhysicalPlan::Scan { .. }
            | PhysicalPlan::Exchange { .. }
            | PhysicalPlan::Values { .. }
            | PhysicalPlan::Series { .. }
            | PhysicalPlan::StepInput { .. } => {
                vec![]
            }
            PhysicalPlan::RecursiveUnion { inputs, .. } => inputs.iter().collect(),
            PhysicalPlan::Filter { input, .. }
            | PhysicalPlan::Project { input, .. }
            | PhysicalPlan::HashAggregate { input, .. }
            | PhysicalPlan::Sort { input, .. }
            | PhysicalPlan::Limit { input, .. }
            | PhysicalPlan::Repeat { input }
            | PhysicalPlan::Expand { input, .. }
            | PhysicalPlan::Window { input, .. }
            | PhysicalPlan::SingleRow { input, .. } => vec![input],
            PhysicalPlan::HashJoin { left, right, .. }
            | PhysicalPlan::NestedLoopJoin { left, right, .. } => vec![left, right],
            PhysicalPlan::Union { inputs } => inputs.iter().collect(),
        }
    }

    /// Whether this node holds a whole input in memory as a join's build side (hash and
    /// nested-loop joins): the runtime supervises such operators (the memory breaker may kill
    /// them) and admits queries with them only when there is room.
    pub fn holds_build_side(&self) -> bool {
        matches!(
            self,
            PhysicalPlan::HashJoin { .. } | PhysicalPlan::NestedLoopJoin { .. }
        )
    }

    /// Short operator name for EXPLAIN, stats and actor labels.
    pub fn name(&self) -> &'static str {
        match self {
            PhysicalPlan::Scan { index: Some(_), .. } => "IndexScan",
            PhysicalPlan::Scan {
                external: Some(_), ..
            } => "FileScan",
            PhysicalPlan::Scan { .. } => "Scan",
            PhysicalPlan::Filter { .. } => "Filter",
            PhysicalPlan::Project { .. } => "Project",
            PhysicalPlan::HashJoin { .. } => "HashJoin",
            PhysicalPlan::NestedLoopJoin { .. } => "NestedLoopJoin",
            PhysicalPlan::SingleRow { .. } => "SingleRow",
            PhysicalPlan::HashAggregate { .. } => "HashAggregate",
            PhysicalPlan::Sort { .. } => "Sort",
            PhysicalPlan::Limit { .. } => "Limit",
            PhysicalPlan::Repeat { .. } => "Repeat",
            PhysicalPlan::Expand { .. } => "Expand",
            PhysicalPlan::Window { .. } => "Window",
            PhysicalPlan::Exchange { .. } => "Exchange",
            PhysicalPlan::Values { .. } => "Values",
            PhysicalPlan::Union { .. } => "Union",
            PhysicalPlan::RecursiveUnion { .. } => "RecursiveUnion",
            PhysicalPlan::StepInput { .. } => "StepInput",
            PhysicalPlan::Series { .. } => "Series",
        }
    }
}
