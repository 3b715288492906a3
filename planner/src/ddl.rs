//! DDL and DML statements: `CREATE TABLE`, `CREATE INDEX`, `DROP TABLE` and
//! `INSERT ... VALUES`.

use crate::bind::{constant_value, map_type, unsupported, Binder};
use crate::catalog::alter::check_new_column;
use crate::catalog::{
    Catalog, ColumnDefault, DefaultValue, IndexDef, SequenceName, TableDef, ViewDef,
};
use crate::error::PlanError;
use crate::sequences;
use crate::statement::{Returning, SequenceFill, Statement};
use sqlparser::ast::{self as sql, Spanned};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Span;
use std::collections::BTreeMap;
use weir_operators::{Batch, DataType, Expr, Field, Schema, Value};

/// Whether `t` is PostgreSQL's `SERIAL`, `BIGSERIAL` or `SMALLSERIAL` (`SERIAL2/4/8`): an
/// integer column filled from its own sequence.
pub(crate) fn is_serial(t: &sql::DataType) -> bool {
    match t {
        sql::DataType::Custom(name, modifiers) if modifiers.is_empty() => {
            matches!(
                object_name(name).map(|n| n.to_ascii_uppercase()).as_deref(),
                Ok("SERIAL" | "BIGSERIAL" | "SMALLSERIAL" | "SERIAL2" | "SERIAL4" | "SERIAL8")
            )
        }
        _ => false,
    }
}

pub(crate) fn object_name(n: &sql::ObjectName) -> Result<String, PlanError> {
    match n.0.last() {
        Some(sql::ObjectNamePart::Identifier(id)) => Ok(id.value.clone()),
        _ => Err(unsupported(format!("name {n}"), n.span())),
    }
}

pub(crate) fn index_column(
    c: &sql::IndexColumn,
    schema: &Schema,
    table: &str,
) -> Result<usize, PlanError> {
    match &c.column.expr {
        sql::Expr::Identifier(id) => {
            schema
                .index_of(&id.value)
                .ok_or_else(|| PlanError::UnknownColumn {
                    name: id.value.clone(),
                    position: crate::bind::pos(id.span),
                })
        }
        other => Err(unsupported(
            format!("index on expression '{other}' of table '{table}'"),
            other.span(),
        )),
    }
}

/// The words of `actual` that are not in `template`, where `actual` is `template` with
/// clauses added: each run of added words, the runs separated by `, ` (a word-level longest
/// common subsequence). `None` when the two are equal.
fn added_words(actual: &str, template: &str) -> Option<String> {
    /// Beyond this many word pairs, the added words are reported as one run.
    const MAX_PAIRS: usize = 1 << 16;
    if actual == template {
        return None;
    }
    let a: Vec<&str> = actual.split_whitespace().collect();
    let t: Vec<&str> = template.split_whitespace().collect();
    // Common leading and trailing words are in a longest common subsequence.
    let lead = a.iter().zip(&t).take_while(|(x, y)| x == y).count();
    let trail = a[lead..]
        .iter()
        .rev()
        .zip(t[lead..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, t) = (&a[lead..a.len() - trail], &t[lead..t.len() - trail]);
    if t.is_empty() || a.len().saturating_mul(t.len()) > MAX_PAIRS {
        return Some(if a.is_empty() {
            actual.to_string()
        } else {
            a.join(" ")
        });
    }
    // lcs[i][j]: longest common subsequence of a[i..] and t[j..].
    let mut lcs = vec![vec![0usize; t.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..t.len()).rev() {
            lcs[i][j] = if a[i] == t[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut runs: Vec<Vec<&str>> = Vec::new();
    let mut in_run = false;
    while i < a.len() {
        if j < t.len() && a[i] == t[j] {
            i += 1;
            j += 1;
            in_run = false;
        } else if j < t.len() && lcs[i][j + 1] >= lcs[i + 1][j] {
            j += 1;
        } else {
            if !in_run {
                runs.push(Vec::new());
                in_run = true;
            }
            if let Some(r) = runs.last_mut() {
                r.push(a[i]);
            }
            i += 1;
        }
    }
    let added: Vec<String> = runs.iter().map(|r| r.join(" ")).collect();
    Some(if added.is_empty() {
        actual.to_string()
    } else {
        added.join(", ")
    })
}

/// The clauses of a `CREATE TABLE` beyond its name, columns, constraints and `IF NOT EXISTS`
/// (e.g. `TEMPORARY`, `ENGINE=InnoDB`, `PARTITION BY (a)`, `WITHOUT ROWID`), as written, or
/// `None`. Found by rendering the statement without the supported parts next to a plain
/// `CREATE TABLE`, so no clause the parser accepts can be silently dropped.
fn unsupported_table_clauses(ct: &sql::CreateTable) -> Option<String> {
    let plain = Parser::parse_sql(&GenericDialect {}, "CREATE TABLE t (a INT)")
        .ok()
        .and_then(|mut v| v.pop());
    let Some(sql::Statement::CreateTable(plain)) = plain else {
        return Some(ct.to_string());
    };
    let render = |c: &sql::CreateTable| {
        sql::CreateTable {
            name: plain.name.clone(),
            columns: plain.columns.clone(),
            constraints: Vec::new(),
            if_not_exists: false,
            ..c.clone()
        }
        .to_string()
    };
    added_words(&render(ct), &render(&plain))
}

/// A column-level or table-level `PRIMARY KEY` with nothing weir would ignore (index names,
/// types or options, `INCLUDE`, `DEFERRABLE`, ...). The constraint's name is allowed.
pub(crate) fn plain_primary_key(pk: &sql::PrimaryKeyConstraint) -> bool {
    pk.index_name.is_none()
        && pk.index_type.is_none()
        && pk.include.is_empty()
        && pk.index_options.is_empty()
        && pk.characteristics.is_none()
}

/// A `CHECK` constraint weir enforces: no `NO INHERIT` (no inheritance), not `NOT ENFORCED`.
fn plain_check(c: &sql::CheckConstraint) -> bool {
    !c.no_inherit && c.enforced != Some(false)
}

/// A `UNIQUE` constraint weir enforces: no index options, NULLs distinct.
pub(crate) fn plain_unique(u: &sql::UniqueConstraint) -> bool {
    u.index_name.is_none()
        && u.index_type.is_none()
        && u.include.is_empty()
        && u.index_options.is_empty()
        && u.characteristics.is_none()
        && !matches!(u.nulls_distinct, sql::NullsDistinctOption::NotDistinct)
}

/// `CREATE TABLE`. A table without a declared primary key has none: it keeps every row and
/// places rows by a hidden row id. Every clause, column option or constraint weir does not
/// enforce is an error naming it, so nothing written in the statement is silently ignored.
/// `UNIQUE` (on a column, or `UNIQUE (a, b)`) becomes a unique index.
pub(crate) fn create_table(
    ct: &sql::CreateTable,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
    partitions: u32,
) -> Result<Statement, PlanError> {
    let name = object_name(&ct.name)?;
    if let Some(q) = &ct.query {
        return create_table_as(ct, name, q, catalog, binder, partitions);
    }
    if let Some(clauses) = unsupported_table_clauses(ct) {
        return Err(unsupported(
            format!("{clauses} in CREATE TABLE"),
            ct.name.span(),
        ));
    }
    if ct.columns.is_empty() {
        return Err(PlanError::Invalid(format!("table '{name}' has no columns")));
    }
    let more_than_one_key =
        || PlanError::Invalid(format!("table '{name}' has more than one primary key"));
    let mut fields: Vec<Field> = Vec::new();
    let mut pk: Vec<usize> = Vec::new();
    // Columns declared NOT NULL, with where it was written.
    let mut not_null: Vec<(usize, Span)> = Vec::new();
    // UNIQUE constraints: their names, if given, and columns.
    let mut uniques: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    // Defaults besides NULL.
    let mut defaults: Vec<ColumnDefault> = Vec::new();
    // Foreign keys as declared, with their columns (resolved once the table's keys are).
    let mut references: Vec<(&sql::ForeignKeyConstraint, Vec<usize>)> = Vec::new();
    // CHECK constraints: their names (given, or the column's for one on a column) and
    // conditions (bound once every column is known).
    let mut check_asts: Vec<(Option<String>, Option<String>, &sql::Expr)> = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        check_new_column(&fields, &c.name.value)?;
        let serial = is_serial(&c.data_type);
        let t = if serial {
            DataType::Int64
        } else {
            map_type(&c.data_type, c.span())?
        };
        fields.push(Field::new(c.name.value.clone(), t));
        let mut add_default = |value: DefaultValue| {
            if defaults.iter().any(|d| d.column == i) {
                return Err(PlanError::Invalid(format!(
                    "column '{}' of table '{name}' has more than one default (DEFAULT, SERIAL, GENERATED ... AS IDENTITY)",
                    c.name.value
                )));
            }
            defaults.push(ColumnDefault { column: i, value });
            Ok(())
        };
        if serial {
            add_default(DefaultValue::Serial)?;
            not_null.push((i, c.name.span));
        }
        for o in &c.options {
            match &o.option {
                sql::ColumnOption::Default(e) => {
                    let params = binder.params.types.len();
                    if sequences::checked_default_sequence(e, &c.name.value, t, binder.catalog)?
                        .is_none()
                    {
                        constant_value(e, binder, t, &c.name.value)?;
                    }
                    if binder.params.types.len() != params {
                        return Err(unsupported(
                            format!("a parameter in the DEFAULT of column '{}'", c.name.value),
                            e.span(),
                        ));
                    }
                    add_default(DefaultValue::Expr(e.to_string()))?;
                }
                sql::ColumnOption::Generated {
                    generated_as:
                        generated @ (sql::GeneratedAs::Always | sql::GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } if sequence_options.as_ref().is_none_or(|o| o.is_empty()) => {
                    if t != DataType::Int64 {
                        return Err(PlanError::Invalid(format!(
                            "identity column '{}' of table '{name}' must be an integer, not {t}",
                            c.name.value
                        )));
                    }
                    add_default(DefaultValue::Identity {
                        always: matches!(generated, sql::GeneratedAs::Always),
                    })?;
                    not_null.push((i, c.name.span));
                }
                sql::ColumnOption::PrimaryKey(p) if plain_primary_key(p) => {
                    if !pk.is_empty() {
                        return Err(more_than_one_key());
                    }
                    pk = vec![i];
                }
                // Every column is nullable.
                sql::ColumnOption::Null => {}
                sql::ColumnOption::Collation(n) if crate::collation::is_byte_order(n) => {}
                sql::ColumnOption::Collation(n) => {
                    let place = format!(" on column '{}'", c.name.value);
                    return Err(crate::collation::unsupported(n, &place, c.name.span));
                }
                sql::ColumnOption::NotNull => not_null.push((i, c.name.span)),
                sql::ColumnOption::Unique(u) if plain_unique(u) && u.columns.is_empty() => {
                    uniques.push((u.name.as_ref().map(|n| n.value.clone()), vec![i]));
                }
                sql::ColumnOption::ForeignKey(fk) if fk.columns.is_empty() => {
                    references.push((fk, vec![i]));
                }
                sql::ColumnOption::Check(check) if plain_check(check) => {
                    let given = o.name.as_ref().or(check.name.as_ref());
                    check_asts.push((
                        given.map(|n| n.value.clone()),
                        Some(c.name.value.clone()),
                        &check.expr,
                    ));
                }
                _ => {
                    return Err(unsupported(
                        format!("{} on column '{}'", o.option, c.name.value),
                        c.name.span,
                    ))
                }
            }
        }
    }
    let schema = Schema::new(fields);
    for c in &ct.constraints {
        match c {
            sql::TableConstraint::PrimaryKey(p) if plain_primary_key(p) => {
                if !pk.is_empty() {
                    return Err(more_than_one_key());
                }
                for col in &p.columns {
                    let i = index_column(col, &schema, &name)?;
                    if pk.contains(&i) {
                        return Err(PlanError::Invalid(format!(
                            "column '{}' appears twice in the primary key of table '{name}'",
                            schema.fields[i].name
                        )));
                    }
                    pk.push(i);
                }
            }
            sql::TableConstraint::Unique(u) if plain_unique(u) => {
                let columns = u
                    .columns
                    .iter()
                    .map(|col| index_column(col, &schema, &name))
                    .collect::<Result<Vec<usize>, PlanError>>()?;
                if let Some(&dup) = columns
                    .iter()
                    .enumerate()
                    .find_map(|(i, c)| columns[..i].contains(c).then_some(c))
                {
                    return Err(PlanError::Invalid(format!(
                        "column '{}' appears twice in a UNIQUE constraint of table '{name}'",
                        schema.fields[dup].name
                    )));
                }
                uniques.push((u.name.as_ref().map(|n| n.value.clone()), columns));
            }
            sql::TableConstraint::ForeignKey(fk) => {
                let mut columns = Vec::with_capacity(fk.columns.len());
                for col in &fk.columns {
                    let i =
                        schema
                            .index_of(&col.value)
                            .ok_or_else(|| PlanError::UnknownColumn {
                                name: col.value.clone(),
                                position: crate::bind::pos(col.span),
                            })?;
                    if columns.contains(&i) {
                        return Err(PlanError::Invalid(format!(
                            "column '{}' appears twice in a FOREIGN KEY of table '{name}'",
                            schema.fields[i].name
                        )));
                    }
                    columns.push(i);
                }
                references.push((fk, columns));
            }
            sql::TableConstraint::Check(check) if plain_check(check) => {
                check_asts.push((
                    check.name.as_ref().map(|n| n.value.clone()),
                    None,
                    &check.expr,
                ));
            }
            _ => return Err(unsupported(format!("{c} in CREATE TABLE"), c.span())),
        }
    }
    let mut checks: Vec<crate::catalog::CheckConstraint> = Vec::with_capacity(check_asts.len());
    for (given, column, condition) in check_asts {
        let read = crate::checks::columns_read(&condition.to_string());
        let one = column.or_else(|| match read.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        });
        let constraint_name = match given {
            Some(n) => n,
            None => crate::checks::default_name(&name, one.as_deref(), &checks),
        };
        if checks
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(&constraint_name))
        {
            return Err(PlanError::Invalid(format!(
                "constraint \"{constraint_name}\" of table '{name}' is declared twice"
            )));
        }
        checks.push(crate::checks::check_constraint(
            &name,
            &schema,
            constraint_name,
            condition,
            catalog,
        )?);
    }
    let not_null: Vec<usize> = not_null
        .into_iter()
        .map(|(i, _)| i)
        .filter(|i| !pk.contains(i))
        .collect();
    // A UNIQUE constraint is a unique index (named as PostgreSQL names it), but on the
    // primary key, which is unique already.
    let mut indexes: Vec<IndexDef> = Vec::new();
    for (given, columns) in uniques {
        if columns.is_empty() || columns == pk {
            continue;
        }
        let names: Vec<&str> = columns
            .iter()
            .map(|&c| schema.fields[c].name.as_str())
            .collect();
        let index_name = given.unwrap_or_else(|| format!("{name}_{}_key", names.join("_")));
        if indexes
            .iter()
            .any(|i| i.name.eq_ignore_ascii_case(&index_name))
        {
            return Err(PlanError::IndexExists(index_name));
        }
        indexes.push(IndexDef {
            name: index_name,
            column: columns[0],
            further: columns[1..].to_vec(),
            unique: true,
        });
    }
    let new_table = crate::foreign_key::NewTable {
        name: &name,
        schema: &schema,
        primary_key: &pk,
        indexes: &indexes,
    };
    let mut foreign_keys = Vec::with_capacity(references.len());
    for (fk, columns) in references {
        let parent = object_name(&fk.foreign_table)?;
        let key =
            crate::foreign_key::resolve(fk, parent, columns, &new_table, catalog, &foreign_keys)?;
        foreign_keys.push(key);
    }
    // Only now, so that IF NOT EXISTS does not hide an unsupported clause.
    if let Some(existing) = catalog.table(&name) {
        if ct.if_not_exists {
            return Ok(Statement::CreateTable(existing.clone()));
        }
        return Err(PlanError::TableExists(name));
    }
    Ok(Statement::CreateTable(TableDef {
        name,
        schema,
        primary_key: pk,
        indexes,
        not_null,
        partitions: partitions.max(1),
        external: None,
        defaults,
        foreign_keys,
        checks,
        comments: Default::default(),
    }))
}

/// `CREATE [UNIQUE] INDEX name ON table(column, ...)`.
pub(crate) fn create_index(
    ci: &sql::CreateIndex,
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let tname = object_name(&ci.table_name)?;
    let t = catalog
        .table(&tname)
        .ok_or_else(|| PlanError::UnknownTable(tname.clone()))?;
    t.refuse_external("CREATE INDEX")?;
    if ci.predicate.is_some() {
        return Err(unsupported("partial indexes", ci.table_name.span()));
    }
    let columns = ci
        .columns
        .iter()
        .map(|c| index_column(c, &t.schema, &t.name))
        .collect::<Result<Vec<usize>, PlanError>>()?;
    let Some((&column, further)) = columns.split_first() else {
        return Err(PlanError::Invalid(format!(
            "an index needs a column{}",
            crate::bind::at(ci.table_name.span())
        )));
    };
    if let Some(c) = further
        .iter()
        .enumerate()
        .find_map(|(i, c)| columns[..=i].contains(c).then_some(*c))
    {
        return Err(PlanError::Invalid(format!(
            "column '{}' appears twice in the index{}",
            t.schema.fields[c].name,
            crate::bind::at(ci.table_name.span())
        )));
    }
    let name = match &ci.name {
        Some(n) => object_name(n)?,
        None => {
            let cols: Vec<&str> = columns
                .iter()
                .map(|&c| t.schema.fields[c].name.as_str())
                .collect();
            format!("{}_{}_idx", t.name, cols.join("_"))
        }
    };
    let index = IndexDef {
        name,
        column,
        further: further.to_vec(),
        unique: ci.unique,
    };
    if let Some(existing) = t
        .indexes
        .iter()
        .find(|i| i.name.eq_ignore_ascii_case(&index.name))
    {
        if !(ci.if_not_exists && existing.columns() == columns && existing.unique == ci.unique) {
            return Err(PlanError::IndexExists(index.name));
        }
        return Ok(Statement::CreateIndex {
            table: t.name.clone(),
            index: existing.clone(),
        });
    }
    Ok(Statement::CreateIndex {
        table: t.name.clone(),
        index,
    })
}

/// The first clause of an `INSERT` that weir would otherwise ignore, named as written.
/// Conflict clauses (`REPLACE INTO`, `INSERT OR REPLACE`, `INSERT OR IGNORE`,
/// `INSERT IGNORE`, `ON CONFLICT`, `ON DUPLICATE KEY UPDATE`) are refused rather than run as
/// a plain INSERT: a duplicate key fails the statement instead.
fn unsupported_insert_clause(ins: &sql::Insert) -> Option<String> {
    if ins.replace_into {
        return Some("REPLACE INTO".into());
    }
    if let Some(or) = &ins.or {
        return Some(format!("INSERT {or}"));
    }
    if ins.ignore {
        return Some("INSERT IGNORE".into());
    }
    if let Some(on) = &ins.on {
        match on {
            // DO UPDATE: see `crate::upsert`.
            sql::OnInsert::OnConflict(_) => {}
            sql::OnInsert::DuplicateKeyUpdate(_) => return Some("ON DUPLICATE KEY UPDATE".into()),
            other => return Some(other.to_string()),
        }
    }
    if ins.output.is_some() {
        return Some("OUTPUT".into());
    }
    if ins.overwrite {
        return Some("INSERT OVERWRITE".into());
    }
    if ins.partitioned.is_some() || !ins.after_columns.is_empty() {
        return Some("INSERT ... PARTITION".into());
    }
    if ins.by_name {
        return Some("INSERT ... BY NAME".into());
    }
    if !ins.assignments.is_empty() {
        return Some("INSERT ... SET".into());
    }
    if let Some(o) = &ins.overriding {
        return Some(o.to_string());
    }
    if let Some(p) = &ins.priority {
        return Some(format!("INSERT {p}"));
    }
    if ins.insert_alias.is_some() {
        return Some("a row alias after VALUES".into());
    }
    if ins.settings.is_some() {
        return Some("INSERT ... SETTINGS".into());
    }
    if ins.format_clause.is_some() {
        return Some("INSERT ... FORMAT".into());
    }
    if ins.multi_table_insert_type.is_some()
        || !ins.multi_table_into_clauses.is_empty()
        || !ins.multi_table_when_clauses.is_empty()
        || ins.multi_table_else_clause.is_some()
    {
        return Some("multi-table INSERT".into());
    }
    // Anything else the parser accepts (a clause added in a later sqlparser): render the
    // statement without the supported parts next to a plain INSERT.
    let plain = Parser::parse_sql(&GenericDialect {}, "INSERT INTO t VALUES (1)")
        .ok()
        .and_then(|mut v| v.pop());
    let Some(sql::Statement::Insert(plain)) = plain else {
        return Some(ins.to_string());
    };
    let render = |i: &sql::Insert| {
        sql::Insert {
            optimizer_hints: Vec::new(),
            into: true,
            table: plain.table.clone(),
            table_alias: None,
            columns: Vec::new(),
            has_table_keyword: false,
            source: plain.source.clone(),
            returning: None,
            on: None,
            ..i.clone()
        }
        .to_string()
    };
    added_words(&render(ins), &render(&plain))
}

/// Whether `e` is the keyword `DEFAULT` in a VALUES row.
fn is_default(e: &sql::Expr) -> bool {
    match e {
        sql::Expr::Identifier(id) => {
            id.quote_style.is_none() && id.value.eq_ignore_ascii_case("DEFAULT")
        }
        _ => false,
    }
}

/// What an INSERT or a COPY puts in a column of a row that gives it no value (or
/// `DEFAULT`).
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnFill {
    /// NULL (the column has no default).
    Null,
    /// The value of the column's `DEFAULT` expression, evaluated once for the statement.
    Value(Value),
    /// The next value of a sequence, handed out when the statement runs: the column's own
    /// (`None`), or the one its `DEFAULT nextval('name')` names.
    Sequence(Option<SequenceName>),
}

/// The fillers of `t`'s columns, each worked out when first needed.
struct Fillers<'t> {
    table: &'t TableDef,
    known: Vec<Option<ColumnFill>>,
}

impl<'t> Fillers<'t> {
    fn new(table: &'t TableDef) -> Self {
        Fillers {
            table,
            known: vec![None; table.schema.len()],
        }
    }

    /// The filler of column `c`.
    fn of(&mut self, c: usize, binder: &mut Binder<'_>) -> Result<ColumnFill, PlanError> {
        if let Some(f) = &self.known[c] {
            return Ok(f.clone());
        }
        let field = &self.table.schema.fields[c];
        let filler = match self.table.default_of(c) {
            None => ColumnFill::Null,
            Some(DefaultValue::Serial | DefaultValue::Identity { .. }) => {
                ColumnFill::Sequence(None)
            }
            Some(DefaultValue::Expr(text)) => {
                let e = Parser::new(&GenericDialect {})
                    .try_with_sql(text)
                    .and_then(|mut p| p.parse_expr())
                    .map_err(|e| {
                        PlanError::Invalid(format!(
                            "the DEFAULT of column '{}' of table '{}' ({text}) does not parse: {e}",
                            field.name, self.table.name
                        ))
                    })?;
                match sequences::checked_default_sequence(
                    &e,
                    &field.name,
                    field.data_type,
                    binder.catalog,
                )? {
                    Some(sequence) => ColumnFill::Sequence(Some(sequence)),
                    None => {
                        ColumnFill::Value(constant_value(&e, binder, field.data_type, &field.name)?)
                    }
                }
            }
        };
        self.known[c] = Some(filler.clone());
        Ok(filler)
    }
}

/// What column `column` of `table` takes in a row that gives it no value: NULL, the value of
/// its `DEFAULT` (evaluated now), or the next values of a sequence. For writes that fill
/// the columns they were not given outside an INSERT (a COPY with a column list).
pub fn column_fill(
    table: &TableDef,
    column: usize,
    catalog: &Catalog,
) -> Result<ColumnFill, PlanError> {
    let mut binder = Binder::new(crate::bind::Params::from_tokens(&[], &[])?, catalog);
    Fillers::new(table).of(column, &mut binder)
}

/// The error of an INSERT that gives a value to `GENERATED ALWAYS AS IDENTITY` column `c`.
fn always_generated(t: &TableDef, c: usize) -> PlanError {
    PlanError::Invalid(format!(
        "column '{}' of table '{}' is GENERATED ALWAYS AS IDENTITY: an INSERT cannot give it a value (leave it out, or write DEFAULT)",
        t.schema.fields[c].name, t.name
    ))
}

/// Whether `c` is a `GENERATED ALWAYS` column of `t`.
fn is_always(t: &TableDef, c: usize) -> bool {
    matches!(
        t.default_of(c),
        Some(DefaultValue::Identity { always: true })
    )
}

/// `INSERT INTO t [(cols)] VALUES (...), ... [RETURNING ...]` and `INSERT INTO t DEFAULT
/// VALUES`. Columns may be listed in any order; omitted columns, and `DEFAULT` in a row,
/// take the column's default (NULL, a `DEFAULT` expression's value, or the next values of
/// a `SERIAL` or identity column's sequence, handed out when the statement runs). The rows
/// are only evaluated and type-checked here: the storage refuses a NULL or duplicate
/// primary key, for the whole statement.
pub(crate) fn insert(
    ins: &sql::Insert,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Statement, PlanError> {
    let tname = match &ins.table {
        sql::TableObject::TableName(n) => object_name(n)?,
        _ => {
            return Err(unsupported(
                "INSERT into a table function",
                ins.insert_token.0.span,
            ))
        }
    };
    if let Some(clause) = unsupported_insert_clause(ins) {
        return Err(unsupported(clause, ins.insert_token.0.span));
    }
    let t = catalog
        .table(&tname)
        .ok_or_else(|| PlanError::UnknownTable(tname.clone()))?;
    t.refuse_external("INSERT")?;
    let targets: Vec<usize> = if ins.columns.is_empty() {
        (0..t.schema.len()).collect()
    } else {
        let mut v = Vec::new();
        for c in &ins.columns {
            let cname = object_name(c)?;
            let i = t
                .schema
                .index_of(&cname)
                .ok_or_else(|| PlanError::UnknownColumn {
                    name: cname.clone(),
                    position: crate::bind::pos(c.span()),
                })?;
            if v.contains(&i) {
                return Err(PlanError::Invalid(format!(
                    "column '{cname}' specified more than once"
                )));
            }
            v.push(i);
        }
        v
    };
    let returning = match &ins.returning {
        Some(items) => Some(Box::new(returning(t, None, items, binder)?)),
        None => None,
    };
    let skip_conflicts = match &ins.on {
        Some(sql::OnInsert::OnConflict(c)) if c.action == sql::OnConflictAction::DoNothing => {
            conflict_sets(t, c.conflict_target.as_ref())?
        }
        _ => Vec::new(),
    };
    let mut fillers = Fillers::new(t);
    let mut rows = Vec::new();
    // The rows of each column that take their value from a sequence (the column's own:
    // `None`), by column and sequence.
    let mut from_sequence = BTreeMap::new();
    // The rows of each column that take the session's `currval` of a sequence.
    let mut current: BTreeMap<(usize, SequenceName), Vec<usize>> = BTreeMap::new();
    type FromSequence = BTreeMap<(usize, Option<SequenceName>), Vec<usize>>;
    let mut default_row = |binder: &mut Binder<'_>,
                           from_sequence: &mut FromSequence,
                           row: usize,
                           full: &mut Vec<Value>,
                           c: usize|
     -> Result<(), PlanError> {
        match fillers.of(c, binder)? {
            ColumnFill::Null => {}
            ColumnFill::Value(v) => full[c] = v,
            ColumnFill::Sequence(from) => from_sequence.entry((c, from)).or_default().push(row),
        }
        Ok(())
    };
    match &ins.source {
        // `DEFAULT VALUES`: one row of defaults.
        None if ins.columns.is_empty() => {
            let mut full = vec![Value::Null; t.schema.len()];
            for c in 0..t.schema.len() {
                default_row(binder, &mut from_sequence, 0, &mut full, c)?;
            }
            rows.push(full);
        }
        None => {
            return Err(unsupported(
                "INSERT without VALUES",
                ins.insert_token.0.span,
            ))
        }
        Some(source) => {
            let values = match source.body.as_ref() {
                sql::SetExpr::Values(v) => v,
                _ => {
                    return insert_select(
                        t,
                        &targets,
                        source,
                        catalog,
                        binder,
                        &mut fillers,
                        InsertClauses {
                            returning,
                            skip_conflicts,
                        },
                    )
                }
            };
            // Clauses around VALUES (ORDER BY, LIMIT, ...): the query rendered without its
            // rows next to its VALUES alone.
            let no_rows = Box::new(sql::SetExpr::Values(sql::Values {
                explicit_row: values.explicit_row,
                value_keyword: values.value_keyword,
                rows: Vec::new(),
            }));
            let around = sql::Query {
                body: no_rows.clone(),
                ..sql::Query::clone(source)
            };
            if let Some(extra) = added_words(&around.to_string(), &no_rows.to_string()) {
                return Err(unsupported(
                    format!("{extra} in INSERT ... VALUES"),
                    source.span(),
                ));
            }
            let omitted: Vec<usize> = (0..t.schema.len())
                .filter(|c| !targets.contains(c))
                .collect();
            rows.reserve(values.rows.len());
            for (r, row) in values.rows.iter().enumerate() {
                let row = &row.content;
                if row.len() != targets.len() {
                    return Err(PlanError::Invalid(format!(
                        "INSERT into '{}' has {} target columns but {} values",
                        t.name,
                        targets.len(),
                        row.len()
                    )));
                }
                let mut full = vec![Value::Null; t.schema.len()];
                for (e, &c) in row.iter().zip(&targets) {
                    if is_default(e) {
                        default_row(binder, &mut from_sequence, r, &mut full, c)?;
                        continue;
                    }
                    if is_always(t, c) {
                        return Err(always_generated(t, c));
                    }
                    let f = &t.schema.fields[c];
                    if let Some(sequence) =
                        sequences::checked_default_sequence(e, &f.name, f.data_type, catalog)?
                    {
                        // `nextval('s')`: the value is handed out when the statement runs.
                        from_sequence
                            .entry((c, Some(sequence)))
                            .or_default()
                            .push(r);
                        continue;
                    }
                    if let Some(name) = crate::sequence_names::currval_call(e) {
                        // `currval('s')`: read from the session when the statement runs.
                        let sequence = catalog.resolve_sequence(&name?)?;
                        if f.data_type != DataType::Int64 {
                            return Err(PlanError::Type(format!(
                                "column '{}' is {}: currval('{sequence}') gives integers",
                                f.name, f.data_type
                            )));
                        }
                        current.entry((c, sequence)).or_default().push(r);
                        continue;
                    }
                    full[c] = constant_value(e, binder, f.data_type, &f.name)?;
                }
                for &c in &omitted {
                    default_row(binder, &mut from_sequence, r, &mut full, c)?;
                }
                rows.push(full);
            }
        }
    }
    for (r, row) in rows.iter().enumerate() {
        if let Some(&c) = t.not_null.iter().find(|&&c| {
            row[c].is_null()
                && !from_sequence
                    .iter()
                    .any(|((column, _), rows)| *column == c && rows.contains(&r))
                && !current
                    .iter()
                    .any(|((column, _), rows)| *column == c && rows.contains(&r))
        }) {
            return Err(null_in_not_null(t, c));
        }
    }
    binder.params.check_types()?;
    let batch =
        Batch::from_rows(&t.schema.types(), &rows).map_err(|e| PlanError::Type(e.to_string()))?;
    // PostgreSQL reads `currval` row by row, after the row's `nextval`: one INSERT that
    // does both with one sequence is refused rather than answered otherwise.
    let own = |c: usize| SequenceName::Column {
        table: t.name.to_lowercase(),
        column: t.schema.fields[c].name.to_lowercase(),
    };
    for (_, sequence) in current.keys() {
        let drawn = from_sequence
            .keys()
            .any(|(c, from)| from.clone().unwrap_or_else(|| own(*c)) == *sequence);
        if drawn {
            return Err(unsupported(
                format!("currval('{sequence}') in an INSERT that also takes values of {sequence}"),
                ins.insert_token.0.span,
            ));
        }
    }
    let n = rows.len();
    let fills = from_sequence
        .into_iter()
        .map(|((column, from), filled)| SequenceFill {
            column,
            rows: (filled.len() < n).then_some(filled),
            from,
            current: false,
        })
        .chain(
            current
                .into_iter()
                .map(|((column, sequence), filled)| SequenceFill {
                    column,
                    rows: (filled.len() < n).then_some(filled),
                    from: Some(sequence),
                    current: true,
                }),
        )
        .collect();
    Ok(Statement::Insert {
        table: t.name.clone(),
        batch,
        fills,
        returning,
        skip_conflicts,
        update_conflicts: None,
    })
}

/// What an INSERT says besides its target and its rows: its `RETURNING` and `ON CONFLICT`.
struct InsertClauses {
    /// `RETURNING`.
    returning: Option<Box<Returning>>,
    /// `ON CONFLICT ... DO NOTHING`'s column sets ([`conflict_sets`]).
    skip_conflicts: Vec<Vec<usize>>,
}

/// The column sets an `ON CONFLICT [target] DO NOTHING` into `t` skips clashing rows on:
/// with no target, the primary key's and every unique index's; with `(columns)` or `ON
/// CONSTRAINT name`, the key or unique index they name (an error when none matches, as
/// PostgreSQL's 42P10).
pub(crate) fn conflict_sets(
    t: &TableDef,
    target: Option<&sql::ConflictTarget>,
) -> Result<Vec<Vec<usize>>, PlanError> {
    let mut sets: Vec<(String, Vec<usize>)> = Vec::new();
    if t.has_key() {
        sets.push((format!("{}_pkey", t.name), t.primary_key.clone()));
    }
    for ix in t.indexes.iter().filter(|i| i.unique) {
        sets.push((ix.name.clone(), ix.columns()));
    }
    let no_match = |what: String| {
        PlanError::Invalid(format!(
            "there is no primary key or unique index on {what} of table '{}' for ON CONFLICT",
            t.name
        ))
    };
    match target {
        None => Ok(sets.into_iter().map(|(_, c)| c).collect()),
        Some(sql::ConflictTarget::Columns {
            columns,
            predicate: None,
        }) => {
            let mut wanted = Vec::with_capacity(columns.len());
            for c in columns {
                wanted.push(t.schema.index_of(&c.value).ok_or_else(|| {
                    PlanError::UnknownColumn {
                        name: c.value.clone(),
                        position: crate::bind::pos(c.span),
                    }
                })?);
            }
            wanted.sort_unstable();
            let found = sets.into_iter().find(|(_, c)| {
                let mut c = c.clone();
                c.sort_unstable();
                c == wanted
            });
            let names: Vec<&str> = columns.iter().map(|c| c.value.as_str()).collect();
            found
                .map(|(_, c)| vec![c])
                .ok_or_else(|| no_match(format!("({})", names.join(", "))))
        }
        Some(sql::ConflictTarget::OnConstraint(name)) => {
            let name = object_name(name)?;
            sets.into_iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&name))
                .map(|(_, c)| vec![c])
                .ok_or_else(|| no_match(format!("constraint '{name}'")))
        }
        Some(other) => Err(unsupported(
            format!("ON CONFLICT {other} (an index predicate)"),
            Span::empty(),
        )),
    }
}

/// `RETURNING items` of a write to `t` (named `alias` in its statement, if it has one):
/// bound as `SELECT items FROM t [AS alias]`, whose expressions over `t`'s columns are then
/// evaluated on the rows written.
pub(crate) fn returning(
    t: &TableDef,
    alias: Option<&sql::TableAlias>,
    items: &[sql::SelectItem],
    binder: &mut Binder<'_>,
) -> Result<Returning, PlanError> {
    let template = Parser::parse_sql(&GenericDialect {}, "SELECT 1 FROM t")
        .ok()
        .and_then(|mut v| v.pop());
    let Some(sql::Statement::Query(mut q)) = template else {
        return Err(PlanError::Invalid("cannot bind RETURNING".into()));
    };
    let sql::SetExpr::Select(select) = q.body.as_mut() else {
        return Err(PlanError::Invalid("cannot bind RETURNING".into()));
    };
    select.projection = items.to_vec();
    if let [sql::TableWithJoins {
        relation: sql::TableFactor::Table {
            name, alias: named, ..
        },
        ..
    }] = select.from.as_mut_slice()
    {
        *name = sql::ObjectName::from(vec![sql::Ident::with_quote('"', t.name.clone())]);
        *named = alias.cloned();
    }
    let span = items.first().map(|i| i.span()).unwrap_or(Span::empty());
    let bound = binder.query(&q)?;
    let plan = crate::logical::bind_parameters(bound.plan, &{
        (0..binder.params.types.len())
            .map(|i| binder.params.value(i).cloned().unwrap_or(Value::Null))
            .collect::<Vec<_>>()
    });
    match plan {
        crate::logical::LogicalPlan::Project { input, exprs, fields }
            if matches!(
                input.as_ref(),
                crate::logical::LogicalPlan::Scan { projection, filters, .. }
                    if filters.is_empty() && *projection == (0..t.schema.len()).collect::<Vec<_>>()
            ) =>
        {
            Ok(Returning {
                exprs,
                schema: Schema::new(fields),
            })
        }
        _ => Err(unsupported(
            "RETURNING with an aggregate, a window function or a subquery (only expressions over the written row)",
            span,
        )),
    }
}

/// `INSERT INTO t [(targets)] <query>`: the query's columns converted to the target columns'
/// types (numbers convert to any numeric column type), the other columns' defaults for the
/// rest.
fn insert_select(
    t: &TableDef,
    targets: &[usize],
    source: &sql::Query,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
    fillers: &mut Fillers<'_>,
    clauses: InsertClauses,
) -> Result<Statement, PlanError> {
    // An INSERT is planned for each run: a VALUES list in its query may hold parameters.
    binder.params_are_constants = true;
    // Items of the query that draw a sequence's next value: filled when the statement runs.
    let (bound, drawn) = match sequences::drawn_items(source, catalog)? {
        Some((query, drawn)) => (binder.query(&query)?, drawn),
        None => (binder.query(source)?, Vec::new()),
    };
    if bound.fields.len() != targets.len() {
        return Err(PlanError::Invalid(format!(
            "INSERT into '{}' has {} target columns but the query gives {}{}",
            t.name,
            targets.len(),
            bound.fields.len(),
            crate::bind::at(source.span())
        )));
    }
    let mut exprs = Vec::with_capacity(t.schema.len());
    let mut fills = Vec::new();
    for (c, f) in t.schema.fields.iter().enumerate() {
        let Some(i) = targets.iter().position(|&x| x == c) else {
            let value = match fillers.of(c, binder)? {
                ColumnFill::Null if t.not_null.contains(&c) => return Err(null_in_not_null(t, c)),
                ColumnFill::Null => Value::Null,
                ColumnFill::Value(v) => v,
                ColumnFill::Sequence(from) => {
                    fills.push(SequenceFill {
                        column: c,
                        rows: None,
                        from,
                        current: false,
                    });
                    Value::Null
                }
            };
            exprs.push(Expr::Cast {
                expr: Box::new(Expr::Literal(value)),
                to: f.data_type,
            });
            continue;
        };
        if is_always(t, c) {
            return Err(always_generated(t, c));
        }
        if let Some((_, sequence)) = drawn.iter().find(|(item, _)| *item == i) {
            if f.data_type != DataType::Int64 {
                return Err(PlanError::Type(format!(
                    "column '{}' of table '{}' is {}: nextval('{sequence}') gives integers",
                    f.name, t.name, f.data_type
                )));
            }
            fills.push(SequenceFill {
                column: c,
                rows: None,
                from: Some(sequence.clone()),
                current: false,
            });
        }
        let given = bound.fields[i].data_type;
        exprs.push(if given == f.data_type {
            Expr::Column(i)
        } else if given.is_numeric() && f.data_type.is_numeric() {
            Expr::Cast {
                expr: Box::new(Expr::Column(i)),
                to: f.data_type,
            }
        } else {
            return Err(PlanError::Type(format!(
                "column '{}' of table '{}' is {} but the query gives {given}",
                f.name, t.name, f.data_type
            )));
        });
    }
    let plan = bound.plan.project(exprs, t.schema.fields.clone());
    let query = crate::query::plan_with_constants(
        crate::bind::BoundQuery {
            plan,
            fields: t.schema.fields.clone(),
        },
        catalog,
        binder,
    )?;
    Ok(Statement::InsertSelect {
        table: t.name.clone(),
        query: Box::new(query),
        fills,
        returning: clauses.returning,
        skip_conflicts: clauses.skip_conflicts,
        update_conflicts: None,
    })
}

/// `CREATE TABLE name AS <query>`.
fn create_table_as(
    ct: &sql::CreateTable,
    name: String,
    query: &sql::Query,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
    partitions: u32,
) -> Result<Statement, PlanError> {
    if !ct.columns.is_empty() || !ct.constraints.is_empty() {
        return Err(unsupported(
            "column definitions in CREATE TABLE ... AS",
            ct.name.span(),
        ));
    }
    table_from_query(name, query, catalog, binder, partitions)
}

/// `SELECT ... INTO name FROM ...`: `CREATE TABLE name AS SELECT ... FROM ...`, as
/// PostgreSQL has it (`into` is the INTO clause of `query`'s SELECT).
pub(crate) fn select_into(
    query: &sql::Query,
    into: &sql::SelectInto,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
    partitions: u32,
) -> Result<Statement, PlanError> {
    let span = query.span();
    if into.temporary || into.unlogged {
        let what = if into.temporary {
            "TEMPORARY"
        } else {
            "UNLOGGED"
        };
        return Err(unsupported(format!("SELECT INTO {what}"), span));
    }
    let target = match into.targets.as_slice() {
        [sql::Expr::Identifier(id)] => sql::ObjectName::from(vec![id.clone()]),
        [sql::Expr::CompoundIdentifier(parts)] => sql::ObjectName::from(parts.clone()),
        _ => return Err(unsupported("SELECT INTO other than one table name", span)),
    };
    let name = object_name(&target)?;
    let mut query = query.clone();
    if let sql::SetExpr::Select(select) = query.body.as_mut() {
        select.into = None;
    }
    table_from_query(name, &query, catalog, binder, partitions)
}

/// The new table `name` with the columns and rows of `query`.
fn table_from_query(
    name: String,
    query: &sql::Query,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
    partitions: u32,
) -> Result<Statement, PlanError> {
    if catalog.table(&name).is_some() {
        return Err(PlanError::TableExists(name));
    }
    let bound = binder.query(query)?;
    for (i, f) in bound.fields.iter().enumerate() {
        if bound.fields[..i]
            .iter()
            .any(|g| g.name.eq_ignore_ascii_case(&f.name))
        {
            return Err(PlanError::Invalid(format!(
                "CREATE TABLE ... AS gives two columns named '{}' (name them with AS)",
                f.name
            )));
        }
    }
    let def = TableDef {
        name,
        schema: weir_operators::Schema::new(bound.fields.clone()),
        primary_key: Vec::new(),
        indexes: Vec::new(),
        not_null: Vec::new(),
        partitions: partitions.max(1),
        external: None,
        defaults: Vec::new(),
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        comments: Default::default(),
    };
    let query = crate::query::plan_with_constants(bound, catalog, binder)?;
    Ok(Statement::CreateTableAs {
        def,
        query: Box::new(query),
    })
}

/// `CREATE [OR REPLACE] VIEW name [(cols)] AS query`: the query is bound now (so that a bad
/// view is an error at once) and stored as text.
pub(crate) fn create_view(
    cv: &sql::CreateView,
    catalog: &Catalog,
    binder: &mut Binder<'_>,
) -> Result<Statement, PlanError> {
    let name = object_name(&cv.name)?;
    if cv.materialized || cv.or_alter || cv.secure || cv.if_not_exists || cv.comment.is_some() {
        return Err(unsupported(
            "this CREATE VIEW form (only CREATE [OR REPLACE] VIEW)",
            cv.name.span(),
        ));
    }
    if catalog.table(&name).is_some() || (!cv.or_replace && catalog.view(&name).is_some()) {
        return Err(PlanError::TableExists(name));
    }
    let bound = binder.query(&cv.query)?;
    binder.params.check_types()?;
    if !binder.params.types.is_empty() {
        return Err(unsupported("parameters in CREATE VIEW", cv.query.span()));
    }
    // A view is kept as its query's text as the parser renders it, which has no EXCLUDE
    // (only `EXCLUDE NO OTHERS`, the default, goes without saying).
    let excludes = binder
        .exclusions
        .values()
        .any(|x| *x != weir_operators::plan::FrameExclude::NoOthers);
    if excludes {
        return Err(unsupported(
            "EXCLUDE in the window frame of a view",
            cv.query.span(),
        ));
    }
    let columns: Vec<String> = cv.columns.iter().map(|c| c.name.value.clone()).collect();
    if columns.len() > bound.fields.len() {
        return Err(PlanError::Invalid(format!(
            "view '{name}' names {} columns but its query gives {}",
            columns.len(),
            bound.fields.len()
        )));
    }
    Ok(Statement::CreateView {
        def: ViewDef {
            name,
            sql: cv.query.to_string(),
            columns,
        },
        replace: cv.or_replace,
    })
}

/// `DROP VIEW [IF EXISTS] name`.
pub(crate) fn drop_view(
    names: &[sql::ObjectName],
    if_exists: bool,
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let name = dropped_name(names, "views")?;
    match catalog.view(&name) {
        Some(v) => Ok(Statement::DropView {
            name: v.name.clone(),
            if_exists,
        }),
        None if if_exists => Ok(Statement::DropView { name, if_exists }),
        None => Err(PlanError::UnknownTable(name)),
    }
}

/// The one name of a `DROP` (dropping several `what` at once is not supported).
fn dropped_name(names: &[sql::ObjectName], what: &str) -> Result<String, PlanError> {
    match names {
        [n] => object_name(n),
        _ => Err(unsupported(
            format!("dropping several {what} at once"),
            names
                .first()
                .map(|n| n.span())
                .unwrap_or(sqlparser::tokenizer::Span::empty()),
        )),
    }
}

/// The error for a NULL in column `c` of `t`, declared NOT NULL.
pub(crate) fn null_in_not_null(t: &TableDef, c: usize) -> PlanError {
    PlanError::NullValue {
        table: t.name.clone(),
        column: t.schema.fields[c].name.clone(),
    }
}

/// `DROP TABLE [IF EXISTS] name`.
pub(crate) fn drop_table(
    names: &[sql::ObjectName],
    if_exists: bool,
    catalog: &Catalog,
) -> Result<Statement, PlanError> {
    let name = dropped_name(names, "tables")?;
    match catalog.table(&name) {
        Some(t) => {
            if let Some((child, fk)) = t
                .referenced_by(catalog)
                .find(|(child, _)| !child.name.eq_ignore_ascii_case(&t.name))
            {
                return Err(PlanError::Depended(format!(
                    "cannot drop table '{}': foreign key '{}' of table '{}' references it (drop that table first)",
                    t.name, fk.name, child.name
                )));
            }
            Ok(Statement::DropTable {
                name: t.name.clone(),
                if_exists,
            })
        }
        None if if_exists => Ok(Statement::DropTable { name, if_exists }),
        None => Err(PlanError::UnknownTable(name)),
    }
}
