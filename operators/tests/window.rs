//! Property tests of the window kernel against a naive evaluator written here: for every row,
//! its partition is found by scanning all rows, sorted stably, and its frame is the rows of
//! the partition that satisfy the frame's definition one by one (O(n · frame)); the functions
//! are then computed from those rows over `Value`s. Random partitions, orders (with NULLs
//! and ties), frames (ROWS, RANGE, GROUPS, every bound, EXCLUDE), functions, input chunks and
//! output batch sizes; the kernel's output must equal the evaluator's, row for row.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::cmp::Ordering;
use weir_operators::kernels::window::WindowOp;
use weir_operators::kernels::{drain, ExecContext, Operator};
use weir_operators::plan::{
    AggFunc, AggregateExpr, FrameBound, FrameExclude, FrameUnits, SortKey, WindowExpr, WindowFrame,
    WindowFunc,
};
use weir_operators::{Batch, DataType, Expr, Reservation, UnboundedPool, Value};

/// Columns: p (partition key), o (order key), x (BIGINT argument), s (text), f (DOUBLE).
const TYPES: [DataType; 5] = [
    DataType::Int64,
    DataType::Int64,
    DataType::Int64,
    DataType::Utf8,
    DataType::Float64,
];
const P: usize = 0;
const O: usize = 1;
const X: usize = 2;
const S: usize = 3;
const F: usize = 4;

type Row = Vec<Value>;

fn rows() -> impl Strategy<Value = Vec<Row>> {
    let opt_int = |lo: i64, hi: i64, p: f64| proptest::option::weighted(p, lo..hi);
    let row = (
        opt_int(0, 3, 0.9),
        opt_int(0, 6, 0.85),
        opt_int(-20, 20, 0.85),
        proptest::option::weighted(0.85, "[abc]{0,2}"),
        opt_int(-20, 20, 0.85),
    )
        .prop_map(|(p, o, x, s, f)| {
            vec![
                Value::from(p),
                Value::from(o),
                Value::from(x),
                s.map_or(Value::Null, Value::Str),
                f.map_or(Value::Null, |f| Value::Float(f as f64)),
            ]
        });
    proptest::collection::vec(row, 0..40)
}

/// A window spec: partition keys, ORDER BY, and the frame of its frame functions.
#[derive(Debug, Clone)]
struct Spec {
    partition: bool,
    order: Vec<SortKey>,
    frame: WindowFrame,
}

fn bound(start: bool, offsets: bool) -> impl Strategy<Value = FrameBound> {
    let n = || (0i64..4).prop_map(Expr::lit);
    let mut options: Vec<BoxedStrategy<FrameBound>> = vec![Just(FrameBound::CurrentRow).boxed()];
    if start {
        options.push(Just(FrameBound::UnboundedPreceding).boxed());
    } else {
        options.push(Just(FrameBound::UnboundedFollowing).boxed());
    }
    if offsets {
        options.push(n().prop_map(FrameBound::Preceding).boxed());
        options.push(n().prop_map(FrameBound::Following).boxed());
    }
    proptest::strategy::Union::new(options)
}

fn spec() -> impl Strategy<Value = Spec> {
    let key = |col: usize| {
        (any::<bool>(), any::<bool>()).prop_map(move |(descending, nulls_first)| SortKey {
            expr: Expr::col(col),
            descending,
            nulls_first,
        })
    };
    let order = prop_oneof![
        Just(vec![]),
        key(O).prop_map(|k| vec![k]),
        (key(O), key(X)).prop_map(|(a, b)| vec![a, b]),
    ];
    let exclude = proptest::sample::select(vec![
        FrameExclude::NoOthers,
        FrameExclude::CurrentRow,
        FrameExclude::Group,
        FrameExclude::Ties,
    ]);
    let units = proptest::sample::select(vec![
        FrameUnits::Rows,
        FrameUnits::Range,
        FrameUnits::Groups,
    ]);
    (any::<bool>(), order, units, exclude).prop_flat_map(|(partition, order, units, exclude)| {
        // RANGE offsets need exactly one ORDER BY key.
        let offsets = units != FrameUnits::Range || order.len() == 1;
        (bound(true, offsets), bound(false, offsets)).prop_map(move |(start, end)| Spec {
            partition,
            order: order.clone(),
            frame: WindowFrame {
                units,
                start,
                end,
                exclude,
            },
        })
    })
}

fn agg(
    func: AggFunc,
    col: Option<usize>,
    input_type: DataType,
) -> (WindowFunc, Vec<Expr>, DataType) {
    let out = AggregateExpr {
        func,
        arg: None,
        input_type,
        param: None,
        order_by: Vec::new(),
    }
    .output_type();
    (
        WindowFunc::Aggregate(func),
        col.map(Expr::col).into_iter().collect(),
        out,
    )
}

/// One function: its kind, arguments and result type.
fn function() -> impl Strategy<Value = (WindowFunc, Vec<Expr>, DataType)> {
    let int_null = || Expr::Cast {
        expr: Box::new(Expr::Literal(Value::Null)),
        to: DataType::Int64,
    };
    let offset = prop_oneof![(0i64..3).prop_map(Expr::lit), Just(Expr::col(O))];
    let default = prop_oneof![Just(int_null()), Just(Expr::lit(-1))];
    prop_oneof![
        Just((WindowFunc::RowNumber, vec![], DataType::Int64)),
        Just((WindowFunc::Rank, vec![], DataType::Int64)),
        Just((WindowFunc::DenseRank, vec![], DataType::Int64)),
        Just((WindowFunc::PercentRank, vec![], DataType::Float64)),
        Just((WindowFunc::CumeDist, vec![], DataType::Float64)),
        (1i64..5).prop_map(|n| (WindowFunc::Ntile, vec![Expr::lit(n)], DataType::Int64)),
        (any::<bool>(), offset, default).prop_map(|(lead, off, d)| {
            let f = if lead {
                WindowFunc::Lead
            } else {
                WindowFunc::Lag
            };
            (f, vec![Expr::col(X), off, d], DataType::Int64)
        }),
        Just((WindowFunc::FirstValue, vec![Expr::col(S)], DataType::Utf8)),
        Just((WindowFunc::LastValue, vec![Expr::col(X)], DataType::Int64)),
        (1i64..4).prop_map(|n| (
            WindowFunc::NthValue,
            vec![Expr::col(S), Expr::lit(n)],
            DataType::Utf8
        )),
        Just(agg(AggFunc::CountStar, None, DataType::Int64)),
        Just(agg(AggFunc::Count, Some(S), DataType::Utf8)),
        Just(agg(AggFunc::Sum, Some(X), DataType::Int64)),
        Just(agg(AggFunc::Avg, Some(X), DataType::Int64)),
        Just(agg(AggFunc::Sum, Some(F), DataType::Float64)),
        Just(agg(AggFunc::Avg, Some(F), DataType::Float64)),
        Just(agg(AggFunc::Min, Some(X), DataType::Int64)),
        Just(agg(AggFunc::Max, Some(S), DataType::Utf8)),
        Just(agg(AggFunc::Min, Some(F), DataType::Float64)),
        Just(agg(AggFunc::Max, Some(F), DataType::Float64)),
        Just(agg(AggFunc::Total, Some(F), DataType::Float64)),
        Just(agg(AggFunc::VarSamp, Some(F), DataType::Float64)),
        Just(agg(AggFunc::StddevPop, Some(F), DataType::Float64)),
        Just((
            WindowFunc::Aggregate(AggFunc::StringAgg),
            vec![Expr::col(S), Expr::lit("|")],
            DataType::Utf8
        )),
    ]
}

// ------------------------------------------------------------------------------------------
// The naive evaluator
// ------------------------------------------------------------------------------------------

/// SQL order of two values of one key: NULLs where `k` puts them, values ascending or
/// descending.
fn key_cmp(a: &Value, b: &Value, k: &SortKey) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => {
            if k.nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, true) => {
            if k.nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (false, false) => {
            let o = a.sort_cmp(b);
            if k.descending {
                o.reverse()
            } else {
                o
            }
        }
    }
}

fn col_of(k: &SortKey) -> usize {
    k.expr.column_index().expect("keys are columns")
}

/// Every row's partition: its rows' input indices, sorted stably by the ORDER BY.
fn sorted_partition(rows: &[Row], i: usize, spec: &Spec) -> Vec<usize> {
    let mut part: Vec<usize> = (0..rows.len())
        .filter(|&j| !spec.partition || rows[j][P] == rows[i][P])
        .collect();
    part.sort_by(|&a, &b| {
        for k in &spec.order {
            let c = col_of(k);
            let o = key_cmp(&rows[a][c], &rows[b][c], k);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
    part
}

/// Peer group numbers of a sorted partition (0, 0, 1, 2, 2, ...).
fn groups(rows: &[Row], part: &[usize], spec: &Spec) -> Vec<i64> {
    let mut g = Vec::with_capacity(part.len());
    for (q, &j) in part.iter().enumerate() {
        let same = q > 0
            && spec.order.iter().all(|k| {
                let c = col_of(k);
                key_cmp(&rows[j][c], &rows[part[q - 1]][c], k) == Ordering::Equal
            });
        g.push(match (q, same) {
            (0, _) => 0,
            (_, true) => g[q - 1],
            (_, false) => g[q - 1] + 1,
        });
    }
    g
}

fn offset(e: &Expr) -> i64 {
    match e {
        Expr::Literal(Value::Int(n)) => *n,
        other => panic!("offset {other}"),
    }
}

/// The positions (in the sorted partition) of the frame of the row at position `pos`.
fn frame_rows(rows: &[Row], part: &[usize], g: &[i64], pos: usize, spec: &Spec) -> Vec<usize> {
    let f = &spec.frame;
    let p = pos as i64;
    // The ORDER BY value of position q, made ascending, NULLs at the end they sort to.
    let value = |q: usize| -> Option<f64> {
        let k = &spec.order[0];
        let v = &rows[part[q]][col_of(k)];
        let x = v.as_f64()?;
        Some(if k.descending { -x } else { x })
    };
    let null_at = |q: usize| -> f64 {
        match value(q) {
            Some(x) => x,
            None if spec.order[0].nulls_first => f64::NEG_INFINITY,
            None => f64::INFINITY,
        }
    };
    let inside = |q: usize, b: &FrameBound, start: bool| -> bool {
        let qq = q as i64;
        match (f.units, b) {
            (_, FrameBound::UnboundedPreceding) => start,
            (_, FrameBound::UnboundedFollowing) => !start,
            (FrameUnits::Rows, b) => {
                let at = match b {
                    FrameBound::Preceding(n) => p - offset(n),
                    FrameBound::Following(n) => p + offset(n),
                    _ => p,
                };
                if start {
                    qq >= at
                } else {
                    qq <= at
                }
            }
            (FrameUnits::Groups, b) => {
                let at = match b {
                    FrameBound::Preceding(n) => g[pos] - offset(n),
                    FrameBound::Following(n) => g[pos] + offset(n),
                    _ => g[pos],
                };
                if start {
                    g[q] >= at
                } else {
                    g[q] <= at
                }
            }
            (FrameUnits::Range, FrameBound::CurrentRow) => {
                if start {
                    g[q] >= g[pos]
                } else {
                    g[q] <= g[pos]
                }
            }
            (FrameUnits::Range, b) => {
                // An offset from a NULL reaches its NULL peers only.
                let Some(v) = value(pos) else {
                    return if start {
                        g[q] >= g[pos]
                    } else {
                        g[q] <= g[pos]
                    };
                };
                let at = match b {
                    FrameBound::Preceding(n) => v - offset(n) as f64,
                    _ => v + offsets_of(b) as f64,
                };
                if start {
                    null_at(q) >= at
                } else {
                    null_at(q) <= at
                }
            }
        }
    };
    (0..part.len())
        .filter(|&q| inside(q, &f.start, true) && inside(q, &f.end, false))
        .filter(|&q| match f.exclude {
            FrameExclude::NoOthers => true,
            FrameExclude::CurrentRow => q != pos,
            FrameExclude::Group => g[q] != g[pos],
            FrameExclude::Ties => g[q] != g[pos] || q == pos,
        })
        .collect()
}

fn offsets_of(b: &FrameBound) -> i64 {
    match b {
        FrameBound::Preceding(n) | FrameBound::Following(n) => offset(n),
        _ => 0,
    }
}

fn arg(rows: &[Row], e: &Expr, row: usize) -> Value {
    match e {
        Expr::Column(c) => rows[row][*c].clone(),
        Expr::Literal(v) => v.clone(),
        Expr::Cast { .. } => Value::Null,
        other => panic!("argument {other}"),
    }
}

/// `f` for every row (in input order): each partition sorted once, each row's value from
/// its position in it.
fn naive_all(rows: &[Row], spec: &Spec, f: &WindowExpr) -> Vec<Value> {
    let mut out = vec![Value::Null; rows.len()];
    let mut done = vec![false; rows.len()];
    for i in 0..rows.len() {
        if done[i] {
            continue;
        }
        let part = sorted_partition(rows, i, spec);
        let g = groups(rows, &part, spec);
        for (pos, &j) in part.iter().enumerate() {
            out[j] = naive(rows, spec, f, &part, &g, pos);
            done[j] = true;
        }
    }
    out
}

/// `f` at position `pos` of the sorted partition `part` (peer groups `g`).
fn naive(
    rows: &[Row],
    spec: &Spec,
    f: &WindowExpr,
    part: &[usize],
    g: &[i64],
    pos: usize,
) -> Value {
    let i = part[pos];
    let len = part.len();
    let first_of_group = g.iter().position(|&x| x == g[pos]).unwrap();
    let end_of_group = g.iter().rposition(|&x| x == g[pos]).unwrap() + 1;
    let frame: Vec<usize> = frame_rows(rows, part, g, pos, spec)
        .into_iter()
        .map(|q| part[q])
        .collect();
    let values = |c: &Expr| -> Vec<Value> {
        frame
            .iter()
            .map(|&j| arg(rows, c, j))
            .filter(|v| !v.is_null())
            .collect()
    };
    match f.func {
        WindowFunc::RowNumber => Value::Int(pos as i64 + 1),
        WindowFunc::Rank => Value::Int(first_of_group as i64 + 1),
        WindowFunc::DenseRank => Value::Int(g[pos] + 1),
        WindowFunc::PercentRank => Value::Float(if len > 1 {
            first_of_group as f64 / (len - 1) as f64
        } else {
            0.0
        }),
        WindowFunc::CumeDist => Value::Float(end_of_group as f64 / len as f64),
        WindowFunc::Ntile => {
            let n = offset(&f.args[0]) as usize;
            // Deal the rows out: the first len % n buckets get one more.
            let mut bucket = 1;
            let mut filled = 0;
            for q in 0..=pos {
                let size = len / n + usize::from(bucket <= len % n);
                if filled == size {
                    bucket += 1;
                    filled = 0;
                }
                filled += 1;
                if q == pos {
                    break;
                }
            }
            Value::Int(bucket as i64)
        }
        WindowFunc::Lag | WindowFunc::Lead => {
            let off = arg(rows, &f.args[1], i);
            let Value::Int(off) = off else {
                return Value::Null;
            };
            let at = if f.func == WindowFunc::Lag {
                pos as i64 - off
            } else {
                pos as i64 + off
            };
            if (0..len as i64).contains(&at) {
                arg(rows, &f.args[0], part[at as usize])
            } else {
                arg(rows, &f.args[2], i)
            }
        }
        WindowFunc::FirstValue => frame
            .first()
            .map_or(Value::Null, |&j| arg(rows, &f.args[0], j)),
        WindowFunc::LastValue => frame
            .last()
            .map_or(Value::Null, |&j| arg(rows, &f.args[0], j)),
        WindowFunc::NthValue => {
            let n = offset(&f.args[1]) as usize;
            frame
                .get(n - 1)
                .map_or(Value::Null, |&j| arg(rows, &f.args[0], j))
        }
        WindowFunc::Aggregate(AggFunc::CountStar) => Value::Int(frame.len() as i64),
        WindowFunc::Aggregate(func) => {
            let v = values(&f.args[0]);
            match func {
                AggFunc::Count => Value::Int(v.len() as i64),
                AggFunc::Total => Value::Float(v.iter().map(|x| x.as_f64().unwrap()).sum()),
                _ if v.is_empty() => Value::Null,
                AggFunc::Sum if f.output_type == DataType::Int64 => {
                    Value::Int(v.iter().map(|x| x.as_i64().unwrap()).sum())
                }
                AggFunc::Sum => Value::Float(v.iter().map(|x| x.as_f64().unwrap()).sum()),
                AggFunc::Avg => Value::Float(
                    v.iter().map(|x| x.as_f64().unwrap()).sum::<f64>() / v.len() as f64,
                ),
                AggFunc::Min => v.into_iter().min_by(|a, b| a.sort_cmp(b)).unwrap(),
                AggFunc::Max => v.into_iter().max_by(|a, b| a.sort_cmp(b)).unwrap(),
                // Two passes: the mean, then the squared deviations from it.
                AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => {
                    let x: Vec<f64> = v.iter().map(|x| x.as_f64().unwrap()).collect();
                    let n = x.len() as f64;
                    let mean = x.iter().sum::<f64>() / n;
                    let m2: f64 = x.iter().map(|x| (x - mean) * (x - mean)).sum();
                    let sample = matches!(func, AggFunc::VarSamp | AggFunc::StddevSamp);
                    if sample && x.len() < 2 {
                        return Value::Null;
                    }
                    let var = m2 / if sample { n - 1.0 } else { n };
                    Value::Float(if func.name().starts_with("STDDEV") {
                        var.sqrt()
                    } else {
                        var
                    })
                }
                AggFunc::StringAgg => {
                    let texts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                    Value::Str(texts.join("|"))
                }
                AggFunc::CountStar | AggFunc::PercentileCont => unreachable!(),
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Running the kernel
// ------------------------------------------------------------------------------------------

fn run(
    rows: &[Row],
    spec: &Spec,
    functions: &[WindowExpr],
    keep: Option<usize>,
    chunk: usize,
    batch_size: usize,
) -> Vec<Row> {
    let mut ctx = ExecContext::new(vec![]);
    ctx.batch_size = batch_size;
    let pool = UnboundedPool::new();
    let partition_by = if spec.partition {
        vec![Expr::col(P)]
    } else {
        vec![]
    };
    let mut op = WindowOp::new(
        partition_by,
        spec.order.clone(),
        functions.to_vec(),
        keep,
        ctx,
        Reservation::new(pool.clone()),
    );
    for part in rows.chunks(chunk.max(1)) {
        op.push(0, Batch::from_rows(&TYPES, part).unwrap()).unwrap();
    }
    op.finish(0).unwrap();
    let mut out = Vec::new();
    drain(&mut op, &mut out).unwrap();
    assert!(!op.has_output());
    assert_eq!(pool.used(), 0, "every byte returned once the output left");
    for b in &out {
        assert!(!b.is_empty() && b.num_rows() <= batch_size.max(1));
    }
    out.iter().flat_map(|b| b.rows()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        rng_seed: RngSeed::Fixed(0x00c0_ffee_3600),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn kernel_matches_the_naive_evaluator(
        rows in rows(),
        spec in spec(),
        fns in proptest::collection::vec(function(), 1..4),
        chunk in 1usize..12,
        batch_size in 1usize..9,
    ) {
        let functions: Vec<WindowExpr> = fns
            .into_iter()
            .map(|(func, args, output_type)| WindowExpr {
                func,
                args,
                output_type,
                frame: spec.frame.clone(),
            })
            .collect();
        let got = run(&rows, &spec, &functions, None, chunk, batch_size);
        prop_assert_eq!(got.len(), rows.len());
        let want: Vec<Vec<Value>> = functions.iter().map(|f| naive_all(&rows, &spec, f)).collect();
        for (i, row) in got.iter().enumerate() {
            prop_assert_eq!(&row[..TYPES.len()], &rows[i][..], "row {} in input order", i);
            for (k, f) in functions.iter().enumerate() {
                let (got, want) = (&row[TYPES.len() + k], &want[k][i]);
                // The variances round differently from the naive two passes.
                let close = matches!((got, want), (Value::Float(a), Value::Float(b))
                    if (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0));
                prop_assert!(
                    close || got == want,
                    "row {} {:?} {:?} over {:?}: {:?} vs {:?}", i, f.func, f.args, spec, got, want
                );
            }
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        rng_seed: RngSeed::Fixed(0x00c0_ffee_3601),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// A top-N window outputs exactly the rows numbered up to `keep` in their partition, in
    /// input order, with the values a window over every row gives them, however the input
    /// is cut (the buffer is cut as it goes once it passes its threshold).
    #[test]
    fn top_n_keeps_the_first_rows_of_each_partition(
        rows in proptest::collection::vec(rows(), 1..4).prop_map(|v| v.concat()),
        spec in spec(),
        keep in 0usize..4,
        chunk in 1usize..12,
    ) {
        let frame = WindowFrame {
            units: FrameUnits::Rows,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
            exclude: FrameExclude::NoOthers,
        };
        let functions = vec![
            WindowExpr { func: WindowFunc::RowNumber, args: vec![], output_type: DataType::Int64, frame: frame.clone() },
            WindowExpr { func: WindowFunc::Rank, args: vec![], output_type: DataType::Int64, frame: frame.clone() },
            WindowExpr {
                func: WindowFunc::Aggregate(AggFunc::Sum),
                args: vec![Expr::col(X)],
                output_type: DataType::Int64,
                frame,
            },
        ];
        let spec = Spec { frame: functions[0].frame.clone(), ..spec };
        // Many copies of the rows, so that the buffer passes its threshold and is cut.
        let many: Vec<Row> = (0..1500 / rows.len().max(1) + 1).flat_map(|_| rows.clone()).collect();
        let got = run(&many, &spec, &functions, Some(keep), chunk * 40, 64);
        let values: Vec<Vec<Value>> = functions.iter().map(|f| naive_all(&many, &spec, f)).collect();
        let mut want = Vec::new();
        for (i, row) in many.iter().enumerate() {
            if values[0][i].as_i64().unwrap() <= keep as i64 {
                let mut row = row.clone();
                row.extend(values.iter().map(|v| v[i].clone()));
                want.push(row);
            }
        }
        prop_assert_eq!(got, want);
    }
}
