//! The catalog's wire form: a planner's [`CatalogSnapshot`] encoded as [`CatalogBytes`] for the
//! messages and logs that carry it, and decoded with its invariants checked (a catalog names
//! only columns its tables have), so that no node trusts a catalog it was sent.

use crate::error::Result;
use crate::wire::codec;
use crate::wire::messages::CatalogBytes;
use weir_planner::CatalogSnapshot;

/// The wire form of catalog `snapshot`.
pub fn encode_catalog(snapshot: &CatalogSnapshot) -> CatalogBytes {
    CatalogBytes(codec::encode(snapshot).unwrap_or_else(|e| {
        // Only a catalog beyond the codec's size limit gets here; its receivers refuse the
        // empty form as they would any catalog that does not decode.
        tracing::error!("cannot encode the catalog: {e}");
        Vec::new()
    }))
}

/// The catalog snapshot `bytes` encode, checked: every table's key, indexed and NOT NULL
/// columns are its columns, the key's distinct, and it has partitions (the planner indexes
/// a table's columns by these).
pub fn decode_catalog(bytes: &CatalogBytes) -> Result<CatalogSnapshot> {
    let snapshot: CatalogSnapshot = codec::decode(&bytes.0)?;
    for def in &snapshot.tables {
        let columns = def.schema.len();
        let named = def
            .primary_key
            .iter()
            .chain(def.indexes.iter().map(|i| &i.column))
            .chain(&def.not_null);
        let mut key = def.primary_key.clone();
        key.sort_unstable();
        if named.into_iter().any(|&c| c >= columns)
            || key.windows(2).any(|w| w[0] == w[1])
            || def.partitions == 0
        {
            return Err(crate::error::Error::Codec(format!(
                "the catalog's table {} is malformed (a key, index or NOT NULL column it does not have, a repeated key column, or no partitions)",
                def.name
            )));
        }
    }
    Ok(snapshot)
}
