//! How `weir bench jmh` measures one case: `threads` client threads, each with a client of
//! its own (an in-process cluster handle or a PostgreSQL connection), in a closed loop for
//! JMH's warm-up and measured iterations. The threads are started once per case and meet at
//! a barrier before and after every iteration, so a connection and its prepared statement
//! are set up once, outside the measured time.
//!
//! Every call's answer is checked as the original benchmark checks it ([`check`]); the
//! first wrong answer or error stops the case and is reported.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use super::score::{MEASURED_ITERATIONS, WARMUP_ITERATIONS};
use crate::demo::{self, SeedQuery};

/// `querySumIndexed`'s answer on 100,000 rows: the sum of 0..100000.
pub const EXPECTED_SUM: i64 = 4_999_950_000;

/// What one call returned and cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Answer {
    /// Rows returned.
    pub rows: usize,
    /// The first row's first value as a number, when it is one (`querySumIndexed`'s sum).
    pub first_number: Option<f64>,
    /// Messages between nodes, when the client can see them.
    pub messages: Option<u64>,
    /// Encoded bytes between nodes, when the client can see them.
    pub bytes: Option<u64>,
}

/// A client that runs one seed query, made once per thread and case.
pub trait SeedClient {
    /// Runs the case's query with random key `key` (the query's parameter is derived from it).
    fn call(&mut self, key: i64) -> Result<Answer, String>;
}

/// Checks `answer` as the original benchmark does: the row count, and `querySumIndexed`'s sum.
pub fn check(q: &SeedQuery, key: i64, answer: &Answer) -> Result<(), String> {
    let expected = q.expected_rows(demo::ITEM_ROWS);
    if answer.rows != expected {
        return Err(format!(
            "{} with key {key} returned {} rows, expected {expected}",
            q.name, answer.rows
        ));
    }
    if q.name == "querySumIndexed" && answer.first_number != Some(EXPECTED_SUM as f64) {
        return Err(format!(
            "querySumIndexed returned {:?}, expected {EXPECTED_SUM}",
            answer.first_number
        ));
    }
    Ok(())
}

/// One iteration's figures, summed over the threads.
#[derive(Debug, Default)]
pub struct Iteration {
    /// Calls completed.
    pub ops: u64,
    /// From the start barrier until every thread finished its last call.
    pub elapsed: Duration,
    /// Each call's latency, µs.
    pub latencies_us: Vec<f64>,
    /// Messages between nodes, summed over calls (`None` when the client cannot see them).
    pub messages: Option<u64>,
    /// Bytes between nodes, summed over calls.
    pub bytes: Option<u64>,
}

impl Iteration {
    fn add(&mut self, other: Iteration) {
        self.ops += other.ops;
        self.latencies_us.extend(other.latencies_us);
        self.messages = add_known(self.messages, other.messages);
        self.bytes = add_known(self.bytes, other.bytes);
    }
}

fn add_known(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (x, None) | (None, x) => x,
    }
}

/// The random generator of thread `thread` for case `case_index`: reproducible per seed.
fn rng(seed: u64, case_index: usize, thread: usize) -> StdRng {
    StdRng::seed_from_u64(
        seed.wrapping_add((case_index as u64) << 32)
            .wrapping_add(thread as u64),
    )
}

/// How one case is run.
pub struct CaseRun<'a> {
    /// The query measured.
    pub query: &'a SeedQuery,
    /// Its index among the cases (seeds the keys).
    pub case_index: usize,
    /// Client threads.
    pub threads: usize,
    /// Seconds per iteration.
    pub seconds: f64,
    /// Seed of the keys.
    pub seed: u64,
}

/// Runs JMH's iterations of one case: `make(thread)` builds each thread's client (on that
/// thread), `on_iteration(i)` is called before iteration `i` starts. Returns the measured
/// iterations (warm-up ones are run and dropped).
pub fn run_case<C, M>(
    run: &CaseRun<'_>,
    make: M,
    on_iteration: impl Fn(usize),
) -> Result<Vec<Iteration>, String>
where
    C: SeedClient,
    M: Fn(usize) -> Result<C, String> + Sync,
{
    let iterations = WARMUP_ITERATIONS + MEASURED_ITERATIONS;
    let barrier = Barrier::new(run.threads + 1);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    let per_iteration: Mutex<Vec<Iteration>> =
        Mutex::new((0..iterations).map(|_| Iteration::default()).collect());
    let fail = |e: String| {
        let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        failed.store(true, Ordering::SeqCst);
    };
    let seconds = Duration::from_secs_f64(run.seconds.max(0.0));
    std::thread::scope(|s| {
        for t in 0..run.threads {
            let (barrier, failed, fail, per_iteration, make) =
                (&barrier, &failed, &fail, &per_iteration, &make);
            s.spawn(move || {
                let mut client = make(t).map_err(fail).ok();
                let mut rng = rng(run.seed, run.case_index, t);
                for i in 0..iterations {
                    barrier.wait();
                    if let Some(c) = client.as_mut().filter(|_| !failed.load(Ordering::SeqCst)) {
                        match closed_loop(c, run.query, seconds, &mut rng, failed) {
                            Ok(it) => {
                                per_iteration.lock().unwrap_or_else(|p| p.into_inner())[i].add(it)
                            }
                            Err(e) => fail(e),
                        }
                    }
                    barrier.wait();
                    if failed.load(Ordering::SeqCst) {
                        return;
                    }
                }
            });
        }
        for i in 0..iterations {
            on_iteration(i);
            barrier.wait();
            let start = Instant::now();
            barrier.wait();
            per_iteration.lock().unwrap_or_else(|p| p.into_inner())[i].elapsed = start.elapsed();
            if failed.load(Ordering::SeqCst) {
                return;
            }
        }
    });
    if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let mut all = per_iteration
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    Ok(all.split_off(WARMUP_ITERATIONS))
}

/// One thread's closed loop for one iteration: calls until `seconds` have passed (at least
/// one call; the call running at the deadline finishes and counts).
fn closed_loop<C: SeedClient>(
    client: &mut C,
    q: &SeedQuery,
    seconds: Duration,
    rng: &mut StdRng,
    failed: &AtomicBool,
) -> Result<Iteration, String> {
    let deadline = Instant::now() + seconds;
    let mut it = Iteration {
        messages: Some(0),
        bytes: Some(0),
        ..Default::default()
    };
    loop {
        let key = rng.random_range(0..demo::ITEM_ROWS as i64);
        let t = Instant::now();
        let answer = client.call(key)?;
        let latency = t.elapsed();
        check(q, key, &answer)?;
        it.ops += 1;
        it.latencies_us.push(latency.as_secs_f64() * 1e6);
        it.messages = it.messages.zip(answer.messages).map(|(a, b)| a + b);
        it.bytes = it.bytes.zip(answer.bytes).map(|(a, b)| a + b);
        if Instant::now() >= deadline || failed.load(Ordering::SeqCst) {
            return Ok(it);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that answers from a counter: right until call `wrong_from`.
    struct Counting {
        calls: usize,
        wrong_from: usize,
    }

    impl SeedClient for Counting {
        fn call(&mut self, _key: i64) -> Result<Answer, String> {
            self.calls += 1;
            std::thread::sleep(Duration::from_micros(200));
            let rows = if self.calls >= self.wrong_from { 0 } else { 1 };
            Ok(Answer {
                rows,
                first_number: None,
                messages: None,
                bytes: Some(10),
            })
        }
    }

    const UNIQUE: SeedQuery = demo::SEED_QUERIES[0];

    /// `querySimpleUnique` on `threads` threads, iterations of `seconds`.
    fn case(threads: usize, seconds: f64) -> CaseRun<'static> {
        CaseRun {
            query: &UNIQUE,
            case_index: 0,
            threads,
            seconds,
            seed: 1,
        }
    }

    #[test]
    fn every_thread_calls_in_every_measured_iteration() {
        let run = case(3, 0.02);
        let started = std::sync::atomic::AtomicUsize::new(0);
        let its = run_case(
            &run,
            |_| {
                Ok(Counting {
                    calls: 0,
                    wrong_from: usize::MAX,
                })
            },
            |_| {
                started.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
        assert_eq!(its.len(), MEASURED_ITERATIONS);
        assert_eq!(
            started.load(Ordering::SeqCst),
            WARMUP_ITERATIONS + MEASURED_ITERATIONS
        );
        for it in &its {
            assert!(it.ops >= 3, "each of 3 threads calls at least once");
            assert_eq!(it.latencies_us.len() as u64, it.ops);
            assert_eq!(it.messages, None, "the client does not see messages");
            assert_eq!(it.bytes, Some(10 * it.ops));
            assert!(it.elapsed >= Duration::from_millis(20));
        }
    }

    #[test]
    fn a_wrong_answer_stops_the_case_with_what_was_wrong() {
        let run = case(2, 0.01);
        let e = run_case(
            &run,
            |_| {
                Ok(Counting {
                    calls: 0,
                    wrong_from: 5,
                })
            },
            |_| {},
        )
        .unwrap_err();
        assert!(e.contains("returned 0 rows, expected 1"), "{e}");
    }

    #[test]
    fn a_client_that_cannot_be_made_fails_the_case() {
        let run = case(2, 0.01);
        let e = run_case(
            &run,
            |t| -> Result<Counting, String> { Err(format!("thread {t} cannot connect")) },
            |_| {},
        )
        .unwrap_err();
        assert!(e.contains("cannot connect"), "{e}");
    }

    #[test]
    fn the_sum_is_checked() {
        let q = demo::SEED_QUERIES[8];
        assert_eq!(q.name, "querySumIndexed");
        let right = Answer {
            rows: 1,
            first_number: Some(EXPECTED_SUM as f64),
            messages: None,
            bytes: None,
        };
        assert!(check(&q, 0, &right).is_ok());
        let wrong = Answer {
            first_number: Some(1.0),
            ..right
        };
        assert!(check(&q, 0, &wrong)
            .unwrap_err()
            .contains("expected 4999950000"));
    }
}
