//! The layout checker behind the `layout` tests: reads a crate's source files, finds which
//! of the crate's own modules each file refers to, and finds the import cycles among files.
//!
//! It reads Rust text, not a syntax tree. Comments, string and character literals are blanked
//! out first (doc comments name paths that are not imports). Then every `use` declaration
//! (grouped, nested, multi-line, `pub use` re-exports included) and every path in code that
//! starts at `crate::`, `super::`, `self::` or at the name of a child module (`ddl::plan(..)`
//! in the module that declares `mod ddl;`) is resolved to the longest module of the crate
//! that has a file of its own: `crate::flow::Credit` is the file of `flow`,
//! `crate::network::tcp::X` the file of `network::tcp`. A `mod child;` declaration is not a
//! reference. References from a `#[cfg(test)]` inline module are kept apart
//! ([`CrateGraph::test_edges`]): nothing refers to a test module, so it closes no cycle
//! (unit tests of one expression family may call the evaluator above them), but what it
//! refers to still counts for the runtime's floors.
//!
//! A file is mapped to its module by its path under `src/`: `lib.rs` and `main.rs` are the
//! crate root, `a/mod.rs` and `a.rs` are module `a`. Reading a crate checks that every file
//! is declared by its parent module and that no `#[path]` attribute moves a module, so the
//! mapping is the compiler's.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write;
use std::path::Path;

/// A module's path inside its crate: `["network", "tcp"]`; empty for the crate root.
pub type ModPath = Vec<String>;

/// One crate's files and the references between them.
pub struct CrateGraph {
    /// The crate's name in messages: the package's folder (`runtime`), `weir` for the root
    /// package, `cli (main.rs)` for the command's binary crate.
    pub name: String,
    /// Each file's path under `src/`, with `/` separators (`actors/node.rs`).
    pub files: Vec<String>,
    /// Each file's module, by the index of `files`.
    pub modules: Vec<ModPath>,
    /// `(from, to)` file indices to the names `from` takes from `to`: the path segment after
    /// the module (`Credit` for `crate::flow::Credit`), `*` for a glob, or the module's own
    /// name when the module itself is named. Never an edge from a file to itself.
    pub edges: BTreeMap<(usize, usize), BTreeSet<String>>,
    /// The references made from `#[cfg(test)]` inline modules, as [`CrateGraph::edges`].
    pub test_edges: BTreeMap<(usize, usize), BTreeSet<String>>,
}

/// A set of files that all reach each other through references (a strongly connected
/// component of more than one file), with the cycles that show it.
pub struct Cycle {
    /// The files, by index, ascending.
    pub files: Vec<usize>,
    /// Elementary cycles through the component: for every reference inside it, the shortest
    /// cycle that takes that reference (duplicates dropped). Each starts and ends at the
    /// same file.
    pub loops: Vec<Vec<usize>>,
}

/// The package's crates read from `src`: one crate of every `.rs` file under it, except
/// that `main.rs` next to a `lib.rs` is a binary crate of its own (`{package} (main.rs)`).
pub fn read_package(package: &str, src: &Path) -> Vec<CrateGraph> {
    let mut sources = Vec::new();
    collect_sources(src, src, &mut sources);
    sources.sort();
    let has_lib = sources.iter().any(|(rel, _)| rel == "lib.rs");
    let (bin, lib): (Vec<_>, Vec<_>) = sources
        .into_iter()
        .partition(|(rel, _)| has_lib && rel == "main.rs");
    let mut crates = vec![CrateGraph::from_sources(package, &lib)];
    if !bin.is_empty() {
        crates.push(CrateGraph::from_sources(
            &format!("{package} (main.rs)"),
            &bin,
        ));
    }
    crates
}

fn collect_sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect_sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("under the root");
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((rel, text));
        }
    }
}

/// The module a file under `src/` is: `lib.rs`/`main.rs` the root, `a/mod.rs` and `a.rs`
/// module `a`.
pub fn module_of(rel: &str) -> ModPath {
    let stem = rel.strip_suffix(".rs").expect("a .rs file");
    let mut path: ModPath = stem.split('/').map(str::to_string).collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    if path.len() == 1 && (path[0] == "lib" || path[0] == "main") {
        path.clear();
    }
    path
}

impl CrateGraph {
    /// Reads a crate from `(path under src/, text)` pairs. Panics when two files are the same
    /// module, when a file is not declared by its parent, or on a `#[path]` attribute.
    pub fn from_sources(name: &str, sources: &[(String, String)]) -> CrateGraph {
        let files: Vec<String> = sources.iter().map(|(rel, _)| rel.clone()).collect();
        let modules: Vec<ModPath> = files.iter().map(|rel| module_of(rel)).collect();
        let mut file_of: BTreeMap<ModPath, usize> = BTreeMap::new();
        for (i, module) in modules.iter().enumerate() {
            if let Some(other) = file_of.insert(module.clone(), i) {
                panic!(
                    "{name}: {} and {} are the same module",
                    files[other], files[i]
                );
            }
        }
        let mut graph = CrateGraph {
            name: name.to_string(),
            files,
            modules,
            edges: BTreeMap::new(),
            test_edges: BTreeMap::new(),
        };
        let mut declared = BTreeSet::new();
        for (i, (rel, text)) in sources.iter().enumerate() {
            let tokens = tokenize(&strip(text));
            if tokens
                .windows(3)
                .any(|w| w[0] == Tok::Punct('#') && w[1] == Tok::Punct('[') && w[2].is("path"))
            {
                panic!("{name}: {rel} has a #[path] attribute, which the checker does not follow");
            }
            let scan = scan(&tokens, &graph.modules[i], &file_of);
            declared.extend(scan.declared);
            for (target, names) in scan.refs {
                let to = file_of[&target];
                if to != i {
                    graph.edges.entry((i, to)).or_default().extend(names);
                }
            }
            for (target, names) in scan.test_refs {
                let to = file_of[&target];
                if to != i {
                    graph.test_edges.entry((i, to)).or_default().extend(names);
                }
            }
        }
        for (i, module) in graph.modules.iter().enumerate() {
            if !module.is_empty() && !declared.contains(module) {
                panic!(
                    "{name}: {} is not declared by its parent module (mod {};)",
                    graph.files[i],
                    module.last().expect("not the root")
                );
            }
        }
        graph
    }

    /// The file of `module`, if it has one.
    pub fn file(&self, module: &[&str]) -> Option<usize> {
        self.modules.iter().position(|m| m.iter().eq(module.iter()))
    }

    /// Every set of files that reach each other, found as the strongly connected components
    /// (Tarjan's algorithm) of more than one file.
    pub fn cycles(&self) -> Vec<Cycle> {
        let n = self.files.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(from, to) in self.edges.keys() {
            next[from].push(to);
        }
        let mut tarjan = Tarjan {
            next: &next,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            counter: 0,
            components: Vec::new(),
        };
        for v in 0..n {
            if tarjan.index[v].is_none() {
                tarjan.visit(v);
            }
        }
        let mut components = tarjan.components;
        components.retain(|c| c.len() > 1);
        for c in &mut components {
            c.sort_unstable();
        }
        components.sort();
        components
            .into_iter()
            .map(|files| {
                let loops = self.loops_within(&files, &next);
                Cycle { files, loops }
            })
            .collect()
    }

    /// For every reference `u -> v` inside `component`, the shortest way back from `v` to
    /// `u`, as a cycle rotated to start at its smallest file; duplicates dropped.
    fn loops_within(&self, component: &[usize], next: &[Vec<usize>]) -> Vec<Vec<usize>> {
        let inside: BTreeSet<usize> = component.iter().copied().collect();
        let mut loops = BTreeSet::new();
        for &u in component {
            for &v in &next[u] {
                if !inside.contains(&v) {
                    continue;
                }
                // Breadth-first from v to u inside the component.
                let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
                let mut queue = VecDeque::from([v]);
                let mut seen = BTreeSet::from([v]);
                while let Some(w) = queue.pop_front() {
                    if w == u {
                        break;
                    }
                    for &x in &next[w] {
                        if inside.contains(&x) && seen.insert(x) {
                            came_from.insert(x, w);
                            queue.push_back(x);
                        }
                    }
                }
                let mut path = vec![u];
                while let Some(&w) = came_from.get(path.last().expect("not empty")) {
                    path.push(w);
                }
                // path is u, ..., v backwards: the cycle is u -> v -> ... -> u.
                path.reverse();
                let mut cycle = vec![u];
                cycle.extend(path);
                cycle.pop();
                let start = (0..cycle.len())
                    .min_by_key(|&k| cycle[k])
                    .expect("not empty");
                cycle.rotate_left(start);
                cycle.push(cycle[0]);
                loops.insert(cycle);
            }
        }
        loops.into_iter().collect()
    }

    /// One cycle component described for a failure message: every loop as
    /// `crate: a.rs -> b.rs -> a.rs`, then every reference inside the component with the
    /// names it takes.
    pub fn describe(&self, cycle: &Cycle) -> String {
        let mut out = String::new();
        let names: Vec<&str> = cycle
            .files
            .iter()
            .map(|&f| self.files[f].as_str())
            .collect();
        writeln!(
            out,
            "{}: {} files reach each other: {}",
            self.name,
            names.len(),
            names.join(", ")
        )
        .expect("write to a string");
        for l in &cycle.loops {
            let hops: Vec<&str> = l.iter().map(|&f| self.files[f].as_str()).collect();
            writeln!(out, "  {}: {}", self.name, hops.join(" -> ")).expect("write to a string");
        }
        writeln!(out, "  the references inside:").expect("write to a string");
        for (&(from, to), taken) in &self.edges {
            if cycle.files.contains(&from) && cycle.files.contains(&to) {
                writeln!(out, "    {}", self.describe_edge(from, to, taken))
                    .expect("write to a string");
            }
        }
        out
    }

    /// `a.rs -> b.rs (X, Y)`.
    pub fn describe_edge(&self, from: usize, to: usize, taken: &BTreeSet<String>) -> String {
        let taken: Vec<&str> = taken.iter().map(String::as_str).collect();
        format!(
            "{} -> {} ({})",
            self.files[from],
            self.files[to],
            taken.join(", ")
        )
    }
}

/// Tarjan's strongly connected components, recursive (a crate has at most a few hundred
/// files).
struct Tarjan<'a> {
    next: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in self.next[v].iter() {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index_w) if self.on_stack[w] => {
                    self.low[v] = self.low[v].min(index_w);
                }
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            loop {
                let w = self.stack.pop().expect("v is on the stack");
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// `text` with comments, string literals (plain, byte, C and raw) and character literals
/// replaced by spaces; line breaks are kept. Lifetimes and labels stay.
pub fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let n = c.len();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = String::with_capacity(text.len());
    // Blanks c[from..to], keeping line breaks.
    let blank = |out: &mut String, from: usize, to: usize| {
        for &ch in &c[from..to.min(n)] {
            out.push(if ch == '\n' { '\n' } else { ' ' });
        }
    };
    let mut i = 0;
    while i < n {
        let ch = c[i];
        let after_ident = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if ch == '/' && at(i + 1) == '/' {
            let end = (i..n).find(|&k| c[k] == '\n').unwrap_or(n);
            blank(&mut out, i, end);
            i = end;
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            let mut k = i;
            while k < n {
                if c[k] == '/' && at(k + 1) == '*' {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && at(k + 1) == '/' {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            blank(&mut out, i, k);
            i = k;
        } else if ch == '"' {
            let end = quoted_end(&c, i + 1, '"');
            let body: String = c[i + 1..end.saturating_sub(1).max(i + 1)].iter().collect();
            if names_a_function(&out) && is_path(&body) {
                // `#[serde(with = "crate::wire")]`: a path the attribute's macro will call.
                out.push(' ');
                out.push_str(&body);
                out.push(' ');
            } else {
                blank(&mut out, i, end);
            }
            i = end;
        } else if !after_ident && matches!(ch, 'r' | 'b' | 'c') && raw_or_prefixed(&c, i).is_some()
        {
            let end = raw_or_prefixed(&c, i).expect("checked");
            blank(&mut out, i, end);
            i = end;
        } else if ch == '\'' {
            // A character literal ('a', '\n', '\u{1F600}', '\'') or a lifetime / label ('a).
            if at(i + 1) == '\\' {
                let end = quoted_end(&c, i + 1, '\'');
                blank(&mut out, i, end);
                i = end;
            } else if at(i + 2) == '\'' {
                blank(&mut out, i, i + 3);
                i += 3;
            } else {
                out.push(ch);
                i += 1;
            }
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out
}

/// Whether the text before a string literal makes the string name a function, as serde's
/// `with`, `serialize_with`, `deserialize_with` and `default` attributes do.
fn names_a_function(before: &str) -> bool {
    let Some(key) = before.trim_end().strip_suffix('=') else {
        return false;
    };
    let key = key.trim_end();
    key.ends_with("with") || key.ends_with("default")
}

/// Whether `s` is a Rust path (`crate::wire::bytes`) and nothing else.
fn is_path(s: &str) -> bool {
    !s.is_empty()
        && s.split("::").all(|segment| {
            !segment.is_empty() && segment.chars().all(|ch| ch.is_alphanumeric() || ch == '_')
        })
}

/// The index just past the `close` that ends a literal whose body starts at `from`,
/// skipping backslash escapes.
fn quoted_end(c: &[char], from: usize, close: char) -> usize {
    let mut k = from;
    while k < c.len() {
        if c[k] == '\\' {
            k += 2;
        } else if c[k] == close {
            return k + 1;
        } else {
            k += 1;
        }
    }
    c.len()
}

/// If a prefixed literal starts at `i` (`r"…"`, `r#"…"#`, `b"…"`, `br"…"`, `b'x'`, `c"…"`,
/// `cr"…"`), the index just past it.
fn raw_or_prefixed(c: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let mut k = i;
    if matches!(at(k), 'b' | 'c') {
        k += 1;
        match at(k) {
            '"' => return Some(quoted_end(c, k + 1, '"')),
            '\'' if at(i) == 'b' => return Some(quoted_end(c, k + 1, '\'')),
            _ => {}
        }
    }
    if at(k) != 'r' {
        return None;
    }
    k += 1;
    let mut hashes = 0;
    while at(k) == '#' {
        hashes += 1;
        k += 1;
    }
    if at(k) != '"' {
        return None; // a raw identifier (r#type) or a plain identifier
    }
    k += 1;
    while k < c.len() {
        if c[k] == '"' && (1..=hashes).all(|h| at(k + h) == '#') {
            return Some(k + 1 + hashes);
        }
        k += 1;
    }
    Some(c.len())
}

/// A token of stripped Rust text.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// An identifier or keyword (raw identifiers without their `r#`).
    Ident(String),
    /// A number, whatever its form.
    Number,
    /// `::`.
    PathSep,
    /// Any other character.
    Punct(char),
}

impl Tok {
    fn is(&self, word: &str) -> bool {
        matches!(self, Tok::Ident(s) if s == word)
    }
}

fn tokenize(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == 'r'
            && c.get(i + 1) == Some(&'#')
            && c.get(i + 2).is_some_and(|&x| ident_char(x))
        {
            i += 2; // r#ident: the identifier follows
        } else if ch.is_ascii_digit() {
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            tokens.push(Tok::Number);
        } else if ident_char(ch) {
            let start = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            tokens.push(Tok::Ident(c[start..i].iter().collect()));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            tokens.push(Tok::PathSep);
            i += 2;
        } else {
            tokens.push(Tok::Punct(ch));
            i += 1;
        }
    }
    tokens
}

/// What one file says: the modules it declares (`mod x;`) and, per module file it refers to,
/// the names it takes.
struct Scan {
    declared: Vec<ModPath>,
    refs: BTreeMap<ModPath, BTreeSet<String>>,
    /// The references made from `#[cfg(test)]` inline modules.
    test_refs: BTreeMap<ModPath, BTreeSet<String>>,
}

/// A path as written in a `use` tree, and whether it ends in `*`.
struct UsePath {
    segments: Vec<String>,
    glob: bool,
}

/// Scans one file's tokens. `module` is the file's module; `file_of` knows every module that
/// has a file.
fn scan(tokens: &[Tok], module: &ModPath, file_of: &BTreeMap<ModPath, usize>) -> Scan {
    let mut result = Scan {
        declared: Vec::new(),
        refs: BTreeMap::new(),
        test_refs: BTreeMap::new(),
    };
    // Inline modules (`mod tests { … }`) open a scope: (module path, brace depth inside it,
    // whether it is test code).
    let mut scopes: Vec<(ModPath, usize, bool)> = vec![(module.clone(), 0, false)];
    let mut depth = 0;
    let mut i = 0;
    let ident = |k: usize| match tokens.get(k) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    while i < tokens.len() {
        let (scope, in_test) = {
            let (scope, _, test) = scopes.last().expect("the file's scope");
            (scope.clone(), *test)
        };
        let previous = i.checked_sub(1).map(|k| &tokens[k]);
        match &tokens[i] {
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                if scopes.len() > 1 && scopes.last().expect("a scope").1 == depth {
                    scopes.pop();
                }
                depth -= 1;
                i += 1;
            }
            Tok::Ident(word) if word == "mod" && ident(i + 1).is_some() => {
                let mut child = scope.clone();
                child.push(ident(i + 1).expect("checked").to_string());
                match tokens.get(i + 2) {
                    Some(Tok::Punct(';')) => result.declared.push(child),
                    Some(Tok::Punct('{')) => {
                        scopes.push((child, depth + 1, in_test || cfg_test_before(tokens, i)))
                    }
                    _ => {}
                }
                i += 2;
            }
            Tok::Ident(word)
                if word == "use"
                    && previous != Some(&Tok::PathSep)
                    && tokens.get(i + 1) != Some(&Tok::Punct('<')) =>
            {
                let mut paths = Vec::new();
                i = use_tree(tokens, i + 1, &[], &mut paths);
                for path in paths {
                    take(&mut result, &scope, in_test, &path, file_of);
                }
            }
            // `$crate::…` in a macro's body names the crate from where the macro is used,
            // not from the module that defines the macro: no reference of this file.
            Tok::Ident(word) if word == "crate" && previous == Some(&Tok::Punct('$')) => i += 1,
            Tok::Ident(_) if previous != Some(&Tok::PathSep) => {
                // A path in code: ident (:: ident)*.
                let mut segments = vec![ident(i).expect("an identifier").to_string()];
                let mut k = i + 1;
                while tokens.get(k) == Some(&Tok::PathSep) {
                    match ident(k + 1) {
                        Some(s) => segments.push(s.to_string()),
                        None => break,
                    }
                    k += 2;
                }
                // `pub(in crate::a)` names who may see an item, it takes nothing.
                let visibility = previous.is_some_and(|p| p.is("in"))
                    && i >= 2
                    && tokens[i - 2] == Tok::Punct('(');
                if segments.len() > 1 && !visibility {
                    let path = UsePath {
                        segments,
                        glob: false,
                    };
                    take(&mut result, &scope, in_test, &path, file_of);
                }
                i = k.max(i + 1);
            }
            _ => i += 1,
        }
    }
    result
}

/// Parses the use tree starting at `tokens[i]` below `prefix`, pushing every path it names;
/// returns the index after the tree.
fn use_tree(tokens: &[Tok], mut i: usize, prefix: &[String], out: &mut Vec<UsePath>) -> usize {
    let mut segments = prefix.to_vec();
    if tokens.get(i) == Some(&Tok::PathSep) {
        if prefix.is_empty() {
            segments.push("::".to_string()); // an extern crate path: `use ::std::x`
        }
        i += 1;
    }
    loop {
        match tokens.get(i) {
            Some(Tok::Ident(s)) => {
                segments.push(s.clone());
                i += 1;
                if tokens.get(i) == Some(&Tok::PathSep) {
                    i += 1;
                } else {
                    break;
                }
            }
            Some(Tok::Punct('*')) => {
                out.push(UsePath {
                    segments,
                    glob: true,
                });
                return i + 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                while i < tokens.len() && tokens[i] != Tok::Punct('}') {
                    let before = i;
                    i = use_tree(tokens, i, &segments, out);
                    if tokens.get(i) == Some(&Tok::Punct(',')) {
                        i += 1;
                    }
                    if i == before {
                        i += 1; // not a use tree: move on rather than loop
                    }
                }
                return i + 1;
            }
            _ => break,
        }
    }
    if segments.last().is_some_and(|s| s == "self") {
        segments.pop();
    }
    if tokens.get(i).is_some_and(|t| t.is("as")) {
        i += 2;
    }
    out.push(UsePath {
        segments,
        glob: false,
    });
    i
}

/// Whether the `mod` at `tokens[i]` is preceded by `#[cfg(test)]` (possibly with a visibility
/// between them).
fn cfg_test_before(tokens: &[Tok], mut i: usize) -> bool {
    // Step back over `pub`, `pub(crate)`, `pub(super)`.
    if i >= 4 && tokens[i - 1] == Tok::Punct(')') && tokens[i - 3] == Tok::Punct('(') {
        i -= 3;
    }
    if i >= 1 && tokens[i - 1].is("pub") {
        i -= 1;
    }
    let attribute = [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    i >= attribute.len() && tokens[i - attribute.len()..i] == attribute
}

/// Resolves `path`, written in module `scope` (test code when `in_test`), to the longest
/// module with a file and records the name taken. Paths into other crates and names that are
/// not modules are dropped.
fn take(
    result: &mut Scan,
    scope: &ModPath,
    in_test: bool,
    path: &UsePath,
    file_of: &BTreeMap<ModPath, usize>,
) {
    let segments = &path.segments;
    let Some(first) = segments.first() else {
        return;
    };
    let ups = segments.iter().take_while(|s| *s == "super").count();
    let (mut full, skip): (ModPath, usize) = match first.as_str() {
        "crate" => (Vec::new(), 1),
        "self" => (scope.clone(), 1),
        "super" => {
            if ups > scope.len() {
                return; // above the crate root: not a path of this crate
            }
            (scope[..scope.len() - ups].to_vec(), ups)
        }
        _ => {
            let mut child = scope.clone();
            child.push(first.clone());
            if !file_of.contains_key(&child) {
                return; // another crate, a type, a variant, a local module without a file
            }
            (scope.clone(), 0)
        }
    };
    full.extend(segments[skip..].iter().cloned());
    let len = (0..=full.len())
        .rev()
        .find(|&len| file_of.contains_key(&full[..len]))
        .expect("the crate root has a file");
    let name = if len < full.len() {
        full[len].clone()
    } else if path.glob {
        "*".to_string()
    } else {
        segments.last().expect("not empty").clone()
    };
    let refs = if in_test {
        &mut result.test_refs
    } else {
        &mut result.refs
    };
    refs.entry(full[..len].to_vec()).or_default().insert(name);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(sources: &[(&str, &str)]) -> CrateGraph {
        let sources: Vec<(String, String)> = sources
            .iter()
            .map(|(rel, text)| (rel.to_string(), text.to_string()))
            .collect();
        CrateGraph::from_sources("test", &sources)
    }

    /// Every edge as `from -> to (names)`, sorted.
    fn edges(g: &CrateGraph) -> Vec<String> {
        described(g, &g.edges)
    }

    /// `edges` as `from -> to (names)`, sorted.
    fn described(
        g: &CrateGraph,
        edges: &BTreeMap<(usize, usize), BTreeSet<String>>,
    ) -> Vec<String> {
        let mut edges: Vec<String> = edges
            .iter()
            .map(|(&(from, to), names)| g.describe_edge(from, to, names))
            .collect();
        edges.sort();
        edges
    }

    #[test]
    fn two_files_that_use_each_other_are_one_cycle() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;"),
            ("a.rs", "use crate::b::B;\npub struct A;"),
            (
                "b.rs",
                "pub struct B;\nfn f() -> crate::a::A { crate::a::A }",
            ),
            ("c.rs", "use crate::a::A;"),
        ]);
        let cycles = g.cycles();
        assert_eq!(cycles.len(), 1);
        let files: Vec<&str> = cycles[0]
            .files
            .iter()
            .map(|&f| g.files[f].as_str())
            .collect();
        assert_eq!(files, ["a.rs", "b.rs"]);
        let text = g.describe(&cycles[0]);
        assert!(text.contains("test: a.rs -> b.rs -> a.rs"), "{text}");
        assert!(text.contains("a.rs -> b.rs (B)"), "{text}");
        assert!(text.contains("b.rs -> a.rs (A)"), "{text}");
    }

    #[test]
    fn a_three_file_loop_is_listed_from_its_first_file() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b; mod c;"),
            ("a.rs", "use crate::b::B;"),
            ("b.rs", "use crate::c::C;"),
            ("c.rs", "use crate::a::A;"),
        ]);
        let cycles = g.cycles();
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].loops, [vec![1, 2, 3, 1]]);
    }

    #[test]
    fn a_mod_declaration_is_no_edge_but_a_re_export_is() {
        let g = graph(&[
            ("lib.rs", "pub mod net;"),
            ("net/mod.rs", "pub mod tcp;\nmod sim;\npub use sim::Sim;"),
            ("net/tcp.rs", "use super::Carrier;"),
            ("net/sim.rs", "pub struct Sim;"),
        ]);
        assert_eq!(
            edges(&g),
            [
                "net/mod.rs -> net/sim.rs (Sim)",
                "net/tcp.rs -> net/mod.rs (Carrier)"
            ]
        );
        assert!(g.cycles().is_empty());
    }

    #[test]
    fn paths_in_comments_and_strings_are_ignored() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "//! Works with [`crate::b::B`].\n\
                 /* use crate::b::B; /* nested crate::b::X */ still a comment crate::b::Y */\n\
                 /// See crate::b::B.\n\
                 fn f() -> &'static str { let _c = '\"'; let _l = '{'; \"crate::b::B\" }\n\
                 const R: &str = r#\"use crate::b::B; \"#;\n\
                 const S: &[u8] = b\"crate::b::B\";\n\
                 fn g<'a>(x: &'a str) -> &'a str { x } // crate::b::B",
            ),
            ("b.rs", "pub struct B;"),
        ]);
        assert_eq!(edges(&g), Vec::<String>::new());
    }

    #[test]
    fn a_serde_with_attribute_is_a_reference() {
        let g = graph(&[
            ("lib.rs", "mod wire; mod column;"),
            ("wire.rs", "pub mod bytes {}"),
            (
                "column.rs",
                "struct C {\n    #[serde(with = \"crate::wire::bytes\")]\n    v: Vec<u8>,\n    \
                 #[serde(rename = \"crate::wire\")]\n    w: u8,\n}",
            ),
        ]);
        assert_eq!(edges(&g), ["column.rs -> wire.rs (bytes)"]);
    }

    #[test]
    fn a_grouped_use_yields_every_module_in_it() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b; mod user;"),
            ("a.rs", ""),
            ("b/mod.rs", "pub mod c; pub mod d;"),
            ("b/c.rs", ""),
            ("b/d.rs", ""),
            (
                "user.rs",
                "use crate::{\n    a,\n    b::{c, d::{self as dee, D}},\n    b::X as Y,\n};",
            ),
        ]);
        assert_eq!(
            edges(&g),
            [
                "user.rs -> a.rs (a)",
                "user.rs -> b/c.rs (c)",
                "user.rs -> b/d.rs (D, d)",
                "user.rs -> b/mod.rs (X)",
            ]
        );
    }

    #[test]
    fn paths_resolve_to_the_longest_module_with_a_file() {
        let g = graph(&[
            ("lib.rs", "mod flow; mod network; mod user;"),
            ("flow.rs", ""),
            ("network/mod.rs", "pub mod tcp;"),
            ("network/tcp.rs", "pub mod inline { pub struct X; }"),
            (
                "user.rs",
                "fn f() { crate::flow::Credit::new(); let _ = crate::network::tcp::inline::X; }",
            ),
        ]);
        assert_eq!(
            edges(&g),
            [
                "user.rs -> flow.rs (Credit)",
                "user.rs -> network/tcp.rs (inline)"
            ]
        );
    }

    #[test]
    fn super_resolves_from_the_files_module_and_from_its_tests() {
        let g = graph(&[
            ("lib.rs", "mod a; mod top;"),
            ("top.rs", ""),
            ("a/mod.rs", "mod b; mod sibling;"),
            ("a/sibling.rs", ""),
            (
                "a/b.rs",
                "use super::sibling::S;\n\
                 fn f() { super::super::top::g() }\n\
                 #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::Parent;\n}",
            ),
        ]);
        assert_eq!(
            edges(&g),
            ["a/b.rs -> a/sibling.rs (S)", "a/b.rs -> top.rs (g)"]
        );
        // The tests' own references are kept apart.
        assert_eq!(
            described(&g, &g.test_edges),
            ["a/b.rs -> a/mod.rs (Parent)"]
        );
    }

    #[test]
    fn a_macro_s_crate_path_is_no_reference() {
        let g = graph(&[
            (
                "lib.rs",
                "mod rows;
pub use rows::Row;
pub struct Value;",
            ),
            (
                "rows.rs",
                "pub struct Row;
macro_rules! params { () => { $crate::Value }; }",
            ),
        ]);
        assert_eq!(edges(&g), ["lib.rs -> rows.rs (Row)"]);
    }

    #[test]
    fn a_test_module_closes_no_cycle() {
        // The evaluator calls the family; the family's tests call the evaluator.
        let g = graph(&[
            ("lib.rs", "mod eval;"),
            (
                "eval/mod.rs",
                "mod arith;\npub fn evaluate() { arith::add() }",
            ),
            (
                "eval/arith.rs",
                "pub fn add() {}\n#[cfg(test)]\npub(crate) mod tests {\n\
                 fn t() { crate::eval::evaluate() }\n\
                 mod deeper { use crate::eval::X; }\n}",
            ),
        ]);
        assert!(g.cycles().is_empty());
        assert_eq!(
            described(&g, &g.test_edges),
            ["eval/arith.rs -> eval/mod.rs (X, evaluate)"]
        );
        // Without the attribute the same module is part of the crate: a cycle.
        let g = graph(&[
            ("lib.rs", "mod eval;"),
            (
                "eval/mod.rs",
                "mod arith;\npub fn evaluate() { arith::add() }",
            ),
            (
                "eval/arith.rs",
                "pub fn add() {}\nmod tests { fn t() { crate::eval::evaluate() } }",
            ),
        ]);
        assert_eq!(g.cycles().len(), 1);
    }

    #[test]
    fn a_child_module_named_in_code_is_an_edge_and_another_crate_is_not() {
        let g = graph(&[
            (
                "lib.rs",
                "mod ddl;\nfn plan() { ddl::create(); std::mem::drop(1); weir::x(); }",
            ),
            ("ddl.rs", "pub fn create() {}"),
        ]);
        assert_eq!(edges(&g), ["lib.rs -> ddl.rs (create)"]);
    }

    #[test]
    fn module_paths_follow_the_file_names() {
        assert_eq!(module_of("lib.rs"), ModPath::new());
        assert_eq!(module_of("main.rs"), ModPath::new());
        assert_eq!(module_of("a/mod.rs"), ["a"]);
        assert_eq!(module_of("a.rs"), ["a"]);
        assert_eq!(module_of("a/b/c.rs"), ["a", "b", "c"]);
    }

    #[test]
    #[should_panic(expected = "not declared by its parent")]
    fn a_file_its_parent_does_not_declare_is_refused() {
        graph(&[("lib.rs", "mod a;"), ("a.rs", ""), ("stray.rs", "")]);
    }

    #[test]
    #[should_panic(expected = "#[path]")]
    fn a_path_attribute_is_refused() {
        graph(&[("lib.rs", "#[path = \"x.rs\"]\nmod a;"), ("a.rs", "")]);
    }
}
