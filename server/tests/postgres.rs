//! weir through the PostgreSQL wire protocol, driven by a client no one here wrote:
//! `tokio-postgres` (simple and extended protocol, binary parameters and results, every type,
//! errors by SQLSTATE, cancel, portals, sessions, passwords), and raw sockets for what no
//! well-behaved client sends (malformed messages, a huge startup packet, silence).

use std::error::Error as StdError;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{NaiveDate, NaiveDateTime};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};
use tokio_postgres::{AsyncMessage, Client, NoTls, SimpleQueryMessage};
use weir_operators::{Batch, Column};
use weir_runtime::Cluster;
use weir_server::{PostgresServer, ServePostgres, ServerConfig};

#[path = "postgres/pg_dump_restore.rs"]
mod pg_dump_restore;

/// Longest any step may take before the test calls it hung.
const LIMIT: Duration = Duration::from_secs(30);

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("hung: {what}"))
}

fn cluster() -> Arc<Cluster> {
    Arc::new(
        Cluster::builder()
            .nodes(2)
            .partitions(8)
            .batch_size(256)
            .window(2)
            .query_timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
    )
}

/// Table `name (id BIGINT PRIMARY KEY, v BIGINT)` with `n` rows, `v = id`.
fn load(c: &Cluster, name: &str, n: i64) {
    c.execute(&format!(
        "CREATE TABLE {name} (id BIGINT PRIMARY KEY, v BIGINT)"
    ))
    .unwrap();
    let ids: Vec<i64> = (0..n).collect();
    let batch = Batch::try_new(vec![Column::from_i64(ids.clone()), Column::from_i64(ids)]).unwrap();
    c.load(name, batch).unwrap();
}

fn serve(c: &Arc<Cluster>, config: ServerConfig) -> PostgresServer {
    c.clone()
        .serve_postgres_with("127.0.0.1:0", config)
        .unwrap()
}

/// A client connected as `user`, and the messages (notices) its connection receives.
async fn connect_as(
    addr: SocketAddr,
    user: &str,
    password: Option<&str>,
) -> Result<(Client, mpsc::UnboundedReceiver<String>), tokio_postgres::Error> {
    let mut config = tokio_postgres::Config::new();
    config
        .host(addr.ip().to_string())
        .port(addr.port())
        .user(user)
        .dbname("shop");
    if let Some(p) = password {
        config.password(p);
    }
    let (client, mut connection) = config.connect(NoTls).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notice(n)) => {
                    let _ = tx.send(n.message().to_string());
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    Ok((client, rx))
}

/// `SELECT COUNT(*) FROM t` through `client`.
async fn rows_in_t(client: &Client) -> i64 {
    client
        .query_one("SELECT COUNT(*) FROM t", &[])
        .await
        .unwrap()
        .get(0)
}

async fn connect(addr: SocketAddr) -> Client {
    bounded("connect", connect_as(addr, "weir", None))
        .await
        .unwrap()
        .0
}

/// The SQLSTATE of a failed statement.
fn code(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| d.code().code().to_string())
        .unwrap_or_else(|| format!("not a server error: {e}"))
}

/// The values of the rows of a simple query's answer, as text.
fn texts(messages: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// The row counts of a simple query's command completions.
fn counts(messages: &[SimpleQueryMessage]) -> Vec<u64> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect()
}

fn assert_idle(c: &Cluster) {
    assert!(
        c.wait_idle(Duration::from_secs(10)),
        "the cluster did not return to idle: {} actors (baseline {}), {} bytes reserved",
        c.stats().live_actors(),
        c.baseline_actors(),
        c.stats().memory_reserved()
    );
    assert_eq!(c.stats().memory_reserved(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_protocol_runs_every_statement_of_a_message_in_order() {
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    let answer = bounded(
        "script",
        client.simple_query(
            "CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR); \
             INSERT INTO kv VALUES (1, 'one'), (2, 'two'); \
             INSERT INTO kv VALUES (3, NULL); \
             SELECT k, v FROM kv ORDER BY k; \
             UPDATE kv SET v = 'deux' WHERE k = 2; \
             SELECT v FROM kv WHERE k = 2; DELETE FROM kv WHERE k >= 2",
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        texts(&answer),
        vec![
            vec![Some("1".into()), Some("one".into())],
            vec![Some("2".into()), Some("two".into())],
            vec![Some("3".into()), None],
            vec![Some("deux".into())],
        ]
    );
    // CREATE TABLE, 2 inserted, 1 inserted, 3 rows, 1 updated, 1 row, 2 deleted.
    assert_eq!(counts(&answer), vec![0, 2, 1, 3, 1, 1, 2]);

    // The first failing statement ends the message; those before it stay done.
    let err = bounded(
        "failing script",
        client.batch_execute(
            "INSERT INTO kv VALUES (10, 'ten'); SELECT * FROM nope; INSERT INTO kv VALUES (11, 'x')",
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(code(&err), "42P01", "{err}");
    let left = client
        .simple_query("SELECT k FROM kv ORDER BY k")
        .await
        .unwrap();
    assert_eq!(
        texts(&left),
        vec![vec![Some("1".into())], vec![Some("10".into())]]
    );
    // An empty message answers nothing, and the connection goes on.
    assert!(texts(&client.simple_query(" ; ").await.unwrap()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_protocol_prepares_once_and_binds_many_times() {
    let c = cluster();
    load(&c, "t", 1000);
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;

    let get = client
        .prepare("SELECT v, v * 2 AS twice FROM t WHERE id = $1")
        .await
        .unwrap();
    assert_eq!(get.params(), &[Type::INT8]);
    let names: Vec<&str> = get.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["v", "twice"]);
    assert_eq!(get.columns()[1].type_(), &Type::INT8);

    let row = client.query_one(&get, &[&7i64]).await.unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>("twice")), (7, 14));
    // Planned once: binding again parses nothing.
    let parses = c.stats().parses;
    for k in 0..50i64 {
        let row = client.query_one(&get, &[&k]).await.unwrap();
        assert_eq!(row.get::<_, i64>(1), 2 * k);
    }
    assert_eq!(
        c.stats().parses,
        parses,
        "a bound statement was planned again"
    );

    // Writes with parameters answer their counts; `execute` reads them.
    let insert = client
        .prepare("INSERT INTO t (id, v) VALUES ($1, $2)")
        .await
        .unwrap();
    assert_eq!(insert.params(), &[Type::INT8, Type::INT8]);
    assert_eq!(
        client.execute(&insert, &[&5000i64, &1i64]).await.unwrap(),
        1
    );
    let updated = client
        .execute("UPDATE t SET v = $1 WHERE id >= $2", &[&-1i64, &990i64])
        .await
        .unwrap();
    assert_eq!(updated, 11);
    let deleted = client
        .execute("DELETE FROM t WHERE v = $1", &[&-1i64])
        .await
        .unwrap();
    assert_eq!(deleted, 11);
    let n = rows_in_t(&client).await;
    assert_eq!(n, 990);

    // A parameter type the client names is read as that type.
    let typed = client
        .prepare_typed("SELECT v FROM t WHERE id = $1", &[Type::INT4])
        .await
        .unwrap();
    let row = client.query_one(&typed, &[&42i32]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 42);
    // Several statements in one Parse are refused, as PostgreSQL refuses them.
    let err = client.prepare("SELECT 1; SELECT 2").await.unwrap_err();
    assert_eq!(code(&err), "42601");
}

/// A NUMERIC read with its own decoder (not the server's): "-12.50" from the binary form.
#[derive(Debug, PartialEq)]
struct Numeric(String);

impl<'a> FromSql<'a> for Numeric {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        let word = |i: usize| i16::from_be_bytes([raw[2 * i], raw[2 * i + 1]]);
        let (n, weight, sign, scale) = (word(0) as usize, word(1), word(2) as u16, word(3));
        let digit = |i: i64| -> i16 {
            if i >= 0 && (i as usize) < n {
                word(4 + i as usize)
            } else {
                0
            }
        };
        let mut int = String::new();
        for i in 0..=i64::from(weight) {
            let d = digit(i);
            if int.is_empty() {
                if d != 0 {
                    int = d.to_string();
                }
            } else {
                int.push_str(&format!("{d:04}"));
            }
        }
        if int.is_empty() {
            int.push('0');
        }
        let mut frac = String::new();
        let mut i = i64::from(weight) + 1;
        while frac.len() < scale as usize {
            frac.push_str(&format!("{:04}", digit(i)));
            i += 1;
        }
        frac.truncate(scale as usize);
        let sign = if sign == 0x4000 { "-" } else { "" };
        Ok(Numeric(if frac.is_empty() {
            format!("{sign}{int}")
        } else {
            format!("{sign}{int}.{frac}")
        }))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// A NUMERIC parameter given as its binary bytes, as PostgreSQL's documentation lays them
/// out.
#[derive(Debug)]
struct RawNumeric(Vec<u8>);

impl ToSql for RawNumeric {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        if !<Self as ToSql>::accepts(ty) {
            return Err(format!("RawNumeric is not a {ty}").into());
        }
        self.to_sql(ty, out)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_returning_answers_generated_keys_in_both_protocols() {
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    client
        .batch_execute(
            "CREATE TABLE orders (id SERIAL PRIMARY KEY, item VARCHAR NOT NULL, qty BIGINT DEFAULT 1)",
        )
        .await
        .unwrap();
    // Simple protocol: the rows, then the INSERT's own tag.
    let answer = bounded(
        "simple insert returning",
        client.simple_query("INSERT INTO orders (item) VALUES ('a'), ('b') RETURNING id, qty"),
    )
    .await
    .unwrap();
    assert_eq!(
        texts(&answer),
        vec![
            vec![Some("1".into()), Some("1".into())],
            vec![Some("2".into()), Some("1".into())]
        ]
    );
    assert_eq!(counts(&answer), vec![2]);
    // Extended protocol: Describe names the columns before the statement runs; each run
    // takes the next key.
    let insert = client
        .prepare("INSERT INTO orders (item, qty) VALUES ($1, $2) RETURNING id, item")
        .await
        .unwrap();
    assert_eq!(insert.params(), &[Type::TEXT, Type::INT8]);
    let names: Vec<&str> = insert.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["id", "item"]);
    for (i, item) in ["c", "d"].into_iter().enumerate() {
        let rows = bounded(
            "prepared insert returning",
            client.query(&insert, &[&item, &5i64]),
        )
        .await
        .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<_, i64>(0), 3 + i as i64);
        assert_eq!(rows[0].get::<_, &str>(1), item);
    }
    // `execute` of it counts the rows inserted.
    assert_eq!(client.execute(&insert, &[&"e", &1i64]).await.unwrap(), 1);
    let total = client
        .query_one("SELECT COUNT(*), SUM(qty) FROM orders", &[])
        .await
        .unwrap();
    assert_eq!((total.get::<_, i64>(0), total.get::<_, i64>(1)), (5, 13));
    // Parameters cast in the statement, as SQLAlchemy's psycopg writes them (`VALUES
    // (%(item)s::VARCHAR, %(qty)s::BIGINT)`), take their columns' types, and the columns
    // are described (they were not: the stand-in text did not cast to BIGINT, and the
    // NULLs tried next not into a NOT NULL column).
    let cast = client
        .prepare(
            "INSERT INTO orders (item, qty) VALUES ($1::VARCHAR, $2::BIGINT) RETURNING id, qty",
        )
        .await
        .unwrap();
    let names: Vec<&str> = cast.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["id", "qty"]);
    assert_eq!(cast.params(), &[Type::TEXT, Type::INT8]);
    let row = client
        .query_one(
            "INSERT INTO orders (item, qty) VALUES ($1::VARCHAR, $2::BIGINT) RETURNING qty",
            &[&"f", &None::<i64>],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<i64>>(0), None);
    client
        .execute("DELETE FROM orders WHERE item = 'f'", &[])
        .await
        .unwrap();
    // Prepared upserts: each run inserts or updates; a parameter SET assigns takes its
    // column's type.
    let upsert = client
        .prepare(
            "INSERT INTO orders (id, item, qty) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET qty = orders.qty + excluded.qty RETURNING qty",
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let row = client
            .query_one(&upsert, &[&100i64, &"g", &10i64])
            .await
            .unwrap();
        seen.push(row.get::<_, i64>(0));
    }
    assert_eq!(seen, [10, 20]);
    let set = client
        .prepare(
            "INSERT INTO orders (id, item) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET qty = $3",
        )
        .await
        .unwrap();
    assert_eq!(set.params(), &[Type::INT8, Type::TEXT, Type::INT8]);
    assert_eq!(
        client.execute(&set, &[&100i64, &"g", &7i64]).await.unwrap(),
        1
    );
    let qty = client
        .query_one("SELECT qty FROM orders WHERE id = 100", &[])
        .await
        .unwrap();
    assert_eq!(qty.get::<_, i64>(0), 7);
    // A parameter inside a SET expression, its type named by the client.
    let add = client
        .prepare_typed(
            "INSERT INTO orders (id, item) VALUES ($1, $2) \
             ON CONFLICT (id) DO UPDATE SET qty = orders.qty + $3 RETURNING qty",
            &[Type::INT8, Type::TEXT, Type::INT8],
        )
        .await
        .unwrap();
    let row = client
        .query_one(&add, &[&100i64, &"g", &5i64])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 12);
    client
        .execute("DELETE FROM orders WHERE id = 100", &[])
        .await
        .unwrap();
    // UPDATE and DELETE answer their rows too, tagged as themselves.
    let answer = bounded(
        "update and delete returning",
        client.simple_query(
            "UPDATE orders SET qty = qty * 2 WHERE id <= 2 RETURNING id, qty; \
             DELETE FROM orders WHERE id = 5 RETURNING item",
        ),
    )
    .await
    .unwrap();
    let mut updated = texts(&answer);
    updated.sort();
    assert_eq!(
        updated,
        vec![
            vec![Some("1".into()), Some("2".into())],
            vec![Some("2".into()), Some("2".into())],
            vec![Some("e".into())],
        ]
    );
    assert_eq!(counts(&answer), vec![2, 1]);
    drop(client);
    server.shutdown();
    assert_idle(&c);
}

/// What Hibernate does with `@GeneratedValue(strategy = SEQUENCE)`: a sequence stepping by
/// 50, its next value read with a prepared `select nextval(...)`, rows inserted with keys
/// from it; and a `nextval` in VALUES, as other ORMs write it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequences_hand_out_keys_through_prepared_statements() {
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    client
        .batch_execute(
            "CREATE SEQUENCE item_seq START WITH 1 INCREMENT BY 50; \
             CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR)",
        )
        .await
        .unwrap();
    let next = client.prepare("select nextval('item_seq')").await.unwrap();
    let names: Vec<&str> = next.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["nextval"]);
    assert_eq!(next.columns()[0].type_(), &Type::INT8);
    let mut keys = Vec::new();
    for _ in 0..2 {
        let row = bounded("nextval", client.query_one(&next, &[]))
            .await
            .unwrap();
        keys.push(row.get::<_, i64>(0));
    }
    assert_eq!(keys, [1, 51]);
    let insert = client
        .prepare("INSERT INTO items VALUES (nextval('item_seq'), $1) RETURNING id")
        .await
        .unwrap();
    let row = bounded("insert nextval", client.query_one(&insert, &[&"bolt"]))
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 101);
    // ALTER SEQUENCE, prepared (as drivers send it) and in a simple query.
    let restarted = client
        .execute(
            "ALTER SEQUENCE item_seq RESTART WITH 1000 INCREMENT BY 1",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(restarted, 0);
    let row = bounded("nextval", client.query_one(&next, &[]))
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1000);
    client
        .batch_execute("ALTER SEQUENCE item_seq RESTART WITH 5")
        .await
        .unwrap();
    let row = bounded("nextval", client.query_one(&next, &[]))
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 5);
    let e = client
        .query_one("SELECT nextval('missing_seq')", &[])
        .await
        .unwrap_err();
    assert_eq!(code(&e), "42P01", "{e}");
    client
        .batch_execute("CREATE SEQUENCE one MAXVALUE 1; SELECT nextval('one')")
        .await
        .unwrap();
    let e = client
        .simple_query("SELECT nextval('one')")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "2200H", "{e}");
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_round_trips_in_binary_and_in_text() {
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    client
        .batch_execute(
            "CREATE TABLE every (id BIGINT PRIMARY KEY, i INTEGER, s SMALLINT, d DOUBLE, \
             r REAL, n DECIMAL(10, 2), v VARCHAR, t TEXT, b BOOLEAN, day DATE, at TIMESTAMP)",
        )
        .await
        .unwrap();
    let insert = client
        .prepare("INSERT INTO every VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
        .await
        .unwrap();
    let types: Vec<&str> = insert.params().iter().map(|t| t.name()).collect();
    assert_eq!(
        types,
        [
            "int8",
            "int8",
            "int8",
            "float8",
            "float8",
            "numeric",
            "text",
            "text",
            "bool",
            "date",
            "timestamp"
        ]
    );
    let day = NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
    let at: NaiveDateTime = day.and_hms_micro_opt(13, 45, 0, 500_000).unwrap();
    // -12.50: two digits (12, 5000), weight 0, negative, display scale 2.
    let minus_12_50 = RawNumeric(vec![0, 2, 0, 0, 0x40, 0, 0, 2, 0, 12, 0x13, 0x88]);
    let n = client
        .execute(
            &insert,
            &[
                &1i64,
                &-7i64,
                &3i64,
                &1.5f64,
                &-0.25f64,
                &minus_12_50,
                &"héllo",
                &"",
                &true,
                &day,
                &at,
            ],
        )
        .await
        .unwrap();
    assert_eq!(n, 1);
    let nulls: [&(dyn ToSql + Sync); 11] = [
        &2i64,
        &None::<i64>,
        &None::<i64>,
        &None::<f64>,
        &None::<f64>,
        &None::<RawNumeric>,
        &None::<String>,
        &None::<String>,
        &None::<bool>,
        &None::<NaiveDate>,
        &None::<NaiveDateTime>,
    ];
    client.execute(&insert, &nulls).await.unwrap();

    // Binary results (tokio-postgres asks for binary).
    let row = client
        .query_one("SELECT * FROM every WHERE id = $1", &[&1i64])
        .await
        .unwrap();
    let column_types: Vec<&str> = row.columns().iter().map(|c| c.type_().name()).collect();
    assert_eq!(
        column_types,
        [
            "int8",
            "int8",
            "int8",
            "float8",
            "float8",
            "numeric",
            "text",
            "text",
            "bool",
            "date",
            "timestamp"
        ]
    );
    assert_eq!(row.get::<_, i64>("i"), -7);
    assert_eq!(row.get::<_, i64>("s"), 3);
    assert_eq!(row.get::<_, f64>("d"), 1.5);
    assert_eq!(row.get::<_, f64>("r"), -0.25);
    assert_eq!(row.get::<_, Numeric>("n"), Numeric("-12.50".into()));
    assert_eq!(row.get::<_, String>("v"), "héllo");
    assert_eq!(row.get::<_, String>("t"), "");
    assert!(row.get::<_, bool>("b"));
    assert_eq!(row.get::<_, NaiveDate>("day"), day);
    assert_eq!(row.get::<_, NaiveDateTime>("at"), at);
    let row = client
        .query_one("SELECT * FROM every WHERE id = 2", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<i64>>("i"), None);
    assert_eq!(row.get::<_, Option<i64>>("s"), None);
    assert_eq!(row.get::<_, Option<f64>>("d"), None);
    assert_eq!(row.get::<_, Option<f64>>("r"), None);
    assert_eq!(row.get::<_, Option<Numeric>>("n"), None);
    assert_eq!(row.get::<_, Option<String>>("v"), None);
    assert_eq!(row.get::<_, Option<String>>("t"), None);
    assert_eq!(row.get::<_, Option<bool>>("b"), None);
    assert_eq!(row.get::<_, Option<NaiveDate>>("day"), None);
    assert_eq!(row.get::<_, Option<NaiveDateTime>>("at"), None);

    // Text results (the simple protocol), as PostgreSQL prints them.
    let answer = client
        .simple_query("SELECT * FROM every ORDER BY id")
        .await
        .unwrap();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        texts(&answer),
        vec![
            vec![
                s("1"),
                s("-7"),
                s("3"),
                s("1.5"),
                s("-0.25"),
                s("-12.50"),
                s("héllo"),
                s(""),
                s("t"),
                s("2024-02-29"),
                s("2024-02-29 13:45:00.5")
            ],
            vec![
                s("2"),
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                None
            ],
        ]
    );
    // Parameters of every type where a WHERE clause types them.
    let row = client
        .query_one(
            "SELECT COUNT(*) FROM every WHERE n = $1 AND day = $2 AND b = $3 AND d = $4",
            &[
                &RawNumeric(vec![0, 2, 0, 0, 0x40, 0, 0, 2, 0, 12, 0x13, 0x88]),
                &day,
                &true,
                &1.5f64,
            ],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_their_sqlstate_and_the_connection_goes_on() {
    let c = cluster();
    load(&c, "t", 10);
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    let cases = [
        ("SELEC 1", "42601"),
        ("SELECT * FROM nope", "42P01"),
        ("SELECT nope FROM t", "42703"),
        ("INSERT INTO t VALUES (1, 1)", "23505"),
        ("INSERT INTO t VALUES (NULL, 1)", "23502"),
        ("SELECT id + 9223372036854775807 FROM t", "22003"),
        ("CREATE TABLE t (x BIGINT)", "42P07"),
        ("COPY t FROM '/etc/passwd'", "0A000"),
    ];
    for (sql, expected) in cases {
        // Both protocols: the simple one ...
        let err = client.simple_query(sql).await.unwrap_err();
        assert_eq!(code(&err), expected, "{sql}: {err}");
        // ... and the extended one, whether the error comes at Parse or at Execute.
        let err = client.query(sql, &[]).await.unwrap_err();
        assert_eq!(code(&err), expected, "{sql}: {err}");
    }
    let err = client
        .query("SELECT id FROM t WHERE id = $1", &[&"x"])
        .await
        .unwrap_err();
    assert!(
        err.as_db_error().is_none(),
        "the client refuses text for BIGINT: {err}"
    );
    let n = rows_in_t(&client).await;
    assert_eq!(n, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_cancels_the_running_query_and_frees_its_memory() {
    let c = cluster();
    load(&c, "t", 2000);
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    // Four million rows: far more than the socket holds, so the query is still running.
    let stmt = client
        .prepare("SELECT a.id, b.id FROM t a, t b")
        .await
        .unwrap();
    let stream = client.query_raw(&stmt, Vec::<i64>::new()).await.unwrap();
    futures::pin_mut!(stream);
    let first = bounded("first row", stream.next()).await.unwrap().unwrap();
    assert_eq!(first.len(), 2);
    assert!(c.stats().live_actors() > c.baseline_actors());
    client.cancel_token().cancel_query(NoTls).await.unwrap();
    let mut rows = 1u64;
    let err = loop {
        match bounded("rows after cancel", stream.next()).await {
            Some(Ok(_)) => rows += 1,
            Some(Err(e)) => break e,
            None => panic!("the query finished ({rows} rows) instead of being cancelled"),
        }
    };
    assert_eq!(code(&err), "57014", "{err}");
    assert!(rows < 4_000_000);
    assert_idle(&c);
    // The session goes on.
    let n = rows_in_t(&client).await;
    assert_eq!(n, 2000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_cancels_its_query() {
    let c = cluster();
    load(&c, "t", 2000);
    let server = serve(&c, ServerConfig::new());
    let addr = server.local_addr();
    let (client, connection) = tokio_postgres::Config::new()
        .host(addr.ip().to_string())
        .port(addr.port())
        .user("weir")
        .connect(NoTls)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    let stmt = client
        .prepare("SELECT a.id, b.id FROM t a, t b")
        .await
        .unwrap();
    let stream = client.query_raw(&stmt, Vec::<i64>::new()).await.unwrap();
    futures::pin_mut!(stream);
    bounded("first row", stream.next()).await.unwrap().unwrap();
    assert!(c.stats().live_actors() > c.baseline_actors());
    // The client goes away without a word: its socket closes with the rows unread.
    connection.abort();
    let _ = connection.await;
    assert_idle(&c);
    // The server still serves.
    let other = connect(addr).await;
    let n = rows_in_t(&other).await;
    assert_eq!(n, 2000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_stream_while_the_query_runs() {
    let c = cluster();
    load(&c, "t", 1000);
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    let stmt = client
        .prepare("SELECT a.id, b.v FROM t a, t b")
        .await
        .unwrap();
    let stream = client.query_raw(&stmt, Vec::<i64>::new()).await.unwrap();
    futures::pin_mut!(stream);
    bounded("first row", stream.next()).await.unwrap().unwrap();
    // The first row is here while the query still runs: the result is not gathered first.
    assert!(
        c.stats().live_actors() > c.baseline_actors(),
        "the query had ended before its first row reached the client"
    );
    let mut n = 1u64;
    while let Some(row) = bounded("rows", stream.next()).await {
        row.unwrap();
        n += 1;
    }
    assert_eq!(n, 1_000_000);
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_portal_with_a_row_limit_suspends_and_resumes() {
    let c = cluster();
    load(&c, "t", 25);
    let server = serve(&c, ServerConfig::new());
    let mut client = connect(server.local_addr()).await;
    let stmt = client
        .prepare("SELECT id FROM t WHERE id >= $1 ORDER BY id")
        .await
        .unwrap();
    let tx = client.transaction().await.unwrap();
    let portal = tx.bind(&stmt, &[&5i64]).await.unwrap();
    let mut seen = Vec::new();
    let mut fetches = 0;
    loop {
        let rows = tx.query_portal(&portal, 8).await.unwrap();
        fetches += 1;
        let got = rows.len();
        seen.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
        if got < 8 {
            break;
        }
    }
    assert_eq!(seen, (5..25).collect::<Vec<i64>>());
    assert_eq!(fetches, 3);
    tx.commit().await.unwrap();
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_answer_set_show_transactions_and_system_functions() {
    let c = cluster();
    load(&c, "t", 3);
    let server = serve(&c, ServerConfig::new());
    let (client, mut notices) = connect_as(server.local_addr(), "ana", None).await.unwrap();
    let one = |m: Vec<SimpleQueryMessage>| texts(&m)[0][0].clone().unwrap();
    client
        .batch_execute("SET application_name = 'reports'; SET extra_float_digits TO 3")
        .await
        .unwrap();
    assert_eq!(
        one(client.simple_query("SHOW application_name").await.unwrap()),
        "reports"
    );
    assert_eq!(
        one(client.simple_query("SHOW client_encoding").await.unwrap()),
        "UTF8"
    );
    let err = client.simple_query("SHOW no_such_thing").await.unwrap_err();
    assert_eq!(code(&err), "42704");
    let err = client
        .simple_query("SET client_encoding = 'LATIN1'")
        .await
        .unwrap_err();
    assert_eq!(code(&err), "22023");
    // Through the extended protocol too (JDBC sends SET that way).
    let row = client
        .query_one(
            "SELECT version(), current_schema(), current_database(), current_user, \
             current_setting('extra_float_digits')",
            &[],
        )
        .await
        .unwrap();
    assert!(row.get::<_, String>(0).starts_with("PostgreSQL 16"));
    assert!(row.get::<_, String>(0).contains("weir"));
    assert_eq!(row.get::<_, String>(1), "public");
    assert_eq!(row.get::<_, String>(2), "shop");
    assert_eq!(row.get::<_, String>(3), "ana");
    assert_eq!(row.get::<_, String>(4), "3");

    // BEGIN ... COMMIT: every statement autocommits; the block groups nothing.
    client
        .batch_execute("BEGIN; INSERT INTO t VALUES (10, 10); COMMIT")
        .await
        .unwrap();
    // ROLLBACK does not undo a write, and says so.
    client.batch_execute("BEGIN").await.unwrap();
    client
        .execute("INSERT INTO t VALUES ($1, $2)", &[&11i64, &11i64])
        .await
        .unwrap();
    client.batch_execute("ROLLBACK").await.unwrap();
    let warning = bounded("the ROLLBACK warning", notices.recv())
        .await
        .unwrap();
    assert!(warning.contains("ROLLBACK does not undo"), "{warning}");
    let n = rows_in_t(&client).await;
    assert_eq!(n, 5);
    // A read-only block rolls back quietly.
    client
        .batch_execute("BEGIN; SELECT 1; ROLLBACK")
        .await
        .unwrap();
    assert!(notices.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_are_checked_with_scram() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("passwords");
    std::fs::write(&file, "# users\nana:open sesame\nbob:b0b\n").unwrap();
    let passwords = weir_server::Passwords::from_file(&file).unwrap();
    assert_eq!(passwords.len(), 2);
    let c = cluster();
    let server = serve(&c, ServerConfig::new().passwords(passwords));
    let addr = server.local_addr();
    let (ok, _) = connect_as(addr, "ana", Some("open sesame")).await.unwrap();
    ok.simple_query("SELECT 1").await.unwrap();
    let err = connect_as(addr, "ana", Some("wrong")).await.err().unwrap();
    assert_eq!(code(&err), "28P01", "{err}");
    let err = connect_as(addr, "mallory", Some("b0b"))
        .await
        .err()
        .unwrap();
    assert_eq!(code(&err), "28P01", "{err}");
    assert!(connect_as(addr, "bob", None).await.is_err());

    // The server asks for SASL (SCRAM-SHA-256), never for a cleartext password.
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    raw.write_all(&startup(&[("user", "ana")])).unwrap();
    let (kind, body) = read_message(&mut raw);
    assert_eq!(kind, b'R');
    assert_eq!(
        &body[..4],
        &10i32.to_be_bytes(),
        "not an AuthenticationSASL"
    );
    assert!(String::from_utf8_lossy(&body[4..]).contains("SCRAM-SHA-256"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_are_refused_until_one_closes() {
    let c = cluster();
    let server = serve(&c, ServerConfig::new().max_connections(2));
    let addr = server.local_addr();
    let first = connect(addr).await;
    let second = connect(addr).await;
    let err = connect_as(addr, "weir", None).await.err().unwrap();
    assert_eq!(code(&err), "53300", "{err}");
    second.simple_query("SELECT 1").await.unwrap();
    drop(first);
    // The slot is free once the server has seen the first connection close.
    let started = Instant::now();
    let third = loop {
        match connect_as(addr, "weir", None).await {
            Ok((c, _)) => break c,
            Err(e) => {
                assert_eq!(code(&e), "53300");
                assert!(started.elapsed() < LIMIT, "the slot never came back");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    third.simple_query("SELECT 1").await.unwrap();
}

/// A startup message with `params`, protocol 3.0.
fn startup(params: &[(&str, &str)]) -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for (k, v) in params {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    msg.extend(body);
    msg
}

/// One backend message: its type byte and body.
fn read_message(s: &mut std::net::TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 5];
    s.read_exact(&mut head).unwrap();
    let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut body = vec![0u8; len - 4];
    s.read_exact(&mut body).unwrap();
    (head[0], body)
}

/// Whether the server closed `s` (reads end, or fail with a reset).
fn closed_by_server(s: &mut std::net::TcpStream) -> bool {
    s.set_read_timeout(Some(LIMIT)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_are_closed_while_others_are_served() {
    let c = cluster();
    load(&c, "t", 5);
    let server = serve(
        &c,
        ServerConfig::new()
            .max_connections(20)
            .auth_timeout(Duration::from_millis(300)),
    );
    let addr = server.local_addr();
    let good = connect(addr).await;

    // A startup packet claiming a length of 2 GB.
    let mut huge = std::net::TcpStream::connect(addr).unwrap();
    huge.write_all(&[0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0])
        .unwrap();
    assert!(closed_by_server(&mut huge), "huge startup packet");

    // A message of an unknown type after a good startup.
    let mut bad = std::net::TcpStream::connect(addr).unwrap();
    bad.write_all(&startup(&[("user", "x")])).unwrap();
    loop {
        let (kind, _) = read_message(&mut bad);
        if kind == b'Z' {
            break;
        }
    }
    bad.write_all(&[b'!', 0, 0, 0, 4]).unwrap();
    assert!(closed_by_server(&mut bad), "unknown message type");

    // Garbage where the startup packet should be.
    let mut garbage = std::net::TcpStream::connect(addr).unwrap();
    garbage.write_all(&[0, 0, 0, 8, 1, 2, 3, 4]).unwrap();
    assert!(closed_by_server(&mut garbage), "garbage startup");

    // Many connections that never say anything: closed once the time to authenticate is
    // over, and those past the limit are refused, while the good client is served.
    let mut idle: Vec<std::net::TcpStream> = (0..100)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    let n = rows_in_t(&good).await;
    assert_eq!(n, 5);
    for s in idle.iter_mut().step_by(10) {
        assert!(closed_by_server(s), "a silent connection stayed open");
    }
    drop(idle);
    // Once they are gone a new client gets in.
    let started = Instant::now();
    loop {
        match connect_as(addr, "weir", None).await {
            Ok((c, _)) => {
                c.simple_query("SELECT 1").await.unwrap();
                break;
            }
            Err(e) => {
                assert!(started.elapsed() < LIMIT, "no slot came back: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    let n = rows_in_t(&good).await;
    assert_eq!(n, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_from_stdin_and_to_stdout_in_csv_and_text() {
    use futures::SinkExt;
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    client
        .batch_execute(
            "CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR, price DECIMAL(10, 2), \
             day DATE); CREATE TABLE notes (id BIGINT PRIMARY KEY, body VARCHAR)",
        )
        .await
        .unwrap();

    // CSV with a header, quoted fields and NULLs, sent in several CopyData messages.
    let sink = client
        .copy_in::<_, bytes::Bytes>("COPY items FROM STDIN WITH (FORMAT csv, HEADER true)")
        .await
        .unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from("id,name,price,day\n"))
        .await
        .unwrap();
    for chunk in 0..10 {
        let mut data = String::new();
        for i in chunk * 100..(chunk + 1) * 100 {
            data.push_str(&format!(
                "{i},\"item, {i}\",{i}.50,2024-01-0{}\n",
                1 + i % 9
            ));
        }
        sink.send(bytes::Bytes::from(data)).await.unwrap();
    }
    sink.send(bytes::Bytes::from("1000,,,\n")).await.unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 1001);
    let row = client
        .query_one(
            "SELECT name, price::VARCHAR, day FROM items WHERE id = 7",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "item, 7");
    assert_eq!(row.get::<_, String>(1), "7.50");
    assert_eq!(
        row.get::<_, NaiveDate>(2),
        NaiveDate::from_ymd_opt(2024, 1, 8).unwrap()
    );
    let row = client
        .query_one("SELECT name FROM items WHERE id = 1000", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<String>>(0), None);

    // The text format: tab-separated, \N for NULL.
    let sink = client
        .copy_in::<_, bytes::Bytes>("COPY notes FROM STDIN")
        .await
        .unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from("1\thello world\n2\t\\N\n"))
        .await
        .unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 2);

    // A bad row keeps nothing of its COPY.
    let sink = client
        .copy_in::<_, bytes::Bytes>("COPY notes FROM STDIN")
        .await
        .unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from("3\tthree\nfour\t4\n"))
        .await
        .unwrap();
    assert!(sink.as_mut().finish().await.is_err());
    let n: i64 = client
        .query_one("SELECT COUNT(*) FROM notes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);

    // Out, as CSV from a query and as text from a table.
    let read = |sql: &'static str| {
        let client = &client;
        async move {
            let stream = client.copy_out(sql).await.unwrap();
            futures::pin_mut!(stream);
            let mut out = Vec::new();
            while let Some(b) = stream.next().await {
                out.extend_from_slice(&b.unwrap());
            }
            String::from_utf8(out).unwrap()
        }
    };
    assert_eq!(
        read("COPY (SELECT id, name FROM items WHERE id < 3 ORDER BY id) TO STDOUT (FORMAT csv, HEADER true)")
            .await,
        "id,name\n0,\"item, 0\"\n1,\"item, 1\"\n2,\"item, 2\"\n"
    );
    let text = read("COPY notes TO STDOUT").await;
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert_eq!(lines, ["1\thello world", "2\t\\N"]);

    // Files of the server are not the client's to read.
    let err = client
        .batch_execute("COPY items FROM '/etc/passwd'")
        .await
        .unwrap_err();
    assert_eq!(code(&err), "0A000");
    let err = client
        .batch_execute("COPY items TO STDOUT (FORMAT binary)")
        .await
        .unwrap_err();
    assert_eq!(code(&err), "0A000");
}

/// Accepts any server certificate: the test's is self-signed.
#[derive(Debug)]
struct AnyCertificate;

mod tls_client {
    use pgwire::tokio::tokio_rustls::rustls;
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, SignatureScheme};

    impl ServerCertVerifier for super::AnyCertificate {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            Ok(HandshakeSignatureValid::assertion())
        }

        fn verify_tls13_signature(
            &self,
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            Ok(HandshakeSignatureValid::assertion())
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            vec![
                SignatureScheme::RSA_PKCS1_SHA256,
                SignatureScheme::RSA_PSS_SHA256,
                SignatureScheme::ECDSA_NISTP256_SHA256,
                SignatureScheme::ED25519,
            ]
        }
    }
}

/// One backend message read from an async stream: its type byte and body.
async fn read_async<S: tokio::io::AsyncRead + Unpin>(s: &mut S) -> (u8, Vec<u8>) {
    use tokio::io::AsyncReadExt;
    let mut head = [0u8; 5];
    s.read_exact(&mut head).await.unwrap();
    let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut body = vec![0u8; len - 4];
    s.read_exact(&mut body).await.unwrap();
    (head[0], body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_is_given_to_clients_that_ask_and_plain_clients_are_served() {
    use pgwire::tokio::tokio_rustls::{rustls, TlsConnector};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let c = cluster();
    let config = ServerConfig::new()
        .tls(
            include_bytes!("tls/server.crt"),
            include_bytes!("tls/server.key"),
        )
        .unwrap();
    let server = serve(&c, config);
    let addr = server.local_addr();
    // A client that does not ask for SSL.
    let plain = connect(addr).await;
    plain.simple_query("SELECT 1").await.unwrap();

    // SSLRequest, 'S', then the handshake and the protocol inside TLS.
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
        .await
        .unwrap();
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer[0], b'S', "the server does not offer SSL");
    let client_config = rustls::ClientConfig::builder()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = bounded(
        "TLS handshake",
        TlsConnector::from(Arc::new(client_config)).connect(name, tcp),
    )
    .await
    .unwrap();
    tls.write_all(&startup(&[("user", "weir")])).await.unwrap();
    loop {
        let (kind, body) = read_async(&mut tls).await;
        assert_ne!(kind, b'E', "{}", String::from_utf8_lossy(&body));
        if kind == b'Z' {
            break;
        }
    }
    let sql = b"SELECT 41 + 1\0";
    let mut msg = vec![b'Q'];
    msg.extend(((sql.len() + 4) as i32).to_be_bytes());
    msg.extend(sql);
    tls.write_all(&msg).await.unwrap();
    let value = loop {
        let (kind, body) = read_async(&mut tls).await;
        assert_ne!(kind, b'E', "{}", String::from_utf8_lossy(&body));
        if kind == b'D' {
            let len = i32::from_be_bytes([body[2], body[3], body[4], body[5]]) as usize;
            break String::from_utf8(body[6..6 + len].to_vec()).unwrap();
        }
    };
    assert_eq!(value, "42");
}

/// The query psql 15 sends for `\dt` (and, with other relkinds, `\d`).
const PSQL_DT: &str = "SELECT n.nspname as \"Schema\",
  c.relname as \"Name\",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as \"Type\",
  pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_lists_tables_information_schema_answers_and_pg_catalog_is_refused() {
    let c = cluster();
    load(&c, "orders", 1);
    load(&c, "items", 1);
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    let s = |v: &str| Some(v.to_string());
    let listed = client.simple_query(PSQL_DT).await.unwrap();
    assert_eq!(
        texts(&listed),
        vec![
            vec![s("public"), s("items"), s("table"), s("weir")],
            vec![s("public"), s("orders"), s("table"), s("weir")],
        ]
    );
    // `\dt ord*` adds a pattern.
    let with_pattern = PSQL_DT.replace(
        "  AND pg_catalog.pg_table_is_visible",
        "  AND c.relname OPERATOR(pg_catalog.~) '^(ord.*)$' COLLATE pg_catalog.default\n  AND pg_catalog.pg_table_is_visible",
    );
    let listed = client.simple_query(&with_pattern).await.unwrap();
    assert_eq!(texts(&listed).len(), 1);
    // `\ds` lists the sequences, a SERIAL column's by its own name; `\d` lists them beside
    // the tables.
    client
        .batch_execute("CREATE SEQUENCE order_ids; CREATE TABLE tags (id SERIAL PRIMARY KEY)")
        .await
        .unwrap();
    let ds = PSQL_DT.replace("('r','p','')", "('S','')");
    assert_eq!(
        texts(&client.simple_query(&ds).await.unwrap()),
        vec![
            vec![s("public"), s("order_ids"), s("sequence"), s("weir")],
            vec![s("public"), s("tags_id_seq"), s("sequence"), s("weir")],
        ]
    );
    let d = PSQL_DT.replace("('r','p','')", "('r','p','v','m','S','f','')");
    assert_eq!(texts(&client.simple_query(&d).await.unwrap()).len(), 5);
    client
        .batch_execute("DROP TABLE tags; DROP SEQUENCE order_ids")
        .await
        .unwrap();
    let err = client
        .simple_query("SELECT typname FROM pg_catalog.pg_type")
        .await
        .unwrap_err();
    assert_eq!(code(&err), "0A000");
    assert!(
        err.to_string().contains("pg_catalog is not available")
            || format!("{err:?}").contains("pg_catalog is not available")
    );
    // information_schema answers as any query, also in the extended protocol with a parameter.
    let tables = client
        .simple_query(
            "SELECT table_name, table_type FROM information_schema.tables \
             WHERE table_schema = 'public' ORDER BY table_name",
        )
        .await
        .unwrap();
    assert_eq!(
        texts(&tables),
        vec![
            vec![s("items"), s("BASE TABLE")],
            vec![s("orders"), s("BASE TABLE")],
        ]
    );
    let columns = client
        .query(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns \
             WHERE table_name = $1 ORDER BY ordinal_position",
            &[&"orders"],
        )
        .await
        .unwrap();
    let described: Vec<(String, String, String)> = columns
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let row = |c: &str, t: &str, n: &str| (c.to_string(), t.to_string(), n.to_string());
    assert_eq!(
        described,
        vec![row("id", "bigint", "NO"), row("v", "bigint", "YES")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_admission_queue_answers_53000_and_the_queued_queries_complete() {
    use weir_runtime::{BreakerConfig, JoinMode};
    const BUDGET: usize = 64 << 20;
    let c = Arc::new(
        Cluster::builder()
            .nodes(1)
            .partitions(8)
            .batch_size(1024)
            .node_memory(BUDGET)
            .join_mode(JoinMode::Guarded)
            .breaker(BreakerConfig {
                base: Duration::from_millis(10),
                cap: Duration::from_millis(200),
                attempts: 8,
                retry_killed: true,
                joins_per_node: Some(usize::MAX),
                queue: 2,
                ..BreakerConfig::default()
            })
            .query_timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
    );
    load(&c, "big", 60_000);
    let server = serve(&c, ServerConfig::new());
    let addr = server.local_addr();
    // Most of the node's memory held: queries wait in the admission queue (2 places).
    let hold = c.hold_memory(0, BUDGET * 9 / 10).unwrap();
    let mut queued = Vec::new();
    for _ in 0..2 {
        let client = connect(addr).await;
        queued.push(tokio::spawn(async move {
            client
                .query_one("SELECT COUNT(*) FROM big", &[])
                .await
                .map(|r| r.get::<_, i64>(0))
        }));
    }
    let started = Instant::now();
    while c.stats().breaker.rejections < 2 {
        assert!(started.elapsed() < LIMIT, "the queries never queued");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The third is refused at once with a code a client retries on.
    let third = connect(addr).await;
    let err = third
        .query_one("SELECT COUNT(*) FROM big", &[])
        .await
        .unwrap_err();
    assert_eq!(code(&err), "53000", "{err}");
    drop(hold);
    for q in queued {
        assert_eq!(bounded("a queued query", q).await.unwrap().unwrap(), 60_000);
    }
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_from_stdin_works_where_the_clusters_copy_is_confined() {
    use futures::SinkExt;
    let dir = tempfile::tempdir().unwrap();
    let c = Arc::new(
        Cluster::builder()
            .nodes(1)
            .partitions(4)
            .copy_dirs([dir.path()])
            .build()
            .unwrap(),
    );
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    client
        .batch_execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR)")
        .await
        .unwrap();
    let sink = client
        .copy_in::<_, bytes::Bytes>("COPY kv FROM STDIN (FORMAT csv)")
        .await
        .unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from("1,a\n2,b\n")).await.unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 2);
    // The buffer file is gone once loaded.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// The queries psql 15 sends for `\d item`, as PostgreSQL 15 logged them (the lookup, then
/// with the oid it found: the relation's flags, its columns, its indexes, its inheritance).
const PSQL_D_LOOKUP: &str = "SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^(item)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;";
const PSQL_D_RELATION: &str = "SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, '', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = 'OID';";
const PSQL_D_COLUMNS: &str = "SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = 'OID' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;";
const PSQL_D_INDEXES: &str = "SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = 'OID' AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname;";
const PSQL_D_INHERITS: &str = "SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent AND i.inhrelid = 'OID'
  AND c.relkind != 'p' AND c.relkind != 'I'
ORDER BY inhseqno;";

/// A table with a key, a NOT NULL column, a decimal, two indexes (one unique on two
/// columns), and a view over it.
fn describe_fixture(c: &Cluster) {
    c.execute(
        "CREATE TABLE item (id SERIAL PRIMARY KEY, name VARCHAR NOT NULL, \
         price DECIMAL(12,2), made DATE DEFAULT '2024-01-01')",
    )
    .unwrap();
    c.execute("CREATE INDEX item_name ON item(name)").unwrap();
    c.execute("CREATE UNIQUE INDEX item_made ON item(made, price)")
        .unwrap();
    c.execute("CREATE VIEW cheap AS SELECT id, price FROM item WHERE price < 10")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psqls_describe_queries_are_answered_from_the_catalog() {
    let c = cluster();
    describe_fixture(&c);
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    let s = |v: &str| Some(v.to_string());
    let found = texts(&client.simple_query(PSQL_D_LOOKUP).await.unwrap());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0][1..], [s("public"), s("item")]);
    let oid = found[0][0].clone().unwrap();
    let ask = |q: &str| q.replace("OID", &oid);

    let relation = texts(&client.simple_query(&ask(PSQL_D_RELATION)).await.unwrap());
    assert_eq!(relation.len(), 1);
    assert_eq!(relation[0].len(), 15, "every column psql asked for");
    assert_eq!(relation[0][1], s("r"), "relkind");
    assert_eq!(relation[0][2], s("t"), "relhasindex");

    let columns: Vec<Vec<Option<String>>> =
        texts(&client.simple_query(&ask(PSQL_D_COLUMNS)).await.unwrap())
            .into_iter()
            .map(|r| vec![r[0].clone(), r[1].clone(), r[2].clone(), r[3].clone()])
            .collect();
    assert_eq!(
        columns,
        vec![
            vec![
                s("id"),
                s("bigint"),
                s("nextval('item_id_seq'::regclass)"),
                s("t")
            ],
            vec![s("name"), s("character varying"), None, s("t")],
            vec![s("price"), s("numeric(12,2)"), None, s("f")],
            vec![s("made"), s("date"), s("'2024-01-01'"), s("f")],
        ]
    );

    let indexes: Vec<(Option<String>, Option<String>, Option<String>)> =
        texts(&client.simple_query(&ask(PSQL_D_INDEXES)).await.unwrap())
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone(), r[5].clone()))
            .collect();
    assert_eq!(
        indexes,
        vec![
            (
                s("item_pkey"),
                s("t"),
                s("CREATE UNIQUE INDEX item_pkey ON public.item USING hash (id)")
            ),
            (
                s("item_made"),
                s("f"),
                s("CREATE UNIQUE INDEX item_made ON public.item USING btree (made, price)")
            ),
            (
                s("item_name"),
                s("f"),
                s("CREATE INDEX item_name ON public.item USING btree (name)")
            ),
        ]
    );
    assert!(texts(&client.simple_query(&ask(PSQL_D_INHERITS)).await.unwrap()).is_empty());

    // A name that matches nothing finds nothing; a view is found as one.
    let none = PSQL_D_LOOKUP.replace("^(item)$", "^(nosuch)$");
    assert!(texts(&client.simple_query(&none).await.unwrap()).is_empty());
    let view = texts(
        &client
            .simple_query(&PSQL_D_LOOKUP.replace("^(item)$", "^(cheap)$"))
            .await
            .unwrap(),
    );
    let view_oid = view[0][0].clone().unwrap();
    let kind = texts(
        &client
            .simple_query(&PSQL_D_RELATION.replace("OID", &view_oid))
            .await
            .unwrap(),
    );
    assert_eq!(kind[0][1], s("v"));
    // The extended protocol describes the same answer before running it.
    let rows = client.query(&ask(PSQL_D_COLUMNS), &[]).await.unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0].get::<_, String>(0), "id");
    assert!(rows[0].get::<_, bool>(3));
    server.shutdown();
    assert_idle(&c);
}

/// SQLAlchemy 2.1's reflection query named `name` (the server's fixture, as PostgreSQL
/// logged it).
fn sqlalchemy_query(name: &str) -> String {
    let all = include_str!("../src/describe/sqlalchemy_2_1.sql");
    let marker = format!("-- query: {name}\n");
    let rest = &all[all.find(&marker).expect("a fixture query") + marker.len()..];
    rest[..rest.find("\n-- query:").unwrap_or(rest.len())].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemys_reflection_reads_keys_and_indexes_as_arrays_in_binary() {
    let c = cluster();
    describe_fixture(&c);
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    // The table's object id, by name (kinds, excluded schema, name).
    let by_name: [&(dyn ToSql + Sync); 7] = [&"r", &"p", &"f", &"v", &"m", &"pg_catalog", &"item"];
    let found = client
        .query(&sqlalchemy_query("table_oids"), &by_name)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    let oid: i64 = found[0].get("oid");
    let oid_text = oid.to_string();

    // tokio-postgres reads results in binary: arrays arrive in PostgreSQL's array format.
    let key = client
        .query(
            &sqlalchemy_query("constraints"),
            &[&"1", &"pg_catalog.pg_constraint", &"p", &oid_text],
        )
        .await
        .unwrap();
    assert_eq!(key.len(), 1);
    assert_eq!(key[0].get::<_, Vec<String>>("cols"), ["id"]);
    assert_eq!(key[0].get::<_, String>("conname"), "item_pkey");
    assert_eq!(key[0].get::<_, i64>("conrelid"), oid);

    let indexes = client
        .query(
            &sqlalchemy_query("indexes"),
            &[&"0", &"1", &"true", &"0", &"1", &oid_text, &"p", &"u", &"x"],
        )
        .await
        .unwrap();
    /// An index's name, uniqueness, columns, whether each is an expression, and its flags.
    type Shown = (String, bool, Vec<String>, Vec<bool>, Vec<i16>);
    let shown: Vec<Shown> = indexes
        .iter()
        .map(|r| {
            (
                r.get("relname"),
                r.get("indisunique"),
                r.get("elements"),
                r.get("elements_is_expr"),
                r.get("indoption"),
            )
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            (
                "item_made".to_string(),
                true,
                vec!["made".to_string(), "price".to_string()],
                vec![false, false],
                vec![0, 0]
            ),
            (
                "item_name".to_string(),
                false,
                vec!["name".to_string()],
                vec![false],
                vec![0]
            ),
        ]
    );
    server.shutdown();
    assert_idle(&c);
}

/// Runs `psql` with `args` against `addr`; `None` when there is no `psql` on this machine.
/// Bounded: a psql that has not finished in [`LIMIT`] is killed and the test fails.
fn run_psql(addr: SocketAddr, args: &[&str]) -> Option<std::process::Output> {
    let child = match std::process::Command::new("psql")
        .args([
            "-X",
            "-h",
            &addr.ip().to_string(),
            "-p",
            &addr.port().to_string(),
        ])
        .args(["-U", "weir", "-d", "shop", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("cannot run psql: {e}"),
    };
    Some(finish(child, &format!("psql {args:?}")))
}

/// Waits for `child` to end, at most [`LIMIT`] (then kills it and fails the test).
fn finish(mut child: std::process::Child, what: &str) -> std::process::Output {
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("{what} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn the_psql_client_shows_foreign_keys_both_ways() {
    let c = cluster();
    c.execute("CREATE TABLE author (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    c.execute(
        "CREATE TABLE book (id BIGINT PRIMARY KEY, author_id BIGINT REFERENCES author, \
         co BIGINT, FOREIGN KEY (co) REFERENCES author (id) ON DELETE RESTRICT)",
    )
    .unwrap();
    let server = serve(&c, ServerConfig::new());
    let Some(out) = run_psql(server.local_addr(), &["-c", "\\d book", "-c", "\\d author"]) else {
        eprintln!("skipped: no psql on this machine");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8(out.stdout).unwrap();
    // As PostgreSQL 15's psql prints the same tables.
    for line in [
        "Foreign-key constraints:",
        "    \"book_author_id_fkey\" FOREIGN KEY (author_id) REFERENCES author(id)\n",
        "    \"book_co_fkey\" FOREIGN KEY (co) REFERENCES author(id) ON DELETE RESTRICT\n",
        "Referenced by:",
        "    TABLE \"book\" CONSTRAINT \"book_author_id_fkey\" FOREIGN KEY (author_id) REFERENCES author(id)\n",
        "    TABLE \"book\" CONSTRAINT \"book_co_fkey\" FOREIGN KEY (co) REFERENCES author(id) ON DELETE RESTRICT\n",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
}

#[test]
fn the_psql_client_lists_check_constraints() {
    let c = cluster();
    c.execute(
        "CREATE TABLE ck (a BIGINT PRIMARY KEY CHECK (a > 0), b VARCHAR, \
         CONSTRAINT two CHECK (b <> 'x'))",
    )
    .unwrap();
    c.execute("CREATE TABLE plain (a BIGINT PRIMARY KEY)")
        .unwrap();
    let server = serve(&c, ServerConfig::new());
    let Some(out) = run_psql(server.local_addr(), &["-c", "\\d ck", "-c", "\\d plain"]) else {
        eprintln!("skipped: no psql on this machine");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8(out.stdout).unwrap();
    // As PostgreSQL 15's psql prints them, by name.
    let listed =
        "Check constraints:\n    \"ck_a_check\" CHECK (a > 0)\n    \"two\" CHECK (b <> 'x')\n";
    assert!(out.contains(listed), "no {listed:?} in:\n{out}");
    assert_eq!(out.matches("Check constraints:").count(), 1, "{out}");
}

#[test]
fn the_psql_client_sets_and_shows_comments() {
    let c = cluster();
    c.execute("CREATE TABLE ck (a BIGINT PRIMARY KEY, b VARCHAR)")
        .unwrap();
    let server = serve(&c, ServerConfig::new());
    let set = [
        "-c",
        "COMMENT ON TABLE public.ck IS 'checked rows'",
        "-c",
        "COMMENT ON COLUMN ck.b IS 'the b'",
        "-c",
        "\\d+ ck",
        "-c",
        "\\dt+ ck",
    ];
    let Some(out) = run_psql(server.local_addr(), &set) else {
        eprintln!("skipped: no psql on this machine");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.matches("COMMENT\n").count(), 2, "the tag: {out}");
    // As PostgreSQL 15's psql prints them: the column's in `\d+`, the table's in `\dt+`.
    let column = out
        .lines()
        .find(|l| l.starts_with(" b "))
        .unwrap_or_default();
    assert!(column.trim_end().ends_with("| the b"), "{out}");
    let table = out
        .lines()
        .find(|l| l.contains("| ck "))
        .unwrap_or_default();
    assert!(table.trim_end().ends_with("| checked rows"), "{out}");
    assert!(out.contains("Description"), "{out}");
}

#[test]
fn the_psql_client_describes_sequences_and_the_columns_that_own_them() {
    let c = cluster();
    describe_fixture(&c);
    c.execute("CREATE SEQUENCE ticket_seq START WITH 100 INCREMENT BY 5 MAXVALUE 5000")
        .unwrap();
    c.execute("CREATE TABLE badge (id BIGINT GENERATED ALWAYS AS IDENTITY, v BIGINT)")
        .unwrap();
    let server = serve(&c, ServerConfig::new());
    let args = [
        "-c",
        "\\d ticket_seq",
        "-c",
        "\\d item_id_seq",
        "-c",
        "\\d badge_id_seq",
    ];
    let Some(out) = run_psql(server.local_addr(), &args) else {
        eprintln!("skipped: no psql on this machine");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8(out.stdout).unwrap();
    for line in [
        "Sequence \"public.ticket_seq\"",
        " bigint |   100 |       1 |    5000 |         5 | no      |     1",
        "Sequence \"public.item_id_seq\"",
        "Owned by: public.item.id",
        "Sequence \"public.badge_id_seq\"",
        "Sequence for identity column: public.badge.id",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
    // A sequence made by CREATE SEQUENCE is owned by no column.
    let ticket = &out[..out.find("item_id_seq").unwrap()];
    assert!(!ticket.contains("Owned by"), "{ticket}");
    server.shutdown();
    assert_idle(&c);
}

#[test]
fn the_psql_client_describes_tables_and_views() {
    let c = cluster();
    describe_fixture(&c);
    let server = serve(&c, ServerConfig::new());
    let addr = server.local_addr();
    let Some(out) = run_psql(addr, &["-c", "\\d item", "-c", "\\d+ cheap", "-c", "\\d"]) else {
        // `.ci/run` installs psql; a developer's machine may not have it.
        eprintln!("skipped: no psql on this machine");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8(out.stdout).unwrap();
    for line in [
        "Table \"public.item\"",
        " id     | bigint            |           | not null | ",
        " name   | character varying |           | not null | ",
        " price  | numeric(12,2)     |           |          | ",
        "\"item_pkey\" PRIMARY KEY, hash (id)",
        "\"item_made\" UNIQUE, btree (made, price)",
        "\"item_name\" btree (name)",
        "View \"public.cheap\"",
        "View definition:",
        "SELECT id, price FROM item WHERE price < 10",
        // `\d` lists the SERIAL column's sequence too, as PostgreSQL's psql does.
        " public | cheap       | view     | weir",
        " public | item        | table    | weir",
        " public | item_id_seq | sequence | weir",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
    // The other lists users type first: databases, schemas, indexes, tables with `+`,
    // roles and functions.
    let lists = run_psql(
        addr,
        &[
            "-c",
            "\\l",
            "-c",
            "\\dn",
            "-c",
            "\\di",
            "-c",
            "\\dt+ it*",
            "-c",
            "\\du",
            "-c",
            "\\df",
        ],
    )
    .unwrap();
    assert!(lists.status.success(), "{lists:?}");
    let lists = String::from_utf8(lists.stdout).unwrap();
    for line in [
        "List of databases",
        " shop | weir  | UTF8     |",
        "List of schemas",
        " public | weir",
        " public | item_made | index | weir  | item",
        " public | item_name | index | weir  | item",
        " public | item_pkey | index | weir  | item",
        " public | item | table | weir  | permanent   |",
        "List of roles",
        " weir      | Superuser  | {}",
        "List of functions",
    ] {
        assert!(lists.contains(line), "no {line:?} in:\n{lists}");
    }
    assert!(
        !lists.contains("cheap"),
        "\\dt+ it* lists no view:\n{lists}"
    );
    let missing = run_psql(addr, &["-c", "\\d nosuch"]).unwrap();
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("Did not find any relation named \"nosuch\""),
        "{missing:?}"
    );
    server.shutdown();
    assert_idle(&c);
}

/// The PostgreSQL JDBC driver, as Debian's `libpostgresql-jdbc-java` installs it.
const JDBC_JAR: &str = "/usr/share/java/postgresql.jar";

#[test]
fn the_jdbc_driver_runs_a_session_against_the_server() {
    let has_java = std::process::Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_java || !std::path::Path::new(JDBC_JAR).exists() {
        // `.ci/run` installs the driver; a developer's machine may not have it or Java.
        eprintln!("skipped: no java or no {JDBC_JAR} on this machine");
        return;
    }
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let program = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/JdbcSession.java"
    );
    // Java runs a one-file program from its source.
    let child = std::process::Command::new("java")
        .args(["-cp", JDBC_JAR, program])
        .arg(server.local_addr().port().to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, "the JDBC session");
    assert!(
        out.status.success(),
        "the JDBC session failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("jdbc session ok"));
    let rows = c
        .query("SELECT COUNT(*), SUM(price) FROM jdbc_items", &[])
        .unwrap();
    assert_eq!(rows.rows()[0][0], weir_operators::Value::Int(14));
    server.shutdown();
    assert_idle(&c);
}

#[test]
fn psycopg_runs_a_session_against_the_server() {
    let has_psycopg = std::process::Command::new("python3")
        .args(["-c", "import psycopg"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_psycopg {
        // `.ci/run` installs psycopg; a developer's machine may not have it.
        eprintln!("skipped: no python3 with psycopg on this machine");
        return;
    }
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/psycopg_session.py"
    );
    let child = std::process::Command::new("python3")
        .arg(script)
        .arg(server.local_addr().port().to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, "the psycopg session");
    assert!(
        out.status.success(),
        "the psycopg session failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("psycopg session ok"), "{said}");
    if !said.contains("sqlalchemy session ok") {
        eprintln!("{said}");
    }
    let rows = c.query("SELECT COUNT(*) FROM py_items", &[]).unwrap();
    assert_eq!(rows.rows()[0][0], weir_operators::Value::Int(14));
    server.shutdown();
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoints_are_accepted_in_a_block_and_say_that_they_undo_nothing() {
    let c = cluster();
    load(&c, "t", 0);
    let server = serve(&c, ServerConfig::new());
    let (client, mut notices) = bounded("connect", connect_as(server.local_addr(), "weir", None))
        .await
        .unwrap();
    // Outside a block, as PostgreSQL: 25P01.
    let err = client.batch_execute("SAVEPOINT a").await.unwrap_err();
    assert_eq!(code(&err), "25P01");
    client.batch_execute("BEGIN").await.unwrap();
    client.batch_execute("SAVEPOINT a").await.unwrap();
    client.batch_execute("RELEASE SAVEPOINT a").await.unwrap();
    let err = client.batch_execute("RELEASE a").await.unwrap_err();
    assert_eq!(code(&err), "3B001", "released savepoints are gone");
    let err = client.batch_execute("ROLLBACK TO SAVEPOINT nope").await;
    assert_eq!(code(&err.unwrap_err()), "3B001");
    // That error ended nothing: weir's block is not aborted by an error.
    client.batch_execute("SAVEPOINT \"B\"").await.unwrap();
    // Nothing written since B: no warning (notices arrive in order, so the first one seen
    // below must be the one for the write, which names one statement).
    client.batch_execute("ROLLBACK TO \"B\"").await.unwrap();
    client
        .batch_execute("INSERT INTO t VALUES (1, 1)")
        .await
        .unwrap();
    client
        .batch_execute("ROLLBACK TRANSACTION TO SAVEPOINT \"B\"")
        .await
        .unwrap();
    let warning = bounded("the warning", notices.recv()).await.unwrap();
    assert!(
        warning.contains("the 1 statement(s) that wrote since SAVEPOINT B")
            && warning.contains("does not undo"),
        "{warning}"
    );
    client.batch_execute("COMMIT").await.unwrap();
    assert_eq!(
        rows_in_t(&client).await,
        1,
        "the insert was kept, as the warning said"
    );
    server.shutdown();
    assert_idle(&c);
}

/// The column names of a simple query's first row description.
fn simple_names(messages: &[SimpleQueryMessage]) -> Vec<String> {
    messages
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::RowDescription(columns) => {
                Some(columns.iter().map(|c| c.name().to_string()).collect())
            }
            _ => None,
        })
        .expect("a row description")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_columns_are_named_as_postgresql_names_them() {
    let c = cluster();
    load(&c, "t", 3);
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    let sql =
        "SELECT count(*), SUM(v) AS Total, max(v) + 1, CASE WHEN count(*) > 1 THEN 'many' END, \
               CAST(min(v) AS TEXT), \"min\"(id) AS \"Low\" FROM t";
    let expected = ["count", "total", "?column?", "case", "min", "Low"];
    // Simple protocol: the names come with the rows.
    let answer = bounded("simple", client.simple_query(sql)).await.unwrap();
    assert_eq!(simple_names(&answer), expected);
    assert_eq!(
        texts(&answer),
        vec![["3", "3", "3", "many", "0", "0"]
            .map(|v| Some(v.to_string()))
            .to_vec()]
    );
    // Extended protocol: Describe names them before the statement runs, and a row is read
    // by those names.
    let stmt = bounded("prepare", client.prepare(sql)).await.unwrap();
    let names: Vec<&str> = stmt.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, expected);
    let row = bounded("query", client.query_one(&stmt, &[]))
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>("count"), 3);
    assert_eq!(row.get::<_, String>("case"), "many");
    // A `*` keeps the table's names; a RETURNING list is named as a select list.
    let answer = bounded(
        "star",
        client.simple_query("SELECT *, v * 2 FROM t WHERE id = 1"),
    )
    .await
    .unwrap();
    assert_eq!(simple_names(&answer), ["id", "v", "?column?"]);
    let answer = bounded(
        "returning",
        client.simple_query("UPDATE t SET v = v + 1 WHERE id = 2 RETURNING id, v - 1, abs(v)"),
    )
    .await
    .unwrap();
    assert_eq!(simple_names(&answer), ["id", "?column?", "abs"]);
    assert_eq!(
        texts(&answer),
        vec![["2", "2", "3"].map(|v| Some(v.to_string())).to_vec()]
    );
    drop(client);
    server.shutdown();
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn currval_and_lastval_answer_each_connection_its_own_values() {
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let a = connect(server.local_addr()).await;
    let b = connect(server.local_addr()).await;
    a.batch_execute("CREATE TABLE posts (id SERIAL PRIMARY KEY, title VARCHAR)")
        .await
        .unwrap();
    // Before a connection was handed a value: 55000, as PostgreSQL answers.
    let e = a
        .query_one("SELECT currval('posts_id_seq')", &[])
        .await
        .unwrap_err();
    assert_eq!(code(&e), "55000", "{e}");
    let e = a.simple_query("SELECT lastval()").await.unwrap_err();
    assert_eq!(code(&e), "55000", "{e}");
    // PHP's PDO::lastInsertId and older drivers: an INSERT, then currval or lastval on the
    // same connection (simple and extended protocol), while another connection inserts.
    a.batch_execute("INSERT INTO posts (title) VALUES ('first')")
        .await
        .unwrap();
    let insert = b
        .prepare("INSERT INTO posts (title) VALUES ($1)")
        .await
        .unwrap();
    for title in ["x", "y", "z"] {
        b.execute(&insert, &[&title]).await.unwrap();
    }
    let current = a.prepare("SELECT currval('posts_id_seq')").await.unwrap();
    let a_key: i64 = a.query_one(&current, &[]).await.unwrap().get(0);
    let a_last = a.simple_query("SELECT lastval()").await.unwrap();
    assert_eq!(texts(&a_last), vec![vec![Some(a_key.to_string())]]);
    let b_key: i64 = b.query_one("SELECT lastval()", &[]).await.unwrap().get(0);
    let title = |key: i64| {
        c.query("SELECT title FROM posts WHERE id = $1", &[key.into()])
            .unwrap()
            .rows()[0][0]
            .clone()
    };
    assert_eq!(title(a_key), weir_operators::Value::Str("first".into()));
    assert_eq!(
        title(b_key),
        weir_operators::Value::Str("z".into()),
        "B's last row"
    );
    drop((a, b));
    server.shutdown();
    assert_idle(&c);
}
