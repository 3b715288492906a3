//! A PostgreSQL database brought to weir as `pg_dump` writes it: the scripts of PostgreSQL
//! 15's `pg_dump --schema-only` and `--data-only` (`server/tests/clients/pg_dump_15_*.sql`: a
//! shop with a SERIAL and a BIGSERIAL key, a unique column, an index, a view and a foreign key
//! with ON DELETE CASCADE; a catalogue with identity columns, CHECK constraints, comments, a
//! unique and a two-column index)
//! run as `psql -f` runs them, and the database then answers and enforces what it declared.

use super::{assert_idle, bounded, cluster, code, connect, serve, texts};
use futures::SinkExt;
use std::sync::Arc;
use tokio_postgres::Client;
use weir_runtime::Cluster;
use weir_server::{PostgresServer, ServerConfig};

/// Runs a psql script as `psql -f` sends it: each statement (up to a line that ends with `;`)
/// in a Query message of its own, the rows after `COPY ... FROM stdin;` up to `\.` through the
/// copy sub-protocol; comments, blank lines and psql's `\` commands are psql's own.
async fn run_script(client: &Client, script: &str) -> Result<(), tokio_postgres::Error> {
    let mut lines = script.lines();
    let mut statement = String::new();
    while let Some(line) = lines.next() {
        let skipped = line.starts_with("--") || line.starts_with('\\') || line.trim().is_empty();
        if statement.is_empty() && skipped {
            continue;
        }
        statement.push_str(line);
        statement.push('\n');
        if !line.trim_end().ends_with(';') {
            continue;
        }
        let sql = std::mem::take(&mut statement);
        let sql = sql.trim().trim_end_matches(';');
        if sql.starts_with("COPY ") && sql.ends_with("FROM stdin") {
            let sink = client.copy_in::<_, bytes::Bytes>(sql).await?;
            futures::pin_mut!(sink);
            let mut rows = String::new();
            for row in lines.by_ref().take_while(|l| *l != "\\.") {
                rows.push_str(row);
                rows.push('\n');
            }
            sink.send(bytes::Bytes::from(rows)).await?;
            sink.as_mut().finish().await?;
        } else {
            client.batch_execute(sql).await?;
        }
    }
    Ok(())
}

async fn one(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    texts(&client.simple_query(sql).await.unwrap())
}

/// A value as a simple query answers it.
fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// A cluster served over the protocol, with a client that ran `schema` and then `data`.
async fn restored(schema: &str, data: &str) -> (Arc<Cluster>, PostgresServer, Client) {
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    bounded("the schema", run_script(&client, schema))
        .await
        .unwrap();
    bounded("the data", run_script(&client, data))
        .await
        .unwrap();
    (c, server, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pg_dump_in_two_steps_restores_and_keeps_its_keys_sequences_and_view() {
    let (c, _server, client) = restored(
        include_str!("../clients/pg_dump_15_schema.sql"),
        include_str!("../clients/pg_dump_15_data.sql"),
    )
    .await;

    assert_eq!(
        one(&client, "SELECT id, name, email FROM customers ORDER BY id").await,
        vec![
            vec![s("1"), s("Ann"), s("ann@x.org")],
            vec![s("2"), s("Bob"), None],
            vec![s("3"), s("Cé"), s("ce@x.org")],
        ]
    );
    assert_eq!(
        one(&client, "SELECT id, total FROM big_orders").await,
        vec![vec![s("2"), s("250.00")]]
    );
    // The keys go on after the values setval restored.
    assert_eq!(
        one(
            &client,
            "INSERT INTO customers (name) VALUES ('Dee') RETURNING id"
        )
        .await,
        vec![vec![s("4")]]
    );
    assert_eq!(
        one(
            &client,
            "INSERT INTO orders (customer_id) VALUES (4) RETURNING id, status"
        )
        .await,
        vec![vec![s("4"), s("new")]]
    );
    // The constraints the dump added after its tables are enforced.
    for (sql, sqlstate) in [
        (
            "INSERT INTO customers (id, name) VALUES (1, 'again')",
            "23505",
        ),
        (
            "INSERT INTO customers (name, email) VALUES ('Eve', 'ann@x.org')",
            "23505",
        ),
        ("INSERT INTO orders (customer_id) VALUES (99)", "23503"),
        ("INSERT INTO customers (id) VALUES (9)", "23502"),
    ] {
        let e = client.batch_execute(sql).await.unwrap_err();
        assert_eq!(code(&e), sqlstate, "{sql}: {e:?}");
    }
    client
        .batch_execute("DELETE FROM customers WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(
        one(&client, "SELECT count(*) FROM orders").await,
        vec![vec![s("2")]]
    );
    // A sequence OWNED BY a column goes with its table.
    let sequences = "SELECT sequence_name FROM information_schema.sequences ORDER BY 1";
    assert_eq!(
        one(&client, sequences).await,
        vec![vec![s("customers_id_seq")], vec![s("orders_id_seq")]]
    );
    client
        .batch_execute("DROP VIEW big_orders; DROP TABLE orders")
        .await
        .unwrap();
    assert_eq!(
        one(&client, sequences).await,
        vec![vec![s("customers_id_seq")]]
    );
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_columns_restore_and_their_sequences_go_on() {
    let (c, _server, client) = restored(
        include_str!("../clients/pg_dump_15_identity_schema.sql"),
        include_str!("../clients/pg_dump_15_identity_data.sql"),
    )
    .await;
    assert_eq!(
        one(
            &client,
            "SELECT i.title, t.tag FROM items i JOIN tags t ON t.item_id = i.id ORDER BY i.id"
        )
        .await,
        vec![
            vec![s("lamp"), s("light")],
            vec![s("desk"), s("wood")],
            vec![s("chair"), s("wood")],
        ]
    );
    assert_eq!(
        one(
            &client,
            "INSERT INTO items (title) VALUES ('rug') RETURNING id"
        )
        .await,
        vec![vec![s("4")]]
    );
    assert_eq!(
        one(
            &client,
            "INSERT INTO tags (item_id, tag) VALUES (4, 'soft') RETURNING id"
        )
        .await,
        vec![vec![s("4")]]
    );
    // GENERATED ALWAYS: an INSERT gives no value; the unique index and the CHECK
    // constraints hold.
    for (sql, sqlstate) in [
        (
            "INSERT INTO tags (id, item_id, tag) VALUES (9, 1, 'xy')",
            "42000",
        ),
        (
            "INSERT INTO items (title, price) VALUES ('debt', -1)",
            "23514",
        ),
        ("INSERT INTO tags (item_id, tag) VALUES (1, 'x')", "23514"),
        ("UPDATE items SET price = -2 WHERE id = 1", "23514"),
        ("INSERT INTO items (title) VALUES ('lamp')", "23505"),
        ("INSERT INTO tags (item_id, tag) VALUES (77, 'xy')", "23503"),
    ] {
        let e = client.batch_execute(sql).await.unwrap_err();
        assert_eq!(code(&e), sqlstate, "{sql}: {e:?}");
    }
    // The dump's comments, on the table and on a column.
    let items = c.tables().into_iter().find(|t| t.name == "items").unwrap();
    assert_eq!(
        items.comments.table.as_deref(),
        Some("What the catalogue sells; it's priced in euros.")
    );
    let price = items.schema.index_of("price").unwrap();
    assert_eq!(
        items.comments.of_column(price),
        Some("Price in euros, before tax")
    );
    assert_idle(&c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_key_added_to_a_table_with_rows_is_refused_naming_the_two_step_restore() {
    let c = cluster();
    let server = serve(&c, ServerConfig::new());
    let client = connect(server.local_addr()).await;
    client
        .batch_execute(
            "CREATE TABLE k (id integer NOT NULL, v text); \
             CREATE TABLE e (id integer NOT NULL, v text); \
             INSERT INTO k VALUES (1, 'a'), (1, 'b')",
        )
        .await
        .unwrap();
    let e = client
        .batch_execute("ALTER TABLE ONLY public.k ADD CONSTRAINT k_pkey PRIMARY KEY (id)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "0A000");
    let message = e.as_db_error().unwrap().message().to_string();
    assert!(
        message.contains("holds rows") && message.contains("--schema-only"),
        "{message}"
    );
    // On a table without rows the key is the table's from then on.
    client
        .batch_execute("ALTER TABLE e ADD PRIMARY KEY (id); INSERT INTO e VALUES (1, 'a')")
        .await
        .unwrap();
    let e = client
        .batch_execute("INSERT INTO e VALUES (1, 'b')")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "23505");
    let e = client
        .batch_execute("ALTER TABLE e ADD PRIMARY KEY (v)")
        .await
        .unwrap_err();
    let message = e.as_db_error().unwrap().message().to_string();
    assert!(message.contains("multiple primary keys"), "{message}");
    // OWNER TO names a relation weir has; it changes nothing else.
    client
        .batch_execute("ALTER TABLE k OWNER TO someone")
        .await
        .unwrap();
    let e = client
        .batch_execute("ALTER TABLE nope OWNER TO someone")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "42P01");
    assert_idle(&c);
}
