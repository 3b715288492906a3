//! Random filters and aggregates evaluated by a 3-node cluster match a simple row-at-a-time
//! reference evaluator with SQL three-valued logic. (Joins: `join_properties.rs`.)
//!
//! Reproducible: the table comes from a fixed seed and proptest runs from a fixed seed
//! (`PROPTEST_RNG_SEED=n` picks another; `PROPTEST_CASES=n` runs more cases).

use crate::common;

use common::TestCluster;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use weir::{Batch, Cluster, DataType, Value};

const ROWS: i64 = 2000;

/// `r` has no secondary index; `ri` holds the same rows with indexes on a, b and s.
const TABLES: [&str; 2] = ["r", "ri"];

/// One row of `r(id, a, b, s, flag)`.
#[derive(Debug, Clone)]
struct Row {
    id: i64,
    a: Option<i64>,
    b: Option<f64>,
    s: Option<String>,
    flag: Option<bool>,
}

impl Row {
    fn get(&self, col: Col) -> Value {
        match col {
            Col::Id => Value::Int(self.id),
            Col::A => self.a.into(),
            Col::B => self.b.into(),
            Col::S => self.s.clone().into(),
            Col::Flag => self.flag.into(),
        }
    }
}

/// A small deterministic generator (SplitMix64), so the table is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }

    /// True with probability `pct` percent.
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
}

const ALPHABET: [char; 3] = ['a', 'b', 'c'];

fn table_rows() -> &'static Vec<Row> {
    static ROWS_CELL: OnceLock<Vec<Row>> = OnceLock::new();
    ROWS_CELL.get_or_init(|| {
        let mut rng = Rng(0x5EED_0F4E_E1E1);
        (0..ROWS)
            .map(|id| {
                let a = (!rng.chance(10)).then(|| rng.range(-50, 51));
                // Multiples of 0.25 are exact in binary, so comparisons and sums are exact.
                let b = (!rng.chance(10)).then(|| rng.range(-80, 81) as f64 * 0.25);
                let s = (!rng.chance(10)).then(|| {
                    let len = rng.range(0, 4) as usize;
                    (0..len)
                        .map(|_| ALPHABET[rng.range(0, 3) as usize])
                        .collect::<String>()
                });
                let flag = (!rng.chance(10)).then(|| rng.chance(50));
                Row { id, a, b, s, flag }
            })
            .collect()
    })
}

/// The shared cluster, holding `r`; its queries run under the watchdog.
fn shared() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let c = TestCluster::new(
            Cluster::builder()
                .nodes(3)
                .partitions(32)
                .build()
                .expect("cluster starts"),
        );
        c.execute(
            "CREATE TABLE r (id BIGINT PRIMARY KEY, a BIGINT, b DOUBLE, s VARCHAR, flag BOOLEAN)",
        )
        .unwrap();
        let types = [
            DataType::Int64,
            DataType::Int64,
            DataType::Float64,
            DataType::Utf8,
            DataType::Boolean,
        ];
        let rows: Vec<Vec<Value>> = table_rows()
            .iter()
            .map(|r| {
                vec![
                    Value::Int(r.id),
                    r.a.into(),
                    r.b.into(),
                    r.s.clone().into(),
                    r.flag.into(),
                ]
            })
            .collect();
        let batch = Batch::from_rows(&types, &rows).unwrap();
        assert_eq!(c.load("r", batch.clone()).unwrap(), ROWS as usize);
        // The same rows in `ri`, with secondary indexes: some created before the load, one
        // after it.
        c.execute(
            "CREATE TABLE ri (id BIGINT PRIMARY KEY, a BIGINT, b DOUBLE, s VARCHAR, flag BOOLEAN)",
        )
        .unwrap();
        c.execute("CREATE INDEX ri_a ON ri (a)").unwrap();
        c.execute("CREATE INDEX ri_b ON ri (b)").unwrap();
        assert_eq!(c.load("ri", batch).unwrap(), ROWS as usize);
        c.execute("CREATE INDEX ri_s ON ri (s)").unwrap();
        c
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Id,
    A,
    B,
    S,
    Flag,
}

impl Col {
    fn data_type(self) -> DataType {
        match self {
            Col::Id | Col::A => DataType::Int64,
            Col::B => DataType::Float64,
            Col::S => DataType::Utf8,
            Col::Flag => DataType::Boolean,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Col::Id => "id",
            Col::A => "a",
            Col::B => "b",
            Col::S => "s",
            Col::Flag => "flag",
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl Op {
    fn sql(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::NotEq => "<>",
            Op::Lt => "<",
            Op::LtEq => "<=",
            Op::Gt => ">",
            Op::GtEq => ">=",
        }
    }

    fn holds(self, o: Ordering) -> bool {
        match self {
            Op::Eq => o == Ordering::Equal,
            Op::NotEq => o != Ordering::Equal,
            Op::Lt => o == Ordering::Less,
            Op::LtEq => o != Ordering::Greater,
            Op::Gt => o == Ordering::Greater,
            Op::GtEq => o != Ordering::Less,
        }
    }
}

/// A random predicate over `r`.
#[derive(Debug, Clone)]
enum Pred {
    Cmp(Col, Op, Value),
    Between {
        col: Col,
        low: Value,
        high: Value,
        negated: bool,
    },
    In {
        col: Col,
        list: Vec<Value>,
        negated: bool,
    },
    Like {
        pattern: String,
        negated: bool,
    },
    IsNull(Col, bool),
    /// The bare boolean column `flag`.
    Flag,
    Not(Box<Pred>),
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
}

/// How literals are written: inline, or as `$n` / `?` placeholders collected into `params`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Inline,
    Dollar,
    Question,
}

/// Whether `v` can be bound to a parameter compared with `col`.
fn fits(col: Col, v: &Value) -> bool {
    match (col.data_type(), v.data_type()) {
        (_, None) => false,
        (DataType::Float64, Some(DataType::Int64)) => true,
        (t, Some(u)) => t == u,
    }
}

struct Render {
    style: Style,
    params: Vec<Value>,
}

impl Render {
    /// A literal compared with `col`. Only values the column's parameter type accepts become
    /// placeholders (a DOUBLE value for a BIGINT parameter is rejected by design).
    fn lit(&mut self, col: Col, v: &Value) -> String {
        if self.style != Style::Inline && fits(col, v) {
            self.params.push(v.clone());
            return match self.style {
                Style::Dollar => format!("${}", self.params.len()),
                _ => "?".to_string(),
            };
        }
        match v {
            Value::Null => "NULL".into(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format!("{f:?}"),
            Value::Str(s) => format!("'{}'", s.replace('\'', "''")),
            Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
            Value::Decimal(..) | Value::Date(_) | Value::Timestamp(_) => v.to_sql(),
        }
    }

    fn pred(&mut self, p: &Pred) -> String {
        match p {
            Pred::Cmp(c, op, v) => format!("{} {} {}", c.name(), op.sql(), self.lit(*c, v)),
            Pred::Between {
                col,
                low,
                high,
                negated,
            } => format!(
                "{} {}BETWEEN {} AND {}",
                col.name(),
                if *negated { "NOT " } else { "" },
                self.lit(*col, low),
                self.lit(*col, high)
            ),
            Pred::In { col, list, negated } => {
                let items: Vec<String> = list.iter().map(|v| self.lit(*col, v)).collect();
                format!(
                    "{} {}IN ({})",
                    col.name(),
                    if *negated { "NOT " } else { "" },
                    items.join(", ")
                )
            }
            Pred::Like { pattern, negated } => format!(
                "s {}LIKE {}",
                if *negated { "NOT " } else { "" },
                self.lit(Col::S, &Value::Str(pattern.clone()))
            ),
            Pred::IsNull(c, negated) => {
                format!("{} IS {}NULL", c.name(), if *negated { "NOT " } else { "" })
            }
            Pred::Flag => "flag".into(),
            Pred::Not(x) => format!("NOT ({})", self.pred(x)),
            Pred::And(x, y) => format!("({}) AND ({})", self.pred(x), self.pred(y)),
            Pred::Or(x, y) => format!("({}) OR ({})", self.pred(x), self.pred(y)),
        }
    }
}

/// Renders `p` as SQL text with its parameters.
fn render(p: &Pred, style: Style) -> (String, Vec<Value>) {
    let mut r = Render {
        style,
        params: Vec::new(),
    };
    let sql = r.pred(p);
    (sql, r.params)
}

/// Compares two non-NULL values the way SQL does (numbers numerically).
fn cmp(x: &Value, y: &Value) -> Ordering {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => a.cmp(b),
        (Value::Str(a), Value::Str(b)) => a.cmp(b),
        (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
        _ => x
            .as_f64()
            .unwrap()
            .partial_cmp(&y.as_f64().unwrap())
            .unwrap(),
    }
}

/// SQL comparison with three-valued logic.
fn compare(x: &Value, op: Op, y: &Value) -> Option<bool> {
    if x.is_null() || y.is_null() {
        None
    } else {
        Some(op.holds(cmp(x, y)))
    }
}

fn and3(x: Option<bool>, y: Option<bool>) -> Option<bool> {
    match (x, y) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or3(x: Option<bool>, y: Option<bool>) -> Option<bool> {
    match (x, y) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

fn like(s: &[char], p: &[char]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some(('%', rest)) => (0..=s.len()).any(|i| like(&s[i..], rest)),
        Some(('_', rest)) => !s.is_empty() && like(&s[1..], rest),
        Some((c, rest)) => s.first() == Some(c) && like(&s[1..], rest),
    }
}

/// The reference evaluator: the SQL truth value of `p` on `row`.
fn eval(p: &Pred, row: &Row) -> Option<bool> {
    let negate = |neg: bool, v: Option<bool>| if neg { v.map(|b| !b) } else { v };
    match p {
        Pred::Cmp(c, op, v) => compare(&row.get(*c), *op, v),
        Pred::Between {
            col,
            low,
            high,
            negated,
        } => {
            let x = row.get(*col);
            let v = and3(compare(&x, Op::GtEq, low), compare(&x, Op::LtEq, high));
            negate(*negated, v)
        }
        Pred::In { col, list, negated } => {
            let x = row.get(*col);
            let v = list
                .iter()
                .map(|item| compare(&x, Op::Eq, item))
                .fold(Some(false), or3);
            negate(*negated, v)
        }
        Pred::Like { pattern, negated } => {
            let v = row.s.as_ref().map(|s| {
                let s: Vec<char> = s.chars().collect();
                let p: Vec<char> = pattern.chars().collect();
                like(&s, &p)
            });
            negate(*negated, v)
        }
        Pred::IsNull(c, negated) => Some(row.get(*c).is_null() != *negated),
        Pred::Flag => row.flag,
        Pred::Not(x) => eval(x, row).map(|b| !b),
        Pred::And(x, y) => and3(eval(x, row), eval(y, row)),
        Pred::Or(x, y) => or3(eval(x, row), eval(y, row)),
    }
}

/// `p` with every literal replaced by `f(column, literal)` (same positions, same types).
fn remap(p: &Pred, f: &mut dyn FnMut(Col, &Value) -> Value) -> Pred {
    match p {
        Pred::Cmp(c, op, v) => Pred::Cmp(*c, *op, f(*c, v)),
        Pred::Between {
            col,
            low,
            high,
            negated,
        } => Pred::Between {
            col: *col,
            low: f(*col, low),
            high: f(*col, high),
            negated: *negated,
        },
        Pred::In { col, list, negated } => Pred::In {
            col: *col,
            list: list.iter().map(|v| f(*col, v)).collect(),
            negated: *negated,
        },
        Pred::Like { pattern, negated } => match f(Col::S, &Value::Str(pattern.clone())) {
            Value::Str(pattern) => Pred::Like {
                pattern,
                negated: *negated,
            },
            other => panic!("LIKE pattern remapped to {other:?}"),
        },
        Pred::IsNull(c, n) => Pred::IsNull(*c, *n),
        Pred::Flag => Pred::Flag,
        Pred::Not(x) => Pred::Not(Box::new(remap(x, f))),
        Pred::And(x, y) => Pred::And(Box::new(remap(x, f)), Box::new(remap(y, f))),
        Pred::Or(x, y) => Pred::Or(Box::new(remap(x, f)), Box::new(remap(y, f))),
    }
}

/// A different value of the same type (NULL stays NULL), derived from `shift`.
fn shifted(v: &Value, shift: i64) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Int(i) => Value::Int(i + shift),
        Value::Float(x) => Value::Float(x + shift as f64 * 0.25),
        Value::Bool(b) => Value::Bool(*b != (shift % 2 != 0)),
        Value::Decimal(x, s) => Value::Decimal(x + i128::from(shift), *s),
        Value::Date(d) => Value::Date(d + shift as i32),
        Value::Timestamp(t) => Value::Timestamp(t + shift),
        Value::Str(s) => {
            // Keep '%' and '_' where they are; rotate the letters.
            let k = shift.rem_euclid(3) as usize;
            Value::Str(
                s.chars()
                    .map(|c| match ALPHABET.iter().position(|&x| x == c) {
                        Some(i) => ALPHABET[(i + k) % 3],
                        None => c,
                    })
                    .collect(),
            )
        }
    }
}

/// Rows the predicate keeps (WHERE keeps only TRUE).
fn selected(p: &Pred) -> Vec<&'static Row> {
    table_rows()
        .iter()
        .filter(|r| eval(p, r) == Some(true))
        .collect()
}

// ---- strategies ----

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Eq),
        Just(Op::NotEq),
        Just(Op::Lt),
        Just(Op::LtEq),
        Just(Op::Gt),
        Just(Op::GtEq),
    ]
}

fn string_lit() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), 0..4)
        .prop_map(|cs| cs.into_iter().collect())
}

/// A non-NULL literal of the column's type (numeric columns sometimes get the other numeric
/// type, which the planner coerces).
fn lit(col: Col) -> BoxedStrategy<Value> {
    match col {
        Col::Id => prop_oneof![
            9 => (-10i64..ROWS + 10).prop_map(Value::Int),
            1 => (-40i64..(ROWS + 10) * 4).prop_map(|q| Value::Float(q as f64 * 0.25)),
        ]
        .boxed(),
        Col::A => prop_oneof![
            9 => (-55i64..56).prop_map(Value::Int),
            1 => (-220i64..221).prop_map(|q| Value::Float(q as f64 * 0.25)),
        ]
        .boxed(),
        Col::B => prop_oneof![
            8 => (-90i64..91).prop_map(|q| Value::Float(q as f64 * 0.25)),
            2 => (-22i64..23).prop_map(Value::Int),
        ]
        .boxed(),
        Col::S => string_lit().prop_map(Value::Str).boxed(),
        Col::Flag => any::<bool>().prop_map(Value::Bool).boxed(),
    }
}

fn ordered_col() -> impl Strategy<Value = Col> {
    prop_oneof![
        1 => Just(Col::Id),
        3 => Just(Col::A),
        3 => Just(Col::B),
        3 => Just(Col::S),
    ]
}

fn leaf() -> impl Strategy<Value = Pred> {
    let cmp = ordered_col()
        .prop_flat_map(|c| (Just(c), op(), lit(c)))
        .prop_map(|(c, op, v)| Pred::Cmp(c, op, v));
    let flag_cmp = (any::<bool>(), any::<bool>()).prop_map(|(ne, v)| {
        Pred::Cmp(
            Col::Flag,
            if ne { Op::NotEq } else { Op::Eq },
            Value::Bool(v),
        )
    });
    let between = ordered_col()
        .prop_flat_map(|c| (Just(c), lit(c), lit(c), prop::bool::weighted(0.25)))
        .prop_map(|(col, low, high, negated)| Pred::Between {
            col,
            low,
            high,
            negated,
        });
    let in_list = ordered_col()
        .prop_flat_map(|c| {
            let item = prop_oneof![9 => lit(c), 1 => Just(Value::Null)];
            (
                Just(c),
                prop::collection::vec(item, 1..5),
                prop::bool::weighted(0.3),
            )
        })
        .prop_map(|(col, list, negated)| Pred::In { col, list, negated });
    let like = (
        prop::collection::vec(
            prop_oneof![
                3 => prop::sample::select(ALPHABET.to_vec()),
                2 => Just('%'),
                1 => Just('_'),
            ],
            0..4,
        ),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(p, negated)| Pred::Like {
            pattern: p.into_iter().collect(),
            negated,
        });
    // The commonest shape: a prefix pattern.
    let prefix = (string_lit(), prop::bool::weighted(0.2)).prop_map(|(p, negated)| Pred::Like {
        pattern: format!("{p}%"),
        negated,
    });
    let is_null = (
        prop_oneof![
            Just(Col::A),
            Just(Col::B),
            Just(Col::S),
            Just(Col::Flag),
            Just(Col::Id)
        ],
        any::<bool>(),
    )
        .prop_map(|(c, n)| Pred::IsNull(c, n));
    prop_oneof![
        6 => cmp,
        1 => flag_cmp,
        1 => Just(Pred::Flag),
        3 => between,
        3 => in_list,
        1 => like,
        2 => prefix,
        2 => is_null,
    ]
}

fn pred() -> impl Strategy<Value = Pred> {
    leaf().prop_recursive(3, 24, 2, |inner| {
        prop_oneof![
            1 => inner.clone().prop_map(|x| Pred::Not(Box::new(x))),
            2 => (inner.clone(), inner.clone()).prop_map(|(x, y)| Pred::And(Box::new(x), Box::new(y))),
            2 => (inner.clone(), inner).prop_map(|(x, y)| Pred::Or(Box::new(x), Box::new(y))),
        ]
    })
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![
        3 => Just(Style::Inline),
        1 => Just(Style::Dollar),
        1 => Just(Style::Question),
    ]
}

/// Proptest's seed unless `PROPTEST_RNG_SEED` says otherwise.
const PROPTEST_SEED: u64 = 0x5EED_F117;

fn config() -> ProptestConfig {
    ProptestConfig {
        // Keep failures in the report, not in a regression file next to the test.
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(
            std::env::var("PROPTEST_RNG_SEED")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(PROPTEST_SEED),
        ),
        // PROPTEST_CASES=n runs more cases when hunting for bugs.
        ..ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(64),
        )
    }
}

fn run(sql: &str, params: &[Value]) -> Vec<Vec<Value>> {
    shared()
        .query(sql, params)
        .unwrap_or_else(|e| panic!("{sql} with {params:?} failed: {e}"))
        .rows()
}

/// COUNT(*), COUNT(a), SUM(a), MIN(a), MAX(a) over `rows`.
fn reference_aggregates(rows: &[&Row]) -> Vec<Value> {
    let a: Vec<i64> = rows.iter().filter_map(|r| r.a).collect();
    vec![
        Value::Int(rows.len() as i64),
        Value::Int(a.len() as i64),
        if a.is_empty() {
            Value::Null
        } else {
            Value::Int(a.iter().sum())
        },
        a.iter().min().copied().into(),
        a.iter().max().copied().into(),
    ]
}

/// Sorts rows by their first column (NULL first).
fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by(|x, y| x[0].sort_cmp(&y[0]));
    rows
}

/// `key, COUNT(*), SUM(a)` per group, sorted by key.
fn reference_groups(rows: &[&Row], key: impl Fn(&Row) -> Value) -> Vec<Vec<Value>> {
    // Keyed by a sortable rendering; the Value itself is kept alongside.
    let mut groups: BTreeMap<String, (Value, i64, Option<i64>)> = BTreeMap::new();
    for r in rows {
        let k = key(r);
        let e = groups.entry(format!("{k:?}")).or_insert((k, 0, None));
        e.1 += 1;
        if let Some(a) = r.a {
            e.2 = Some(e.2.unwrap_or(0) + a);
        }
    }
    sorted(
        groups
            .into_values()
            .map(|(k, n, s)| vec![k, Value::Int(n), s.into()])
            .collect(),
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn filter_returns_the_reference_ids(p in pred(), st in style()) {
        let (where_sql, params) = render(&p, st);
        let want: Vec<Vec<Value>> = selected(&p).iter().map(|r| vec![Value::Int(r.id)]).collect();
        for table in TABLES {
            let sql = format!("SELECT id FROM {table} WHERE {where_sql} ORDER BY id");
            let got = run(&sql, &params);
            prop_assert_eq!(&got, &want, "{} with {:?}", sql, params);
        }
    }

    /// The same SQL text with new parameter values reuses the cached plan; the answers must
    /// follow the new values.
    #[test]
    fn cached_plan_with_new_parameter_values(
        p in pred(),
        dollar in any::<bool>(),
        shifts in prop::collection::vec(-7i64..8, 1..4),
    ) {
        let st = if dollar { Style::Dollar } else { Style::Question };
        let (where_sql, _) = render(&p, st);
        let sql = format!("SELECT id, a FROM ri WHERE {where_sql} ORDER BY id");
        for shift in std::iter::once(0).chain(shifts) {
            let q = remap(&p, &mut |c, v| {
                if fits(c, v) { shifted(v, shift) } else { v.clone() }
            });
            let (again, params) = render(&q, st);
            prop_assert_eq!(&again, &where_sql);
            let got = run(&sql, &params);
            let want: Vec<Vec<Value>> = selected(&q)
                .iter()
                .map(|r| vec![Value::Int(r.id), r.a.into()])
                .collect();
            prop_assert_eq!(got, want, "{} with {:?}", sql, params);
        }
    }

    #[test]
    fn aggregates_match_the_reference(p in pred(), st in style()) {
        let (where_sql, params) = render(&p, st);
        let want = vec![reference_aggregates(&selected(&p))];
        for table in TABLES {
            let sql = format!(
                "SELECT COUNT(*), COUNT(a), SUM(a), MIN(a), MAX(a) FROM {table} WHERE {where_sql}"
            );
            let got = run(&sql, &params);
            prop_assert_eq!(&got, &want, "{} with {:?}", sql, params);
        }
    }

    #[test]
    fn grouped_aggregates_match_the_reference(p in pred(), by_flag in any::<bool>()) {
        let (where_sql, params) = render(&p, Style::Inline);
        let (key_sql, want) = if by_flag {
            ("flag", reference_groups(&selected(&p), |r| r.flag.into()))
        } else {
            ("a % 5", reference_groups(&selected(&p), |r| r.a.map(|a| a % 5).into()))
        };
        let sql = format!(
            "SELECT {key_sql}, COUNT(*), SUM(a) FROM r WHERE {where_sql} GROUP BY {key_sql}"
        );
        let got = sorted(run(&sql, &params));
        prop_assert_eq!(got, want, "{}", sql);
    }
}

/// Fixed sanity checks of the reference itself, so a wrong reference cannot hide a bug.
#[test]
fn reference_and_table_agree_on_simple_facts() {
    let c = shared();
    let rows = table_rows();
    let nulls_a = rows.iter().filter(|r| r.a.is_none()).count() as i64;
    let got = c
        .query(
            "SELECT COUNT(*), COUNT(a), COUNT(b), COUNT(s), COUNT(flag) FROM r",
            &[],
        )
        .unwrap()
        .rows();
    let count = |f: &dyn Fn(&Row) -> bool| rows.iter().filter(|r| f(r)).count() as i64;
    assert_eq!(
        got,
        vec![vec![
            Value::Int(ROWS),
            Value::Int(ROWS - nulls_a),
            Value::Int(count(&|r| r.b.is_some())),
            Value::Int(count(&|r| r.s.is_some())),
            Value::Int(count(&|r| r.flag.is_some())),
        ]]
    );
    // Every column has NULLs and non-NULLs, so the generated predicates see both.
    for col in ["a", "b", "s", "flag"] {
        let n = c
            .query(&format!("SELECT COUNT(*) FROM r WHERE {col} IS NULL"), &[])
            .unwrap()
            .rows();
        let n = n[0][0].as_i64().unwrap();
        assert!(n > 0 && n < ROWS, "{col}: {n} NULLs");
    }
    // `ri` really is probed through its indexes (also the one created after the load), so
    // the generated predicates exercise index lookups as well as scans.
    for (sql, col) in [
        ("SELECT id FROM ri WHERE a = 3", "a"),
        ("SELECT id FROM ri WHERE b BETWEEN 1.5 AND 2", "b"),
        ("SELECT id FROM ri WHERE s >= 'b'", "s"),
        ("SELECT id FROM ri WHERE a IN (1, NULL, 7)", "a"),
    ] {
        let plan = c.explain(sql, &[]).unwrap();
        assert!(
            plan.contains("IndexScan ri") && plan.contains(&format!("index on {col}")),
            "{sql}:\n{plan}"
        );
        let plain = c.explain(&sql.replace("ri", "r"), &[]).unwrap();
        assert!(!plain.contains("IndexScan"), "{plain}");
    }

    // b holds floats that are not integers.
    let frac = count(&|r| r.b.is_some_and(|b| b.fract() != 0.0));
    assert!(frac > 0);
    let got = c.query("SELECT SUM(b) FROM r", &[]).unwrap().rows();
    let want: f64 = rows.iter().filter_map(|r| r.b).sum();
    assert_eq!(got, vec![vec![Value::Float(want)]]);
}
