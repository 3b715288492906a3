//! The plan cache: query plans keyed by SQL text, parameter types and catalog version.

use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::statement::{QueryPlan, Statement};
use hashbrown::HashMap;
use std::sync::{Arc, Mutex};
use weir_operators::{DataType, Value};

/// What [`PlanCache::get_or_plan`] returns.
#[derive(Debug, Clone)]
pub enum CachedStatement {
    /// A query plan (possibly shared with earlier executions).
    Query(Arc<QueryPlan>),
    /// An `EXPLAIN` of a query plan (possibly shared).
    Explain(Arc<QueryPlan>),
    /// An `EXPLAIN ANALYZE` of a query plan (possibly shared): run it, then describe it.
    ExplainAnalyze(Arc<QueryPlan>),
    /// A DDL or DML statement; never cached.
    Other(Box<Statement>),
}

type Key = (String, Vec<Option<DataType>>, u64);

/// What a cached plan was planned for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Query,
    Explain,
    ExplainAnalyze,
}

impl Use {
    /// The statement `plan` is, planned for this use.
    fn statement(self, plan: Arc<QueryPlan>) -> CachedStatement {
        match self {
            Use::Query => CachedStatement::Query(plan),
            Use::Explain => CachedStatement::Explain(plan),
            Use::ExplainAnalyze => CachedStatement::ExplainAnalyze(plan),
        }
    }
}

#[derive(Default)]
struct Inner {
    map: HashMap<Key, (Arc<QueryPlan>, Use, u64)>,
    tick: u64,
    hits: u64,
    misses: u64,
    parses: u64,
}

/// A bounded, thread-safe cache of query plans. The key is the exact SQL text, the types of
/// the given parameter values and the catalog version, so schema changes invalidate entries.
/// When full, the least recently used entry is evicted.
pub struct PlanCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanCache")
            .field("capacity", &self.capacity)
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

impl PlanCache {
    /// A cache holding at most `capacity` plans (at least 1).
    pub fn new(capacity: usize) -> Self {
        PlanCache {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached plan for `sql` with these parameter types under this catalog version, or a
    /// fresh plan (cached when it is a query or an explain).
    pub fn get_or_plan(
        &self,
        sql: &str,
        catalog: &Catalog,
        params: &[Value],
        partitions_default: u32,
    ) -> Result<CachedStatement, PlanError> {
        let key: Key = (
            sql.to_string(),
            params.iter().map(Value::data_type).collect(),
            catalog.version(),
        );
        {
            let mut inner = self.lock();
            inner.tick += 1;
            let tick = inner.tick;
            if let Some(entry) = inner.map.get_mut(&key) {
                entry.2 = tick;
                let (plan, used) = (entry.0.clone(), entry.1);
                inner.hits += 1;
                return Ok(used.statement(plan));
            }
            inner.misses += 1;
            inner.parses += 1;
        }
        let stmt = crate::entry::plan_statement(sql, catalog, params, partitions_default)?;
        let (plan, used) = match stmt {
            Statement::Query(p) => (Arc::new(p), Use::Query),
            Statement::Explain(p) => (Arc::new(p), Use::Explain),
            Statement::ExplainAnalyze(p) => (Arc::new(p), Use::ExplainAnalyze),
            other => return Ok(CachedStatement::Other(Box::new(other))),
        };
        // A plan that holds values read when it was planned (the time, random draws) answers
        // for this run only.
        if plan.single_use {
            return Ok(used.statement(plan));
        }
        let mut inner = self.lock();
        if inner.map.len() >= self.capacity && !inner.map.contains_key(&key) {
            if let Some(oldest) = inner
                .map
                .iter()
                .min_by_key(|(_, v)| v.2)
                .map(|(k, _)| k.clone())
            {
                inner.map.remove(&oldest);
            }
        }
        let tick = inner.tick;
        inner.map.insert(key, (plan.clone(), used, tick));
        Ok(used.statement(plan))
    }

    /// Lookups answered from the cache.
    pub fn hits(&self) -> u64 {
        self.lock().hits
    }

    /// Lookups that had to plan.
    pub fn misses(&self) -> u64 {
        self.lock().misses
    }

    /// Statements parsed and planned through this cache.
    pub fn parses(&self) -> u64 {
        self.lock().parses
    }

    /// Number of cached plans.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether no plan is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every cached plan (counters are kept).
    pub fn clear(&self) {
        self.lock().map.clear();
    }
}
