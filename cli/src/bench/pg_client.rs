//! `weir bench jmh` through the PostgreSQL protocol: the seed queries as `tokio-postgres`
//! prepared statements, one connection per client thread, against `weir serve` or any
//! PostgreSQL server holding the same `Item` table and indexes ([`load_item`] puts them
//! there through the protocol).

use futures::TryStreamExt;
use std::error::Error as StdError;
use std::fmt::Write as _;
use tokio::runtime::Runtime;
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, NoTls, Statement};

use super::closed_loop::{Answer, SeedClient};
use crate::demo::{self, SeedParam, SeedQuery};

/// Rows per `INSERT` statement while loading `Item`.
const INSERT_ROWS: usize = 1000;

/// Parses a connection string (`host=... port=... user=...` or a `postgresql://` URL).
pub fn parse_config(conn: &str) -> Result<tokio_postgres::Config, String> {
    conn.parse::<tokio_postgres::Config>()
        .map_err(|e| format!("--postgres '{conn}' is not a PostgreSQL connection string: {e}"))
}

/// A runtime for one thread's connection.
fn runtime() -> Result<Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))
}

/// Connects on `rt`; the connection's task runs while `rt` is driven.
fn connect(rt: &Runtime, config: &tokio_postgres::Config) -> Result<Client, String> {
    rt.block_on(async {
        let (client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|e| format!("cannot connect to {}: {}", describe(config), explain(&e)))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    })
}

/// An error as a user needs it: the server's message and SQLSTATE, not only "db error".
fn explain(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Where a configuration points, for messages.
fn describe(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!("{} port {}", hosts.join(","), ports.join(","))
}

/// A seed query's text with PostgreSQL's numbered parameters (`$1` for `?`).
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 2);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(ch);
        }
    }
    out
}

/// What the server says it is (`SELECT version()`), and whether it is weir.
pub struct ServerInfo {
    /// `version()`'s answer.
    pub version: String,
    /// Whether the server is `weir serve` (it reports `(weir ...)`).
    pub is_weir: bool,
}

/// Drops and creates `Item` with its indexes on the server at `config` and fills it with
/// [`demo::ITEM_ROWS`] rows, the same rows as [`demo::load_item`]; on a server that is not
/// weir, then runs `ANALYZE` so its planner knows the table.
pub fn load_item(config: &tokio_postgres::Config) -> Result<ServerInfo, String> {
    let rt = runtime()?;
    let client = connect(&rt, config)?;
    let where_ = describe(config);
    let fail = |what: &str, e: tokio_postgres::Error| {
        format!("{what} on {where_} failed: {}", explain(&e))
    };
    rt.block_on(async {
        let version: String = client
            .query_one("SELECT version()", &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| fail("SELECT version()", e))?;
        let is_weir = version.contains("weir");
        client
            .batch_execute("DROP TABLE IF EXISTS Item")
            .await
            .map_err(|e| fail("DROP TABLE Item", e))?;
        for ddl in demo::ITEM_DDL {
            client.batch_execute(ddl).await.map_err(|e| fail(ddl, e))?;
        }
        let mut start = 0;
        while start < demo::ITEM_ROWS {
            let end = (start + INSERT_ROWS).min(demo::ITEM_ROWS);
            client
                .batch_execute(&insert_rows(start as i64..end as i64))
                .await
                .map_err(|e| fail("INSERT INTO Item", e))?;
            start = end;
        }
        if !is_weir {
            client
                .batch_execute("ANALYZE Item")
                .await
                .map_err(|e| fail("ANALYZE Item", e))?;
        }
        Ok(ServerInfo { version, is_weir })
    })
}

/// One `INSERT` of the `Item` rows for `vals`, as [`demo::item_batch`] makes them.
fn insert_rows(vals: std::ops::Range<i64>) -> String {
    let mut sql = String::from("INSERT INTO Item VALUES ");
    for (i, v) in vals.enumerate() {
        if i > 0 {
            sql.push(',');
        }
        let b = v / 1000;
        let _ = write!(sql, "({v},'name{v}',{v},{b},{v},{b})");
    }
    sql
}

/// One thread's connection with the case's query prepared.
pub struct PgClient {
    rt: Runtime,
    client: Client,
    statement: Statement,
    param: SeedParam,
}

impl PgClient {
    /// Connects to `config` and prepares `q`.
    pub fn new(config: &tokio_postgres::Config, q: &SeedQuery) -> Result<Self, String> {
        let rt = runtime()?;
        let client = connect(&rt, config)?;
        let statement = rt
            .block_on(client.prepare(&numbered(q.sql)))
            .map_err(|e| format!("preparing {} failed: {}", q.name, explain(&e)))?;
        Ok(PgClient {
            rt,
            client,
            statement,
            param: q.param,
        })
    }
}

impl SeedClient for PgClient {
    fn call(&mut self, key: i64) -> Result<Answer, String> {
        let value = match self.param {
            SeedParam::None => None,
            SeedParam::Key => Some(key),
            SeedParam::Batch => Some(key / 1000),
        };
        let params: Vec<&dyn ToSql> = value.iter().map(|v| v as _).collect();
        // Rows are counted as they arrive, none kept: what the in-process case reads of its
        // batches.
        let (rows, first_number) = self
            .rt
            .block_on(async {
                let stream = self.client.query_raw(&self.statement, params).await?;
                futures::pin_mut!(stream);
                let mut rows = 0;
                let mut first_number = None;
                while let Some(row) = stream.try_next().await? {
                    if rows == 0 && !row.is_empty() {
                        first_number = row
                            .try_get::<_, Option<Number>>(0)
                            .ok()
                            .flatten()
                            .map(|n| n.0);
                    }
                    rows += 1;
                }
                Ok::<_, tokio_postgres::Error>((rows, first_number))
            })
            .map_err(|e| format!("with parameter {value:?}: {}", explain(&e)))?;
        Ok(Answer {
            rows,
            first_number,
            messages: None,
            bytes: None,
        })
    }
}

/// A number of any of PostgreSQL's numeric types, as `f64` (`SUM(BIGINT)` is NUMERIC in
/// PostgreSQL, BIGINT in weir).
struct Number(f64);

impl<'a> FromSql<'a> for Number {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Number(match *ty {
            Type::INT2 => i16::from_sql(ty, raw)? as f64,
            Type::INT4 => i32::from_sql(ty, raw)? as f64,
            Type::INT8 => i64::from_sql(ty, raw)? as f64,
            Type::FLOAT4 => f32::from_sql(ty, raw)? as f64,
            Type::FLOAT8 => f64::from_sql(ty, raw)?,
            _ => numeric(raw)?,
        }))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT2 | Type::INT4 | Type::INT8 | Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC
        )
    }
}

/// Decodes NUMERIC's binary form: digit count, weight, sign and scale (16 bits each), then
/// base-10000 digits, the first worth 10000^weight.
fn numeric(raw: &[u8]) -> Result<f64, Box<dyn StdError + Sync + Send>> {
    let word = |i: usize| -> Result<u16, Box<dyn StdError + Sync + Send>> {
        raw.get(2 * i..2 * i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a NUMERIC value shorter than its header says".into())
    };
    let ndigits = word(0)? as usize;
    let weight = word(1)? as i16 as i32;
    let sign = word(2)?;
    if sign == 0xC000 {
        return Ok(f64::NAN);
    }
    let mut value = 0.0;
    for i in 0..ndigits {
        let digit = word(4 + i)? as f64;
        value += digit * 10_000f64.powi(weight - i as i32);
    }
    Ok(if sign == 0x4000 { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_marks_become_numbered_parameters() {
        assert_eq!(
            numbered("SELECT name FROM Item WHERE fld=?"),
            "SELECT name FROM Item WHERE fld=$1"
        );
        assert_eq!(numbered("SELECT 1 WHERE ? < ?"), "SELECT 1 WHERE $1 < $2");
    }

    #[test]
    fn numeric_decodes_postgresql_binary_form() {
        // 4,999,950,000 = 49 · 10000² + 9995 · 10000 + 0: three digits, weight 2.
        let raw: Vec<u8> = [3u16, 2, 0, 0, 49, 9995, 0]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect();
        assert_eq!(numeric(&raw).unwrap(), 4_999_950_000.0);
        let negative: Vec<u8> = [1u16, 0, 0x4000, 0, 7]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect();
        assert_eq!(numeric(&negative).unwrap(), -7.0);
        assert!(numeric(&[0, 3]).is_err(), "a truncated header is an error");
    }

    #[test]
    fn a_bad_connection_string_says_so() {
        let e = parse_config("port=notanumber").unwrap_err();
        assert!(e.contains("not a PostgreSQL connection string"), "{e}");
    }

    #[test]
    fn insert_rows_are_the_demo_rows() {
        assert_eq!(
            insert_rows(1999..2001),
            "INSERT INTO Item VALUES (1999,'name1999',1999,1,1999,1),\
             (2000,'name2000',2000,2,2000,2)"
        );
    }
}
