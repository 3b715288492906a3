//! Run-time parameters: those the server reports at startup and `SHOW` answers, with their
//! defaults. `SET` changes a session's value (kept for `SHOW` and `current_setting()`); none
//! of them changes how weir runs a query: dates are always ISO, text always UTF8, `TIMESTAMP`
//! has no time zone.

use std::collections::BTreeMap;
use std::collections::HashMap;

use weir_runtime::Cluster;

/// The PostgreSQL version the server reports being (`server_version`): the protocol and the
/// catalog answers follow PostgreSQL 16.
pub const SERVER_VERSION: &str = "16.6";

/// The default value of every parameter `SHOW` knows.
pub const DEFAULTS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("client_encoding", "UTF8"),
    ("client_min_messages", "notice"),
    ("datestyle", "ISO, MDY"),
    ("default_transaction_isolation", "read committed"),
    ("default_transaction_read_only", "off"),
    ("extra_float_digits", "1"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("is_superuser", "on"),
    ("lc_collate", "C"),
    ("lc_ctype", "C"),
    ("lc_messages", "C"),
    ("lc_monetary", "C"),
    ("lc_numeric", "C"),
    ("lc_time", "C"),
    ("max_identifier_length", "63"),
    ("search_path", "public"),
    ("server_encoding", "UTF8"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("timezone", "UTC"),
    ("transaction_isolation", "read committed"),
    ("transaction_read_only", "off"),
];

/// The default of parameter `name` (lower-case), if it is one the server knows.
pub fn default(name: &str) -> Option<String> {
    if name == "server_version" {
        return Some(server_version());
    }
    DEFAULTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_string())
}

/// `server_version` as reported to clients: PostgreSQL's version, then weir's.
pub fn server_version() -> String {
    format!("{SERVER_VERSION} (weir {})", env!("CARGO_PKG_VERSION"))
}

/// What `version()` answers.
pub fn version_string(cluster: &Cluster) -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} (weir {}): a weir cluster of {} data nodes",
        env!("CARGO_PKG_VERSION"),
        cluster.data_nodes()
    )
}

/// A new session's parameters: the defaults, then what the client sent in its startup
/// message (`user`, `database`, `application_name`, `DateStyle`, ...), lower-cased names.
pub fn initial(startup: &HashMap<String, String>) -> BTreeMap<String, String> {
    let mut s: BTreeMap<String, String> = DEFAULTS
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    s.insert("server_version".into(), server_version());
    for (k, v) in startup {
        let k = k.to_ascii_lowercase();
        if k != "options" && k != "replication" {
            s.insert(k, v.clone());
        }
    }
    let user = s.get("user").cloned().unwrap_or_default();
    s.entry("database".into()).or_insert(user);
    s
}
