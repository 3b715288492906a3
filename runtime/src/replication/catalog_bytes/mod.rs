//! The catalog's wire form: a planner's [`CatalogSnapshot`] encoded as [`CatalogBytes`] for the
//! messages and logs that carry it, and decoded with its invariants checked (a catalog names
//! only columns its tables have), so that no node trusts a catalog it was sent.
//!
//! The bytes open with [`VERSIONED`] and the format's number ([`FORMAT`]), then the
//! snapshot in the project's codec: a build reads every format up to its own (the earlier
//! ones, the first written before catalogs had a number, by the `legacy` module) and
//! refuses a newer one by name, so that a data directory or a catalog log outlives the build
//! that wrote it.

mod legacy;

use crate::error::Result;
use crate::wire::codec;
use crate::wire::messages::CatalogBytes;
use weir_planner::CatalogSnapshot;

/// The first byte of a catalog with a format number. The first format began with the
/// schema version as a bincode varint, whose first byte is never 255.
pub const VERSIONED: u8 = 0xFF;

/// The catalog format this build writes: 2 added column defaults and sequences, 3 foreign
/// keys, 4 the sequences of `CREATE SEQUENCE`, 5 their owning columns (`OWNED BY`) and
/// tables' `CHECK` constraints, 6 tables' and columns' comments (`COMMENT ON`).
pub const FORMAT: u8 = 6;

/// The wire form of catalog `snapshot`.
pub fn encode_catalog(snapshot: &CatalogSnapshot) -> CatalogBytes {
    match codec::encode(snapshot) {
        Ok(body) => {
            let mut bytes = Vec::with_capacity(body.len() + 2);
            bytes.extend_from_slice(&[VERSIONED, FORMAT]);
            bytes.extend_from_slice(&body);
            CatalogBytes(bytes)
        }
        Err(e) => {
            // Only a catalog beyond the codec's size limit gets here; its receivers refuse
            // the empty form as they would any catalog that does not decode.
            tracing::error!("cannot encode the catalog: {e}");
            CatalogBytes(Vec::new())
        }
    }
}

/// The snapshot of `bytes`, in whichever format they were written.
fn decode_any(bytes: &[u8]) -> Result<CatalogSnapshot> {
    match bytes {
        [VERSIONED, FORMAT, body @ ..] => codec::decode(body),
        [VERSIONED, 5, body @ ..] => Ok(codec::decode::<legacy::CatalogSnapshotV5>(body)?.into()),
        [VERSIONED, 4, body @ ..] => Ok(codec::decode::<legacy::CatalogSnapshotV4>(body)?.into()),
        [VERSIONED, 3, body @ ..] => Ok(codec::decode::<legacy::CatalogSnapshotV3>(body)?.into()),
        [VERSIONED, 2, body @ ..] => Ok(codec::decode::<legacy::CatalogSnapshotV2>(body)?.into()),
        [VERSIONED, format, ..] => Err(crate::error::Error::Codec(format!(
            "the catalog is in format {format}, newer than this build of weir reads (up to {FORMAT}): run a newer weir"
        ))),
        first => Ok(codec::decode::<legacy::CatalogSnapshotV1>(first)?.into()),
    }
}

/// Whether sequence `s` has no owner or one of `snapshot`'s tables has its owning column.
fn owner_known(snapshot: &CatalogSnapshot, s: &weir_planner::NamedSequence) -> bool {
    s.owner.as_ref().is_none_or(|o| {
        snapshot.tables.iter().any(|t| {
            t.name.eq_ignore_ascii_case(&o.table) && t.schema.index_of(&o.column).is_some()
        })
    })
}

/// The catalog snapshot `bytes` encode, checked: every table's key, indexed, NOT NULL,
/// defaulted and commented columns are its columns, the key's distinct, and it has partitions (the planner indexes
/// a table's columns by these).
pub fn decode_catalog(bytes: &CatalogBytes) -> Result<CatalogSnapshot> {
    let snapshot = decode_any(&bytes.0)?;
    for def in &snapshot.tables {
        let columns = def.schema.len();
        let named = def
            .primary_key
            .iter()
            .chain(def.indexes.iter().map(|i| &i.column))
            .chain(def.indexes.iter().flat_map(|i| &i.further))
            .chain(&def.not_null)
            .chain(def.defaults.iter().map(|d| &d.column))
            .chain(def.comments.columns.iter().map(|(c, _)| c));
        let mut key = def.primary_key.clone();
        key.sort_unstable();
        if named.into_iter().any(|&c| c >= columns)
            || key.windows(2).any(|w| w[0] == w[1])
            || def.partitions == 0
        {
            return Err(crate::error::Error::Codec(format!(
                "the catalog's table {} is malformed (a key, index, NOT NULL, default or commented column it does not have, a repeated key column, or no partitions)",
                def.name
            )));
        }
    }
    for def in &snapshot.tables {
        for fk in &def.foreign_keys {
            let parent = snapshot
                .tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(&fk.parent));
            let sound = parent.is_some_and(|p| {
                fk.columns.len() == fk.parent_columns.len()
                    && !fk.columns.is_empty()
                    && fk.columns.iter().all(|&c| c < def.schema.len())
                    && fk.parent_columns.iter().all(|&c| c < p.schema.len())
            });
            if !sound {
                return Err(crate::error::Error::Codec(format!(
                    "the catalog's table {} is malformed (its foreign key {} names a table or columns there are not)",
                    def.name, fk.name
                )));
            }
        }
    }
    if let Some(s) = snapshot
        .named_sequences
        .iter()
        .find(|s| s.increment == 0 || s.min > s.max || !owner_known(&snapshot, s))
    {
        return Err(crate::error::Error::Codec(format!(
            "the catalog's sequence {} is malformed (an increment of 0, MINVALUE above MAXVALUE, or an owning column no table has)",
            s.name
        )));
    }
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_operators::{DataType, Field, Schema};
    use weir_planner::{
        ColumnDefault, DefaultValue, ForeignKey, NamedSequence, ReferentialAction, TableDef,
    };

    fn table() -> TableDef {
        TableDef {
            name: "t".into(),
            schema: Schema::new(vec![
                Field::new("id", DataType::Int64),
                Field::new("v", DataType::Utf8),
            ]),
            primary_key: vec![0],
            indexes: vec![],
            not_null: vec![],
            partitions: 4,
            external: None,
            defaults: vec![
                ColumnDefault {
                    column: 0,
                    value: DefaultValue::Serial,
                },
                ColumnDefault {
                    column: 1,
                    value: DefaultValue::Expr("'x'".into()),
                },
            ],
            foreign_keys: vec![ForeignKey {
                name: "t_v_fkey".into(),
                columns: vec![1],
                parent: "t".into(),
                parent_columns: vec![1],
                on_delete: ReferentialAction::NoAction,
                on_update: ReferentialAction::Restrict,
            }],
            checks: vec![weir_planner::CheckConstraint {
                name: "t_id_check".into(),
                condition: "id > 0".into(),
            }],
            comments: weir_planner::Comments {
                table: Some("the t".into()),
                columns: vec![(1, "a v".into())],
            },
        }
    }

    /// A table as formats 3 and 4 wrote it (no CHECK constraints).
    #[derive(serde::Serialize)]
    struct TableV4<'a>(
        &'a str,
        &'a Schema,
        &'a [usize],
        &'a [weir_planner::IndexDef],
        &'a [usize],
        u32,
        &'a Option<weir_operators::external::ExternalSource>,
        &'a [ColumnDefault],
        &'a [ForeignKey],
    );

    fn v4_tables(tables: &[TableDef]) -> Vec<TableV4<'_>> {
        tables
            .iter()
            .map(|t| {
                TableV4(
                    &t.name,
                    &t.schema,
                    &t.primary_key,
                    &t.indexes,
                    &t.not_null,
                    t.partitions,
                    &t.external,
                    &t.defaults,
                    &t.foreign_keys,
                )
            })
            .collect()
    }

    /// `tables` as a catalog of format 3 or 4 has them: without their CHECK constraints.
    fn without_checks(tables: &[TableDef]) -> Vec<TableDef> {
        tables
            .iter()
            .cloned()
            .map(|t| TableDef {
                checks: Vec::new(),
                comments: Default::default(),
                ..t
            })
            .collect()
    }

    #[test]
    fn a_catalog_reads_back_with_its_defaults_and_foreign_keys() {
        let snapshot = CatalogSnapshot {
            version: 3,
            tables: vec![table()],
            ..Default::default()
        };
        let bytes = encode_catalog(&snapshot);
        assert_eq!(bytes.0[..2], [VERSIONED, FORMAT]);
        assert_eq!(decode_catalog(&bytes).unwrap(), snapshot);
    }

    fn sequence() -> NamedSequence {
        NamedSequence {
            name: "s".into(),
            next: 100,
            start: 1,
            increment: 50,
            min: 1,
            max: i64::MAX,
            made: 2,
            owner: None,
        }
    }

    #[test]
    fn a_catalog_reads_back_with_its_sequences_and_one_of_format_3_with_none() {
        let snapshot = CatalogSnapshot {
            version: 3,
            tables: vec![table()],
            named_sequences: vec![sequence()],
            ..Default::default()
        };
        assert_eq!(
            decode_catalog(&encode_catalog(&snapshot)).unwrap(),
            snapshot
        );
        // Format 3: the same fields but the sequences of CREATE SEQUENCE.
        #[derive(serde::Serialize)]
        struct V3<'a>(
            u64,
            Vec<TableV4<'a>>,
            &'a [weir_planner::ViewDef],
            &'a [(String, u64)],
            &'a [(String, u64)],
            &'a [weir_planner::SequenceState],
        );
        let s = &snapshot;
        let body = V3(
            s.version,
            v4_tables(&s.tables),
            &s.views,
            &s.row_counts,
            &s.next_row_ids,
            &s.sequences,
        );
        let mut bytes = vec![VERSIONED, 3];
        bytes.extend(codec::encode(&body).unwrap());
        let read = decode_catalog(&CatalogBytes(bytes)).unwrap();
        assert_eq!(read.tables, without_checks(&snapshot.tables));
        assert!(read.named_sequences.is_empty());
        // A sequence that steps by 0 is malformed.
        let mut bad = sequence();
        bad.increment = 0;
        let bytes = encode_catalog(&CatalogSnapshot {
            named_sequences: vec![bad],
            ..Default::default()
        });
        let e = decode_catalog(&bytes).unwrap_err().to_string();
        assert!(e.contains("sequence s is malformed"), "{e}");
    }

    #[test]
    fn a_sequences_owner_reads_back_and_one_of_format_4_has_none() {
        let mut owned = sequence();
        owned.owner = Some(weir_planner::SequenceOwner {
            table: "t".into(),
            column: "id".into(),
        });
        let snapshot = CatalogSnapshot {
            version: 4,
            tables: vec![table()],
            named_sequences: vec![owned],
            ..Default::default()
        };
        assert_eq!(
            decode_catalog(&encode_catalog(&snapshot)).unwrap(),
            snapshot
        );
        // Format 4: the same fields but the sequences' owners.
        #[derive(serde::Serialize)]
        struct SequenceV4<'a>(&'a str, i64, i64, i64, i64, i64, u64);
        #[derive(serde::Serialize)]
        struct V4<'a>(
            u64,
            Vec<TableV4<'a>>,
            &'a [weir_planner::ViewDef],
            &'a [(String, u64)],
            &'a [(String, u64)],
            &'a [weir_planner::SequenceState],
            Vec<SequenceV4<'a>>,
        );
        let s = &snapshot;
        let sequences = s
            .named_sequences
            .iter()
            .map(|q| SequenceV4(&q.name, q.next, q.start, q.increment, q.min, q.max, q.made))
            .collect();
        let body = V4(
            s.version,
            v4_tables(&s.tables),
            &s.views,
            &s.row_counts,
            &s.next_row_ids,
            &s.sequences,
            sequences,
        );
        let mut bytes = vec![VERSIONED, 4];
        bytes.extend(codec::encode(&body).unwrap());
        let read = decode_catalog(&CatalogBytes(bytes)).unwrap();
        assert_eq!(read.tables, without_checks(&snapshot.tables));
        assert_eq!(read.named_sequences[0].name, "s");
        assert_eq!(read.named_sequences[0].owner, None);
    }

    #[test]
    fn a_catalog_of_format_5_reads_back_without_comments() {
        let snapshot = CatalogSnapshot {
            version: 5,
            tables: vec![table()],
            named_sequences: vec![sequence()],
            ..Default::default()
        };
        // Format 5: today's fields but the tables' comments.
        #[derive(serde::Serialize)]
        struct TableV5<'a>(TableV4<'a>, &'a [weir_planner::CheckConstraint]);
        #[derive(serde::Serialize)]
        struct V5<'a>(
            u64,
            Vec<TableV5<'a>>,
            &'a [weir_planner::ViewDef],
            &'a [(String, u64)],
            &'a [(String, u64)],
            &'a [weir_planner::SequenceState],
            &'a [NamedSequence],
        );
        let s = &snapshot;
        let tables = v4_tables(&s.tables)
            .into_iter()
            .zip(&s.tables)
            .map(|(v4, t)| TableV5(v4, &t.checks))
            .collect();
        let body = V5(
            s.version,
            tables,
            &s.views,
            &s.row_counts,
            &s.next_row_ids,
            &s.sequences,
            &s.named_sequences,
        );
        let mut bytes = vec![VERSIONED, 5];
        bytes.extend(codec::encode(&body).unwrap());
        let read = decode_catalog(&CatalogBytes(bytes)).unwrap();
        let mut expected = snapshot.clone();
        expected.tables[0].comments = Default::default();
        assert_eq!(read, expected);
        assert!(!read.tables[0].checks.is_empty());
    }

    #[test]
    fn a_newer_format_is_refused_by_name_and_a_default_of_no_column_as_malformed() {
        let mut bytes = encode_catalog(&CatalogSnapshot::default());
        bytes.0[1] = FORMAT + 1;
        let e = decode_catalog(&bytes).unwrap_err().to_string();
        assert!(e.contains(&format!("format {}", FORMAT + 1)), "{e}");
        let mut bad = table();
        bad.defaults[1].column = 5;
        let bytes = encode_catalog(&CatalogSnapshot {
            tables: vec![bad],
            ..Default::default()
        });
        let e = decode_catalog(&bytes).unwrap_err().to_string();
        assert!(e.contains("malformed"), "{e}");
        // A foreign key to a table, or a column, the catalog has not.
        for (parent, column) in [("gone", 1), ("t", 7)] {
            let mut bad = table();
            bad.foreign_keys[0].parent = parent.into();
            bad.foreign_keys[0].parent_columns = vec![column];
            let bytes = encode_catalog(&CatalogSnapshot {
                tables: vec![bad],
                ..Default::default()
            });
            let e = decode_catalog(&bytes).unwrap_err().to_string();
            assert!(e.contains("foreign key t_v_fkey"), "{e}");
        }
    }
}
