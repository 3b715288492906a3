//! Planned statements and the distributed query plan: fragments, their placement, and the
//! exchanges that connect them.

use crate::catalog::{IndexDef, NamedSequence, SequenceChanges, SequenceName, TableDef, ViewDef};
use serde::{Deserialize, Serialize};
use weir_operators::plan::Distribution;
use weir_operators::{Batch, DataType, Expr, PhysicalPlan, Schema};

/// Values of a column that an INSERT takes from the column's sequence (`SERIAL`, identity):
/// handed out when the statement runs, not when it is planned (a plan is kept and run
/// again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceFill {
    /// The column's position.
    pub column: usize,
    /// The rows (positions among the statement's rows) that take a value: `None`, every row.
    pub rows: Option<Vec<usize>>,
    /// The sequence the values come from: `None`, the column's own (`SERIAL`, identity);
    /// else the one a `nextval('name')` names (in `VALUES`, or as the column's `DEFAULT`).
    pub from: Option<SequenceName>,
    /// `currval('name')` in `VALUES`: the value the session was last given of `from`, not
    /// new ones.
    pub current: bool,
}

/// A call of a sequence function in `SELECT nextval('s'), ...` ([`Statement::SequenceCalls`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SequenceCall {
    /// `nextval(sequence)`: the sequence's next value.
    Next(SequenceName),
    /// `currval(sequence)`: the value `nextval` last gave the session of the call.
    Current(SequenceName),
    /// `lastval()`: the value `nextval` last gave the session of the call, of any sequence.
    Last,
    /// `setval(sequence, value [, called])`: answers `value`; the sequence's next value is
    /// then `value` (not `called`) or the one after it (`called`, the default).
    Set {
        /// The sequence.
        sequence: SequenceName,
        /// The value.
        value: i64,
        /// Whether `value` counts as handed out already.
        called: bool,
    },
}

/// A write's `RETURNING`: expressions over each row it wrote (in the table schema's column
/// order: an inserted row after its defaults and sequence values were filled in, an updated
/// row's new values, a deleted row as it was).
#[derive(Debug, Clone)]
pub struct Returning {
    /// One expression per output column.
    pub exprs: Vec<Expr>,
    /// Names and types of the output columns.
    pub schema: Schema,
}

/// `ON CONFLICT (target) DO UPDATE SET ... [WHERE ...]` of an INSERT (see
/// [`ConflictUpdate::sql`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ConflictUpdate {
    /// The target's columns (the primary key's, or a unique index's): a proposed row whose
    /// values there a stored row holds updates that row instead of being inserted.
    pub target: Vec<usize>,
    /// The `UPDATE` before the clashing rows: `UPDATE t SET ... FROM (VALUES `.
    pub(crate) head: String,
    /// The `UPDATE` after them: `) AS excluded(...) WHERE ...`.
    pub(crate) tail: String,
}

/// A planned SQL statement.
#[derive(Debug, Clone)]
pub enum Statement {
    /// A `SELECT`.
    Query(QueryPlan),
    /// `EXPLAIN SELECT ...`: the plan to describe (see [`QueryPlan::explain`]).
    Explain(QueryPlan),
    /// `EXPLAIN ANALYZE SELECT ...`: the plan to run, then describe with what each operator
    /// output (see [`QueryPlan::explain_analyzed`]).
    ExplainAnalyze(QueryPlan),
    /// `CREATE TABLE`: the definition to add to the catalog and storage.
    CreateTable(TableDef),
    /// `CREATE [UNIQUE] INDEX name ON table(column, ...)`.
    CreateIndex {
        /// Table name as stored in the catalog.
        table: String,
        /// The index.
        index: IndexDef,
    },
    /// `INSERT INTO table VALUES ...`: rows evaluated and type-checked, in the full table
    /// schema's column order (omitted columns hold their defaults, or NULL where `fills`
    /// says the column's sequence gives the value).
    Insert {
        /// Table name as stored in the catalog.
        table: String,
        /// The rows.
        batch: Batch,
        /// The values to take from sequences when the statement runs.
        fills: Vec<SequenceFill>,
        /// `RETURNING`: what to answer for each inserted row.
        returning: Option<Box<Returning>>,
        /// `ON CONFLICT ... DO NOTHING`: the column sets (the primary key's, a unique
        /// index's) on which a row that clashes with a stored row, or an earlier row of the
        /// statement, is skipped instead of failing the statement.
        skip_conflicts: Vec<Vec<usize>>,
        /// `ON CONFLICT (target) DO UPDATE`: how a row that clashes with a stored row on
        /// the target updates it instead.
        update_conflicts: Option<Box<ConflictUpdate>>,
    },
    /// `INSERT INTO table [(cols)] SELECT ...`: the query's rows, already in the full table
    /// schema's column order and types (omitted columns hold their defaults, or NULL where
    /// `fills` says the column's sequence gives the value), are inserted all or nothing.
    InsertSelect {
        /// Table name as stored in the catalog.
        table: String,
        /// The query (its parameters bound into it).
        query: Box<QueryPlan>,
        /// The values to take from sequences when the statement runs.
        fills: Vec<SequenceFill>,
        /// `RETURNING`: what to answer for each inserted row.
        returning: Option<Box<Returning>>,
        /// `ON CONFLICT ... DO NOTHING`: the column sets (the primary key's, a unique
        /// index's) on which a row that clashes with a stored row, or an earlier row of the
        /// statement, is skipped instead of failing the statement.
        skip_conflicts: Vec<Vec<usize>>,
        /// `ON CONFLICT (target) DO UPDATE`: how a row that clashes with a stored row on
        /// the target updates it instead.
        update_conflicts: Option<Box<ConflictUpdate>>,
    },
    /// `DELETE FROM table [WHERE ...]`: the query gives the identity of every row to delete
    /// (see [`crate::identity_columns`]: the primary-key columns, or every column of a table
    /// without a key).
    Delete {
        /// Table name as stored in the catalog.
        table: String,
        /// The query (its parameters bound into it). With `returning`, each row's identity
        /// is followed by the whole row.
        query: Box<QueryPlan>,
        /// `RETURNING`: what to answer for each deleted row.
        returning: Option<Box<Returning>>,
    },
    /// `UPDATE table SET ... [WHERE ...]`: the query gives, for every row to change, its
    /// identity (as for [`Statement::Delete`]) followed by the row's new values, in the table
    /// schema's column order and types.
    Update {
        /// Table name as stored in the catalog.
        table: String,
        /// The query (its parameters bound into it).
        query: Box<QueryPlan>,
        /// `RETURNING`: what to answer for each updated row (its new values).
        returning: Option<Box<Returning>>,
        /// The columns `SET` assigns (the others keep their values), in order.
        assigned: Vec<usize>,
    },
    /// `CREATE TABLE name AS SELECT ...`: the table (columns named and typed by the query,
    /// no key) and the rows to fill it with.
    CreateTableAs {
        /// The new table.
        def: TableDef,
        /// The query, producing the table's columns.
        query: Box<QueryPlan>,
    },
    /// `CREATE [OR REPLACE] VIEW name [(cols)] AS query` (the query was checked).
    CreateView {
        /// The view.
        def: ViewDef,
        /// `OR REPLACE` was given.
        replace: bool,
    },
    /// `DROP VIEW [IF EXISTS] name`.
    DropView {
        /// View name.
        name: String,
        /// `IF EXISTS` was given.
        if_exists: bool,
    },
    /// `CREATE [OR REPLACE] EXTERNAL TABLE [IF NOT EXISTS] name [(cols)] STORED AS ...
    /// LOCATION '...'`: a read-only table whose rows are read in place from files. The runtime
    /// resolves the location, takes the columns from the files when none are declared, and
    /// checks the files before adding the table.
    CreateExternalTable {
        /// Table name.
        name: String,
        /// The declared columns; `None`: taken from the files.
        columns: Option<weir_operators::Schema>,
        /// The files and their format (the location as written).
        source: weir_operators::external::ExternalSource,
        /// The declared primary key's columns (names), in key order: not checked, trusted
        /// for estimates.
        key: Vec<String>,
        /// `IF NOT EXISTS` was given.
        if_not_exists: bool,
        /// `OR REPLACE` was given.
        replace: bool,
    },
    /// `ALTER TABLE [IF EXISTS] name <change>`: one change to a stored table (see
    /// [`crate::alter_catalog`] for how the catalog takes it).
    AlterTable {
        /// Table name as stored in the catalog (as written when it does not exist).
        table: String,
        /// The change; `None` when there is nothing to do (`IF EXISTS` of a table or column
        /// that is not there, `ADD COLUMN IF NOT EXISTS` of one that is).
        change: Option<crate::catalog::alter::TableChange>,
    },
    /// `CREATE SEQUENCE [IF NOT EXISTS] name [options]` (see [`NamedSequence`]).
    CreateSequence {
        /// The sequence (its `made` set when the catalog takes it).
        sequence: NamedSequence,
        /// `IF NOT EXISTS` was given.
        if_not_exists: bool,
    },
    /// `DROP SEQUENCE [IF EXISTS] name, ...` (lowercase names).
    DropSequence {
        /// The sequences.
        names: Vec<String>,
        /// `IF EXISTS` was given.
        if_exists: bool,
    },
    /// `TRUNCATE t, ...`: every row of the tables goes, in one write.
    Truncate {
        /// The tables (as stored in the catalog): those listed, and those `CASCADE` adds.
        tables: Vec<String>,
        /// `RESTART IDENTITY`: their `SERIAL` and identity columns start at 1 again.
        restart_identity: bool,
    },
    /// `ALTER SEQUENCE [IF EXISTS] name option ...`.
    AlterSequence {
        /// The sequence (`None`: `IF EXISTS` and there is none, so nothing changes).
        sequence: Option<SequenceName>,
        /// What changes.
        changes: SequenceChanges,
    },
    /// `SELECT nextval('s'), setval('t', 1), ...`: one row, one BIGINT column per call, the
    /// calls made in order when the statement runs.
    SequenceCalls {
        /// The columns (named by their aliases, or by the functions).
        schema: Schema,
        /// The calls.
        calls: Vec<SequenceCall>,
    },
    /// `DROP TABLE [IF EXISTS] name`.
    DropTable {
        /// Table name (as stored in the catalog when it exists).
        name: String,
        /// `IF EXISTS` was given.
        if_exists: bool,
    },
}

/// A distributed query plan: a tree of fragments connected by exchanges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryPlan {
    /// The fragments, ordered by id; fragment 0 is the root and runs on the initiator node.
    pub fragments: Vec<Fragment>,
    /// Result columns as users see them (alias, column name or expression text).
    pub output_schema: Schema,
    /// Expected type of every parameter (`None`: any type is accepted).
    pub param_types: Vec<Option<DataType>>,
    /// For `EXPLAIN VERBOSE`: the logical plan as bound and as optimized, rendered.
    pub verbose: Option<String>,
    /// The key under which data nodes cache each fragment's operator tree (indexed like
    /// `fragments`): a stable hash of its encoding, computed once by [`QueryPlan::seal`] when
    /// the plan is made rather than on every run. Empty until sealed.
    #[serde(default)]
    pub fragment_keys: Vec<u64>,
    /// The plan holds values read when it was planned (the time of `now()`, `CURRENT_DATE`,
    /// ..., the draws of `random()` in a VALUES list): it answers for that statement only, and
    /// is not kept for another run.
    #[serde(default)]
    pub single_use: bool,
}

impl QueryPlan {
    /// Computes [`QueryPlan::fragment_keys`] from the fragments as they are now (again after
    /// the fragments were changed by hand).
    pub fn seal(&mut self) {
        self.fragment_keys = self.fragments.iter().map(|f| plan_key(&f.plan)).collect();
    }

    /// Whether [`QueryPlan::fragment_keys`] has one key per fragment.
    pub fn is_sealed(&self) -> bool {
        self.fragment_keys.len() == self.fragments.len()
    }

    /// The root fragment (id 0).
    pub fn root(&self) -> &Fragment {
        self.fragment(0)
            .expect("a query plan always has a root fragment")
    }

    /// The fragment with `id`.
    pub fn fragment(&self, id: u32) -> Option<&Fragment> {
        self.fragments.iter().find(|f| f.id == id)
    }

    /// The fragments that send to fragment `id`.
    pub fn inputs_of(&self, id: u32) -> Vec<&Fragment> {
        self.fragments
            .iter()
            .filter(|f| f.output.as_ref().is_some_and(|o| o.target == id))
            .collect()
    }
}

/// One piece of a distributed plan, run on every node of its placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fragment {
    /// Id, unique within the query; 0 is the root.
    pub id: u32,
    /// The operator tree. `Exchange` leaves receive from other fragments.
    pub plan: PhysicalPlan,
    /// Where instances of this fragment run.
    pub placement: Placement,
    /// Where the fragment's output goes (`None` only for the root, whose output is the result).
    pub output: Option<FragmentOutput>,
}

/// Where a fragment runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Placement {
    /// Only on the node that received the query.
    Initiator,
    /// On the nodes owning partitions of `table` (each scans its local partitions).
    Table {
        /// Table name as stored in the catalog.
        table: String,
        /// Which partitions are needed.
        pruning: Pruning,
    },
    /// On every data node (joins over hash-distributed inputs).
    AllDataNodes,
}

/// Which partitions of a table a fragment needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Pruning {
    /// Every partition.
    All,
    /// Only the partitions owning these primary-key values (literal or parameter
    /// expressions, column-free), from `pk = v` or `pk IN (...)` in WHERE.
    Keys(Vec<Expr>),
    /// Only the partition owning this composite primary key: one value per key column, in key
    /// order, from `a = v AND b = w` in WHERE.
    Key(Vec<Expr>),
}

/// Where a non-root fragment sends its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragmentOutput {
    /// Exchange id the receiving fragment's `Exchange` leaf listens on.
    pub exchange: u32,
    /// Receiving fragment id.
    pub target: u32,
    /// How rows are spread over the receiving fragment's instances.
    pub distribution: Distribution,
}

/// A stable 64-bit hash of a fragment's operator tree: FNV-1a over its bincode encoding, the
/// same in every process (unlike the standard library's seeded hashers).
pub fn plan_key(plan: &PhysicalPlan) -> u64 {
    let bytes =
        bincode::serde::encode_to_vec(plan, bincode::config::standard()).unwrap_or_default();
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
