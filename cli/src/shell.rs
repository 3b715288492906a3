//! `weir shell`: an interactive session on one cluster, in the manner of the sqlite3 shell.
//!
//! Statements may span lines and run when a line ends one with `;`. Lines starting with `.`
//! (at the start of a statement) are dot-commands; `.help` lists them. An error is printed
//! and the session goes on. On a terminal, lines are edited with rustyline and kept in
//! `~/.weir_history`; when standard input is not a terminal (a piped script) lines are read
//! as they come, without prompts, and the command exits with status 1 if any statement
//! failed.
//!
//! `.explain` with a statement prints that statement's plan; `.explain` alone makes the
//! next statement print its plan instead of running.

use crate::script;
use crate::session::{Mode, Session};
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

const HELP: &str = "\
.tables               list the tables
.schema [TABLE]       the CREATE statements of every table, or of TABLE
.mode table|json|csv  how answers are printed
.timer on|off         print each statement's run time
.read FILE            run the statements of FILE
.stats                messages of the last query and the cluster's figures
.explain [SQL]        print the plan of SQL; alone, the next statement prints its plan instead of running
.help                 this text
.quit                 leave (also .exit, or end of input)
Statements end with ';' and may span lines.";

/// What the loop does after a line.
enum Next {
    Go,
    Quit,
}

/// The shell's state: the session and what the dot-commands set.
struct Shell {
    session: Session,
    explain_next: bool,
    errors: usize,
}

/// Runs the shell on `session` until `.quit` or the end of input. Returns the number of
/// statements and commands that failed.
pub fn run(session: Session) -> usize {
    let mut shell = Shell {
        session,
        explain_next: false,
        errors: 0,
    };
    if std::io::stdin().is_terminal() {
        shell.interactive();
    } else {
        shell.piped();
    }
    shell.errors
}

fn history_file() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".weir_history"))
}

impl Shell {
    fn interactive(&mut self) {
        let mut editor = match rustyline::DefaultEditor::new() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("error: no line editor ({e}); reading lines as they come");
                return self.piped();
            }
        };
        let history = history_file();
        if let Some(h) = &history {
            let _ = editor.load_history(h);
        }
        println!("weir shell: statements end with ';', .help for commands, .quit to leave");
        let mut buffer = String::new();
        loop {
            let prompt = if buffer.is_empty() {
                "weir> "
            } else {
                "  ...> "
            };
            match editor.readline(prompt) {
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    if let Next::Quit = self.line(&mut buffer, &line) {
                        break;
                    }
                }
                // Ctrl-C drops the statement being typed.
                Err(rustyline::error::ReadlineError::Interrupted) => buffer.clear(),
                Err(rustyline::error::ReadlineError::Eof) => break,
                Err(e) => {
                    eprintln!("error: {e}");
                    break;
                }
            }
        }
        self.rest(&buffer);
        if let Some(h) = &history {
            let _ = editor.save_history(h);
        }
    }

    fn piped(&mut self) {
        let mut buffer = String::new();
        for line in std::io::stdin().lock().lines() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("error: reading standard input: {e}");
                    self.errors += 1;
                    break;
                }
            };
            if let Next::Quit = self.line(&mut buffer, &line) {
                return;
            }
        }
        self.rest(&buffer);
    }

    /// A statement left without its `;` at the end of input runs too.
    fn rest(&mut self, buffer: &str) {
        if !buffer.trim().is_empty() {
            self.sql(buffer);
        }
    }

    fn line(&mut self, buffer: &mut String, line: &str) -> Next {
        if buffer.trim().is_empty() && line.trim_start().starts_with('.') {
            buffer.clear();
            return self.dot(line.trim());
        }
        buffer.push_str(line);
        buffer.push('\n');
        if script::is_complete(buffer) {
            let text = std::mem::take(buffer);
            self.sql(&text);
        }
        Next::Go
    }

    fn fail(&mut self, message: impl std::fmt::Display) {
        eprintln!("error: {message}");
        self.errors += 1;
    }

    /// Runs every statement of `text`, going on after errors.
    fn sql(&mut self, text: &str) {
        let stmts = match script::split_statements(text) {
            Ok(s) => s,
            Err(e) => return self.fail(e),
        };
        for stmt in stmts {
            if self.explain_next {
                self.explain_next = false;
                self.explain(&stmt);
                continue;
            }
            if let Err(e) = self.session.run(&stmt, &[]) {
                self.fail(e);
            }
        }
    }

    fn explain(&mut self, stmt: &str) {
        match self.session.cluster.explain(stmt, &[]) {
            Ok(plan) => println!("{plan}"),
            Err(e) => self.fail(e),
        }
    }

    fn dot(&mut self, command: &str) -> Next {
        let (name, arg) = match command.split_once(char::is_whitespace) {
            Some((n, a)) => (n, a.trim()),
            None => (command, ""),
        };
        match name {
            ".quit" | ".exit" | ".q" => return Next::Quit,
            ".help" => println!("{HELP}"),
            ".tables" => {
                let mut names: Vec<String> = self
                    .session
                    .cluster
                    .tables()
                    .into_iter()
                    .map(|t| t.name)
                    .collect();
                names.sort_by_key(|n| n.to_lowercase());
                for n in names {
                    println!("{n}");
                }
            }
            ".schema" => self.schema(arg),
            ".mode" => match arg {
                "table" => self.session.mode = Mode::Table,
                "json" => self.session.mode = Mode::Json,
                "csv" => self.session.mode = Mode::Csv,
                other => self.fail(format!(".mode takes table, json or csv, not '{other}'")),
            },
            ".timer" => match arg {
                "on" => self.session.timer = true,
                "off" => self.session.timer = false,
                other => self.fail(format!(".timer takes on or off, not '{other}'")),
            },
            ".read" if !arg.is_empty() => match std::fs::read_to_string(arg) {
                Ok(text) => self.sql(&text),
                Err(e) => self.fail(format!("{arg}: {e}")),
            },
            ".stats" => {
                if let Some(m) = &self.session.last_stats {
                    println!("last query:");
                    print!("{}", crate::format::stats_text(m));
                }
                let s = self.session.cluster.stats();
                println!(
                    "cluster: {} messages ({} bytes); plan cache {} hits / {} misses",
                    s.messages.total, s.messages.bytes, s.plan_cache_hits, s.plan_cache_misses
                );
            }
            ".explain" if arg.is_empty() => self.explain_next = true,
            ".explain" => {
                let stmt = arg.trim_end().trim_end_matches(';');
                self.explain(stmt);
            }
            _ => self.fail(format!("unknown command '{command}' (.help lists them)")),
        }
        Next::Go
    }

    fn schema(&mut self, table: &str) {
        let mut tables = self.session.cluster.tables();
        tables.sort_by_key(|t| t.name.to_lowercase());
        if !table.is_empty() {
            tables.retain(|t| t.name.eq_ignore_ascii_case(table));
            if tables.is_empty() {
                return self.fail(format!("no table named '{table}'"));
            }
        }
        let all = self.session.cluster.tables();
        for t in parents_first(tables) {
            println!("{}", create_statements(&t, &all));
        }
    }
}

/// `tables` (in name order) reordered so that a table comes after the tables its foreign
/// keys reference, as its `CREATE TABLE` must (keys reference only tables made before
/// them, or their own, so there are no cycles).
fn parents_first(mut tables: Vec<weir::planner::TableDef>) -> Vec<weir::planner::TableDef> {
    let mut out: Vec<weir::planner::TableDef> = Vec::with_capacity(tables.len());
    while !tables.is_empty() {
        let ready = |t: &weir::planner::TableDef| {
            t.foreign_keys.iter().all(|fk| {
                fk.parent.eq_ignore_ascii_case(&t.name)
                    || !tables
                        .iter()
                        .any(|o| o.name.eq_ignore_ascii_case(&fk.parent))
            })
        };
        // A table whose parents are all out (or, were the catalog to hold a cycle, the first).
        let next = tables.iter().position(ready).unwrap_or(0);
        out.push(tables.remove(next));
    }
    out
}

/// The statements that make table `t` again: its `CREATE TABLE` (columns with their types,
/// `NOT NULL`, defaults, `SERIAL` and identity columns, the primary key, unique constraints,
/// foreign keys and `CHECK` constraints), a `CREATE [UNIQUE] INDEX` for each other index and
/// its `COMMENT ON`s, one per line.
/// `tables` are the catalog's, which name the columns the foreign keys reference.
fn create_statements(t: &weir::planner::TableDef, tables: &[weir::planner::TableDef]) -> String {
    use weir::planner::{DefaultValue, ReferentialAction};
    let f = &t.schema.fields;
    let mut cols: Vec<String> = f
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let generated = t.sequence_columns().any(|s| s == i);
            let nn = if t.not_null.contains(&i) && !t.primary_key.contains(&i) && !generated {
                " NOT NULL"
            } else {
                ""
            };
            match t.default_of(i) {
                Some(DefaultValue::Serial) => format!("{} BIGSERIAL", c.name),
                Some(DefaultValue::Identity { always }) => format!(
                    "{} {} GENERATED {} AS IDENTITY",
                    c.name,
                    c.data_type,
                    if *always { "ALWAYS" } else { "BY DEFAULT" }
                ),
                Some(DefaultValue::Expr(e)) => {
                    format!("{} {}{nn} DEFAULT {e}", c.name, c.data_type)
                }
                None => format!("{} {}{nn}", c.name, c.data_type),
            }
        })
        .collect();
    let names = |columns: &[usize]| -> String {
        let names: Vec<&str> = columns.iter().map(|&c| f[c].name.as_str()).collect();
        names.join(", ")
    };
    if !t.primary_key.is_empty() {
        cols.push(format!("PRIMARY KEY ({})", names(&t.primary_key)));
    }
    // A unique index is a constraint of the table (a foreign key of the table itself may
    // reference it), but one on the primary key's columns, which the constraint would not make.
    let (inline, after): (Vec<_>, Vec<_>) = t
        .indexes
        .iter()
        .partition(|i| i.unique && i.columns() != t.primary_key);
    for i in inline {
        cols.push(format!(
            "CONSTRAINT {} UNIQUE ({})",
            i.name,
            names(&i.columns())
        ));
    }
    for fk in &t.foreign_keys {
        let parent = tables
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(&fk.parent))
            .unwrap_or(t);
        let referenced: Vec<&str> = fk
            .parent_columns
            .iter()
            .map(|&c| parent.schema.fields[c].name.as_str())
            .collect();
        let mut key = format!(
            "CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({})",
            fk.name,
            names(&fk.columns),
            fk.parent,
            referenced.join(", ")
        );
        for (on, action) in [("DELETE", fk.on_delete), ("UPDATE", fk.on_update)] {
            if action != ReferentialAction::NoAction {
                key.push_str(&format!(" ON {on} {}", action.sql()));
            }
        }
        cols.push(key);
    }
    for check in &t.checks {
        cols.push(format!(
            "CONSTRAINT {} CHECK ({})",
            check.name, check.condition
        ));
    }
    let mut out = vec![format!("CREATE TABLE {} ({});", t.name, cols.join(", "))];
    for i in after {
        let columns: Vec<&str> = i
            .columns()
            .into_iter()
            .map(|c| f[c].name.as_str())
            .collect();
        out.push(format!(
            "CREATE {}INDEX {} ON {}({});",
            if i.unique { "UNIQUE " } else { "" },
            i.name,
            t.name,
            columns.join(", ")
        ));
    }
    let text = |s: &str| format!("'{}'", s.replace('\'', "''"));
    if let Some(comment) = &t.comments.table {
        out.push(format!("COMMENT ON TABLE {} IS {};", t.name, text(comment)));
    }
    for (c, comment) in &t.comments.columns {
        out.push(format!(
            "COMMENT ON COLUMN {}.{} IS {};",
            t.name,
            f[*c].name,
            text(comment)
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::{create_statements, parents_first};
    use weir::Cluster;

    #[test]
    fn schema_statements_make_the_same_table_again() {
        let c = Cluster::builder().nodes(1).partitions(4).build().unwrap();
        c.execute(
            "CREATE TABLE t (id SERIAL PRIMARY KEY, n BIGINT GENERATED ALWAYS AS IDENTITY, \
             code VARCHAR NOT NULL DEFAULT 'x', price DECIMAL(12,2) DEFAULT 1.5, day DATE)",
        )
        .unwrap();
        c.execute("CREATE UNIQUE INDEX t_code ON t (code, day)")
            .unwrap();
        c.execute("CREATE INDEX t_day ON t (day)").unwrap();
        c.execute("ALTER TABLE t ADD CONSTRAINT cheap CHECK (price < 100 OR code <> 'x')")
            .unwrap();
        c.execute("COMMENT ON TABLE t IS 'it''s t'").unwrap();
        c.execute("COMMENT ON COLUMN t.day IS 'the day'").unwrap();
        let before = c.tables().remove(0);
        assert_eq!(before.checks.len(), 1);
        let text = create_statements(&before, &c.tables());
        c.execute("DROP TABLE t").unwrap();
        for statement in text.lines() {
            c.execute(statement).unwrap();
        }
        assert_eq!(c.tables().remove(0), before, "{text}");
        c.shutdown();
    }

    #[test]
    fn schema_statements_make_foreign_keys_again_parents_first() {
        let c = Cluster::builder().nodes(1).partitions(4).build().unwrap();
        // `a_child` sorts before its parent; `z_parent` references itself through a unique
        // constraint, not its key.
        c.execute(
            "CREATE TABLE z_parent (id BIGINT PRIMARY KEY, code VARCHAR, up VARCHAR,              UNIQUE (code), FOREIGN KEY (up) REFERENCES z_parent (code))",
        )
        .unwrap();
        c.execute(
            "CREATE TABLE a_child (id BIGINT PRIMARY KEY, p BIGINT, c VARCHAR,              CONSTRAINT by_id FOREIGN KEY (p) REFERENCES z_parent ON DELETE RESTRICT,              FOREIGN KEY (c) REFERENCES z_parent (code))",
        )
        .unwrap();
        let before = c.tables();
        let mut text = String::new();
        for t in parents_first(before.clone()) {
            text.push_str(&create_statements(&t, &before));
            text.push('\n');
        }
        c.execute("DROP TABLE a_child").unwrap();
        c.execute("DROP TABLE z_parent").unwrap();
        for statement in text.lines() {
            c.execute(statement).unwrap();
        }
        assert_eq!(c.tables(), before, "{text}");
        c.shutdown();
    }
}
