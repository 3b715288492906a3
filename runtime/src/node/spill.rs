//! Where a node's operators spill: its [`SpillSpace`], in a `spill` folder of the node's data
//! directory when it has one, else in a temporary directory removed with the node.

use crate::error::Error;
use std::path::Path;
use std::sync::Arc;
use weir_operators::spill::SpillSpace;

/// Bytes a node may hold in spill files by default (16 GiB).
pub const DEFAULT_SPILL_QUOTA: u64 = 16 << 30;

/// The spill space of node `name` holding at most `quota` bytes (`None` for 0: the node's
/// operators fail when refused memory, as without spilling): in `node_dir/spill` when the node
/// has a directory (spill files a crash left there are removed), else in a temporary one.
pub fn open_spill(
    name: &str,
    node_dir: Option<&Path>,
    quota: u64,
) -> Result<Option<Arc<SpillSpace>>, Error> {
    if quota == 0 {
        return Ok(None);
    }
    let space = match node_dir {
        Some(dir) => SpillSpace::new(name, dir.join("spill"), quota),
        None => SpillSpace::temporary(name, quota),
    };
    space.map(Some).map_err(|e| Error::Disk {
        node: name.to_string(),
        message: e.to_string(),
    })
}
