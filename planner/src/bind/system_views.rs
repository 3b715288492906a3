//! The SQL standard's system views: `information_schema.tables`, `.columns`, `.views`,
//! `.sequences` and `.schemata`, computed from the catalog when a query names them (as the rows of a VALUES),
//! so that a query can filter, join, group and sort them like any table. Names and types are
//! PostgreSQL's, for the tools that read them: every table is in schema `public` of catalog
//! `weir`, an external table's type is `FOREIGN` and a column's `data_type` is PostgreSQL's name
//! for its type. A cached plan of such a query is planned again after every schema change (the
//! plan cache is keyed by the catalog's version).

use super::{at, Binder};
use crate::catalog::TableDef;
use crate::error::PlanError;
use crate::logical::LogicalPlan;
use sqlparser::tokenizer::Span;
use weir_operators::{DataType, Field, Schema, Value};

/// The schema the system views are in.
pub(crate) const INFORMATION_SCHEMA: &str = "information_schema";

/// The catalog every table is in (`table_catalog`).
const CATALOG: &str = "weir";

/// The schema every table is in (`table_schema`).
const PUBLIC: &str = "public";

/// PostgreSQL's name for a column type, as `information_schema.columns.data_type` gives it.
pub(super) fn type_name(t: DataType) -> &'static str {
    match t {
        DataType::Int64 => "bigint",
        DataType::Float64 => "double precision",
        DataType::Utf8 => "character varying",
        DataType::Boolean => "boolean",
        DataType::Decimal { .. } => "numeric",
        DataType::Date => "date",
        DataType::Timestamp => "timestamp without time zone",
    }
}

/// A column type's precision and scale, as `numeric_precision` and `numeric_scale` give them
/// (binary digits for BIGINT and DOUBLE, as PostgreSQL; NULL for other than numbers).
fn precision_and_scale(t: DataType) -> (Value, Value) {
    match t {
        DataType::Int64 => (Value::Int(64), Value::Int(0)),
        DataType::Float64 => (Value::Int(53), Value::Null),
        DataType::Decimal { precision, scale } => {
            (Value::Int(precision.into()), Value::Int(scale.into()))
        }
        _ => (Value::Null, Value::Null),
    }
}

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

fn fields(columns: &[(&str, DataType)]) -> Schema {
    Schema::new(
        columns
            .iter()
            .map(|(name, t)| Field::new(*name, *t))
            .collect(),
    )
}

fn table_type(def: &TableDef) -> &'static str {
    if def.external.is_some() {
        "FOREIGN"
    } else {
        "BASE TABLE"
    }
}

impl Binder<'_> {
    /// The rows of system view `schema.name` when `schema` is `information_schema` (any case);
    /// `None` for another schema. An unknown view of `information_schema` is an unknown table.
    pub(super) fn system_view(
        &mut self,
        schema: &str,
        name: &str,
        span: Span,
    ) -> Option<Result<LogicalPlan, PlanError>> {
        if !schema.eq_ignore_ascii_case(INFORMATION_SCHEMA) {
            return None;
        }
        let (schema, rows) = match name.to_lowercase().as_str() {
            "tables" => self.tables_view(),
            "columns" => self.columns_view(span),
            "views" => self.views_view(),
            "sequences" => self.sequences_view(),
            "schemata" => (
                fields(&[
                    ("catalog_name", DataType::Utf8),
                    ("schema_name", DataType::Utf8),
                ]),
                [INFORMATION_SCHEMA, PUBLIC]
                    .iter()
                    .map(|s| vec![text(CATALOG), text(s)])
                    .collect(),
            ),
            _ => {
                return Some(Err(PlanError::UnknownTable(format!(
                    "{INFORMATION_SCHEMA}.{name} (weir has information_schema.tables, .columns, \
                     .views, .sequences and .schemata){}",
                    at(span)
                ))))
            }
        };
        Some(Ok(LogicalPlan::Values { schema, rows }))
    }

    /// `information_schema.tables`: one row per table and view.
    fn tables_view(&self) -> (Schema, Vec<Vec<Value>>) {
        let schema = fields(&[
            ("table_catalog", DataType::Utf8),
            ("table_schema", DataType::Utf8),
            ("table_name", DataType::Utf8),
            ("table_type", DataType::Utf8),
        ]);
        let row =
            |name: &str, kind: &str| vec![text(CATALOG), text(PUBLIC), text(name), text(kind)];
        let mut rows: Vec<Vec<Value>> = self
            .catalog
            .tables()
            .map(|t| row(&t.name, table_type(t)))
            .collect();
        rows.extend(self.catalog.views().map(|v| row(&v.name, "VIEW")));
        (schema, rows)
    }

    /// `information_schema.sequences`: one row per sequence, those made by `CREATE
    /// SEQUENCE` and those of `SERIAL` and identity columns (named `<table>_<column>_seq`),
    /// with PostgreSQL's columns (its bounds and step as text, as PostgreSQL gives them).
    fn sequences_view(&self) -> (Schema, Vec<Vec<Value>>) {
        let schema = fields(&[
            ("sequence_catalog", DataType::Utf8),
            ("sequence_schema", DataType::Utf8),
            ("sequence_name", DataType::Utf8),
            ("data_type", DataType::Utf8),
            ("numeric_precision", DataType::Int64),
            ("numeric_precision_radix", DataType::Int64),
            ("numeric_scale", DataType::Int64),
            ("start_value", DataType::Utf8),
            ("minimum_value", DataType::Utf8),
            ("maximum_value", DataType::Utf8),
            ("increment", DataType::Utf8),
            ("cycle_option", DataType::Utf8),
        ]);
        let row = |name: String, start: i64, min: i64, max: i64, increment: i64| {
            vec![
                text(CATALOG),
                text(PUBLIC),
                Value::Str(name),
                text("bigint"),
                Value::Int(64),
                Value::Int(2),
                Value::Int(0),
                Value::Str(start.to_string()),
                Value::Str(min.to_string()),
                Value::Str(max.to_string()),
                Value::Str(increment.to_string()),
                text("NO"),
            ]
        };
        let rows = self
            .catalog
            .all_sequences()
            .into_iter()
            .map(|s| row(s.name, s.start, s.min, s.max, s.increment))
            .collect();
        (schema, rows)
    }

    /// `information_schema.views`: one row per view, with its query's text.
    fn views_view(&self) -> (Schema, Vec<Vec<Value>>) {
        let schema = fields(&[
            ("table_catalog", DataType::Utf8),
            ("table_schema", DataType::Utf8),
            ("table_name", DataType::Utf8),
            ("view_definition", DataType::Utf8),
        ]);
        let rows = self
            .catalog
            .views()
            .map(|v| vec![text(CATALOG), text(PUBLIC), text(&v.name), text(&v.sql)])
            .collect();
        (schema, rows)
    }

    /// `information_schema.columns`: one row per column of every table and view (a view's
    /// columns as its query gives them; a view that no longer binds has none).
    fn columns_view(&mut self, span: Span) -> (Schema, Vec<Vec<Value>>) {
        let schema = fields(&[
            ("table_catalog", DataType::Utf8),
            ("table_schema", DataType::Utf8),
            ("table_name", DataType::Utf8),
            ("column_name", DataType::Utf8),
            ("ordinal_position", DataType::Int64),
            ("column_default", DataType::Utf8),
            ("is_nullable", DataType::Utf8),
            ("data_type", DataType::Utf8),
            ("numeric_precision", DataType::Int64),
            ("numeric_scale", DataType::Int64),
        ]);
        let row = |table: &str, i: usize, f: &Field, nullable: bool| {
            let (precision, scale) = precision_and_scale(f.data_type);
            vec![
                text(CATALOG),
                text(PUBLIC),
                text(table),
                text(&f.name),
                Value::Int(i as i64 + 1),
                Value::Null,
                text(if nullable { "YES" } else { "NO" }),
                text(type_name(f.data_type)),
                precision,
                scale,
            ]
        };
        let mut rows = Vec::new();
        for t in self.catalog.tables() {
            for (i, f) in t.schema.fields.iter().enumerate() {
                let nullable = !t.primary_key.contains(&i) && !t.not_null.contains(&i);
                rows.push(row(&t.name, i, f, nullable));
            }
        }
        let views: Vec<_> = self.catalog.views().cloned().collect();
        for v in &views {
            if let Ok(bound) = self.view(v, span) {
                for (i, f) in bound.fields.iter().enumerate() {
                    rows.push(row(&v.name, i, f, true));
                }
            }
        }
        (schema, rows)
    }
}
