//! A run-path write as data: the statements it runs and the values they bind.
//!
//! The run-path writes (`put_response`, `start_run`, `append_events`, `end_run`,
//! `insert_job`) are known in full before they run: no statement reads what another returns.
//! A write is therefore a [`Script`] (a list of [`Statement`]s, each with its own `$1`…`$n` placeholders, its values,
//! and what its failure means), and the writer decides how to run the scripts of a batch: a
//! file-backed SQLite store's writer thread runs each statement prepared once and kept, as
//! written when its placeholders are numbered in order ([`numbered_in_order`]), else made
//! positional ([`positional`], `sqlite_writer.rs`); through sqlx
//! (`script_run.rs`), an in-memory SQLite store joins every statement of a batch, between
//! `BEGIN` and `COMMIT`, into one multi-statement query, which sqlx runs in one command on the
//! connection's thread ([`joined`]); PostgreSQL runs them statement by statement in a
//! transaction.
//!
//! A write that must be refused (a response id taken by another project, a job that exists
//! already) is refused by its statement failing (a constraint of the given kind), never by a
//! row count read afterwards: the `COMMIT` at the end of a joined query runs unless a statement
//! before it failed.
//!
//! Values are shared, not copied: a write of a failed batch runs again alone, binding the same
//! values.

use std::borrow::Cow;
use std::sync::Arc;

use engine::store::StoreError;
use sqlx::error::ErrorKind;

use crate::error;

/// A value bound to a placeholder.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    Int(i64),
    Text(Arc<str>),
    Static(&'static str),
    /// Text or SQL `NULL` (typed as text for PostgreSQL).
    OptionalText(Option<Arc<str>>),
    /// Bytes (a packed event chunk, `event_pack.rs`; a packed transcript).
    Blob(Arc<[u8]>),
    /// Bytes or SQL `NULL` (typed as bytes for PostgreSQL).
    OptionalBlob(Option<Arc<[u8]>>),
}

impl From<i64> for Value {
    fn from(value: i64) -> Value {
        Value::Int(value)
    }
}

impl From<Arc<str>> for Value {
    fn from(value: Arc<str>) -> Value {
        Value::Text(value)
    }
}

impl From<&Arc<str>> for Value {
    fn from(value: &Arc<str>) -> Value {
        Value::Text(Arc::clone(value))
    }
}

impl From<&'static str> for Value {
    fn from(value: &'static str) -> Value {
        Value::Static(value)
    }
}

impl From<&Arc<[u8]>> for Value {
    fn from(value: &Arc<[u8]>) -> Value {
        Value::Blob(Arc::clone(value))
    }
}

impl From<Option<Arc<[u8]>>> for Value {
    fn from(value: Option<Arc<[u8]>>) -> Value {
        Value::OptionalBlob(value)
    }
}

impl From<Option<Arc<str>>> for Value {
    fn from(value: Option<Arc<str>>) -> Value {
        Value::OptionalText(value)
    }
}

/// One statement: SQL with its own placeholders `$1`…`$n` (numbered from 1 whatever comes
/// before it), and the values for them in order.
#[derive(Debug)]
pub(crate) struct Statement {
    sql: Cow<'static, str>,
    values: Vec<Value>,
    /// A failure of this kind refuses the write with this message ([`StoreError::Conflict`])
    /// instead of being a back-end failure.
    conflict: Option<(ErrorKind, String)>,
}

impl Statement {
    /// Binds the next placeholder.
    pub(crate) fn bind(&mut self, value: impl Into<Value>) -> &mut Statement {
        self.values.push(value.into());
        self
    }

    /// A failure of `kind` (a constraint this statement breaks on purpose or by design) refuses
    /// the write as a conflict, with `message`.
    pub(crate) fn conflict_on(&mut self, kind: ErrorKind, message: String) -> &mut Statement {
        self.conflict = Some((kind, message));
        self
    }

    pub(crate) fn sql(&self) -> &str {
        &self.sql
    }

    pub(crate) fn values(&self) -> &[Value] {
        &self.values
    }

    /// What this statement's failure means for its write.
    pub(crate) fn error(&self, e: sqlx::Error) -> StoreError {
        let kind = e.as_database_error().map(|d| d.kind());
        self.refusal(kind.as_ref())
            .unwrap_or_else(|| error::backend(e))
    }

    /// The refusal of the write when this statement fails with a database error of `kind`
    /// (`None`: not a database error), or `None` when such a failure is the back end's.
    pub(crate) fn refusal(&self, kind: Option<&ErrorKind>) -> Option<StoreError> {
        match &self.conflict {
            Some((refused, message)) if Some(refused) == kind => {
                Some(StoreError::Conflict(message.clone()))
            }
            _ => None,
        }
    }
}

/// A write: its statements, run in order in one transaction (possibly shared with other
/// writes).
#[derive(Debug, Default)]
pub(crate) struct Script {
    statements: Vec<Statement>,
}

impl Script {
    pub(crate) fn new() -> Script {
        Script::default()
    }

    /// Adds a statement (its values are bound on the returned statement).
    pub(crate) fn statement(&mut self, sql: impl Into<Cow<'static, str>>) -> &mut Statement {
        self.statements.push(Statement {
            sql: sql.into(),
            values: Vec::new(),
            conflict: None,
        });
        let last = self.statements.len() - 1;
        &mut self.statements[last]
    }

    pub(crate) fn statements(&self) -> &[Statement] {
        &self.statements
    }
}

/// The most rows one multi-row statement writes (see [`row_groups`]).
pub(crate) const ROWS_PER_STATEMENT: usize = 32;

/// Splits `rows` rows into the row ranges of the statements that write them: runs of
/// [`ROWS_PER_STATEMENT`], then the binary digits of the rest (45 rows: 32, 8, 4, 1). A
/// multi-row statement's text so takes one of six forms whatever the count, each prepared
/// once and found in the statement cache after. (A statement per count had SQLite parse a new
/// one, at ~25 k instructions a row, whenever a request brought a count not seen lately: a chat
/// history growing by a message per request cost ~750 k instructions more per request,
/// docs/benchmarks.md, "Issue 18, twenty-seventh pass".)
pub(crate) fn row_groups(rows: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let mut start = 0;
    std::iter::from_fn(move || {
        let left = rows.checked_sub(start).filter(|left| *left > 0)?;
        let size = if left >= ROWS_PER_STATEMENT {
            ROWS_PER_STATEMENT
        } else {
            1 << left.ilog2()
        };
        let group = start..start + size;
        start += size;
        Some(group)
    })
}

/// `rows` groups of `width` placeholders, `($1, $2), ($3, $4)`, for a multi-row `VALUES`,
/// appended to `sql`; placeholders start after `first` (the placeholders before them).
pub(crate) fn push_values(sql: &mut String, first: usize, rows: usize, width: usize) {
    let mut next = first + 1;
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..width {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            // itoa, not `fmt`, which costs several times more: a run's events are hundreds of
            // placeholders.
            sql.push_str(itoa::Buffer::new().format(next));
            next += 1;
        }
        sql.push(')');
    }
}

/// Scripts joined into one multi-statement query: `BEGIN`, every statement of every script in
/// order, `COMMIT`.
#[derive(Debug)]
pub(crate) struct Joined<'s> {
    /// The query, with every placeholder written as a plain `?` (see [`positional`]).
    pub(crate) sql: String,
    /// The value of each `?` of the query, in order.
    pub(crate) values: Vec<&'s Value>,
    /// For the statement at each position of the query (`BEGIN` is 0), the script and
    /// statement it came from (`None` for `BEGIN` and `COMMIT`).
    pub(crate) origins: Vec<Option<(usize, usize)>>,
}

/// Joins scripts into one query that runs them in one transaction ([`Joined`]).
pub(crate) fn joined<'s>(scripts: &[&'s Script]) -> Result<Joined<'s>, StoreError> {
    let length: usize = scripts
        .iter()
        .flat_map(|s| &s.statements)
        .map(|statement| statement.sql.len() + 2)
        .sum();
    let mut sql = String::with_capacity(length + 16);
    sql.push_str("BEGIN;\n");
    let mut values = Vec::new();
    let mut origins = vec![None];
    for (s, script) in scripts.iter().enumerate() {
        for (n, statement) in script.statements.iter().enumerate() {
            positional(statement, &mut sql, &mut values)?;
            sql.push_str(";\n");
            origins.push(Some((s, n)));
        }
    }
    sql.push_str("COMMIT");
    origins.push(None);
    Ok(Joined {
        sql,
        values,
        origins,
    })
}

/// Appends a statement to `out` with each placeholder `$k` written as a plain `?`, and its
/// value (the statement's k-th, again for each use) appended to `values`.
///
/// sqlx's SQLite driver binds a plain `?` to the next argument of the whole query (it counts
/// the arguments of the statements before), so the statements need no renumbering. A named
/// placeholder (`$k`) would be bound to the query's k-th argument, and costs SQLite a scan of
/// the statement's placeholder names for each (quadratic in a multi-row insert's hundreds).
/// The port SQL has no `$` anywhere else (no string literals with one, no dollar quoting).
pub(crate) fn positional<'s>(
    statement: &'s Statement,
    out: &mut String,
    values: &mut Vec<&'s Value>,
) -> Result<(), StoreError> {
    rewrite_placeholders(statement, out, |_, value, out| {
        out.push('?');
        values.push(value);
    })
}

/// Appends a statement to `out`, each placeholder `$k` written by `placeholder(k, its value,
/// out)` and the rest as it is; a placeholder without a value is an error.
fn rewrite_placeholders<'s>(
    statement: &'s Statement,
    out: &mut String,
    mut placeholder: impl FnMut(usize, &'s Value, &mut String),
) -> Result<(), StoreError> {
    let mut rest: &str = &statement.sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let digits = rest
            .bytes()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
        let (k, value) = rest[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|k| Some((k, statement.values.get(k.checked_sub(1)?)?)))
            .ok_or_else(|| {
                StoreError::Backend(format!(
                    "a write's statement has no value for placeholder ${}",
                    &rest[..digits]
                ))
            })?;
        placeholder(k, value, out);
        rest = &rest[digits..];
    }
    out.push_str(rest);
    Ok(())
}

/// Most values a [`merged`] statement binds: a script beyond it runs statement by statement
/// (PostgreSQL takes at most 65,535 per statement; a long run's items and events stay far from
/// it this way, and the text stays small enough to prepare).
pub(crate) const MERGED_VALUES: usize = 4096;

/// A script's statements for PostgreSQL in as few round trips as they can go: the `SELECT`s
/// first, each alone (row locks, taken before anything of the script is written), then every
/// other statement (`INSERT`, `UPDATE`, `DELETE`) in one, the leading ones as data-modifying
/// `WITH` clauses of the last, with their placeholders renumbered after those before them.
///
/// The statements of a merged one run on one snapshot and none sees the rows another writes:
/// a script's statements never read what the script itself writes (ports/mod.rs), and no two
/// of them write one row. `None` when merging gains nothing (one modifying statement) or a
/// `SELECT` follows a modifying statement or the values pass [`MERGED_VALUES`].
pub(crate) fn merged(script: &Script) -> Option<Merged<'_>> {
    let selects = script
        .statements
        .iter()
        .take_while(|s| is_select(s))
        .count();
    let (first, writes) = script.statements.split_at(selects);
    if writes.len() < 2 || writes.iter().any(is_select) {
        return None;
    }
    let (sql, values) = with_clauses(writes.iter())?;
    Some(Merged {
        selects: first,
        sql,
        values,
    })
}

/// Most scripts a [`merged_batch`] statement takes.
pub(crate) const MERGED_SCRIPTS: usize = 32;

/// A batch's scripts for PostgreSQL in one statement: every statement of every script, in
/// order, as [`merged`] writes one script's, when no script takes a lock first (starts,
/// flushes and ends of runs; an end that appends to a conversation locks it, and such a batch
/// runs script by script).
///
/// One snapshot for all: no script of a batch reads or removes what another writes. The writes
/// of one run are each awaited before the next is made (the run's start, its flushes, its end),
/// and the runs of a batch write rows of their own; where two scripts would still write one
/// row (a key taken twice), the statement fails whole and the batch runs again script by
/// script. `None` for fewer than two scripts, more than [`MERGED_SCRIPTS`], or values past
/// [`MERGED_VALUES`].
pub(crate) fn merged_batch<'s>(scripts: &[&'s Script]) -> Option<Merged<'s>> {
    if scripts.len() < 2 || scripts.len() > MERGED_SCRIPTS {
        return None;
    }
    if scripts.iter().flat_map(|s| &s.statements).any(is_select) {
        return None;
    }
    let (sql, values) = with_clauses(scripts.iter().flat_map(|s| &s.statements))?;
    Some(Merged {
        selects: &[],
        sql,
        values,
    })
}

/// Whether a statement is a `SELECT` (a lock a script takes before it writes).
fn is_select(statement: &Statement) -> bool {
    statement
        .sql
        .trim_start()
        .get(..6)
        .is_some_and(|word| word.eq_ignore_ascii_case("select"))
}

/// Statements as one: the leading ones as data-modifying `WITH` clauses of the last, each
/// with its placeholders renumbered after those before it. `None` past [`MERGED_VALUES`] or
/// for a placeholder without a value.
fn with_clauses<'s>(
    writes: impl Iterator<Item = &'s Statement> + Clone,
) -> Option<(String, Vec<&'s Value>)> {
    let count: usize = writes.clone().map(|statement| statement.values.len()).sum();
    if count > MERGED_VALUES {
        return None;
    }
    let length: usize = writes
        .clone()
        .map(|statement| statement.sql.len() + 16)
        .sum();
    // Two at least: one alone is no `WITH`.
    let last = writes
        .clone()
        .count()
        .checked_sub(1)
        .filter(|&last| last > 0)?;
    let mut sql = String::with_capacity(length + 8);
    let mut values = Vec::with_capacity(count);
    for (n, statement) in writes.enumerate() {
        if n == 0 {
            sql.push_str("WITH ");
        }
        if n < last {
            sql.push_str(&format!("w{n} AS ("));
        }
        renumbered(statement, values.len(), &mut sql).ok()?;
        values.extend(statement.values.iter());
        if n < last {
            sql.push_str(if n + 1 < last { "), " } else { ") " });
        }
    }
    Some((sql, values))
}

/// A script as [`merged`] runs it.
#[derive(Debug)]
pub(crate) struct Merged<'s> {
    /// Run first, each alone, in order.
    pub(crate) selects: &'s [Statement],
    /// Every other statement in one.
    pub(crate) sql: String,
    /// The values of `sql`'s `$1`…`$n`.
    pub(crate) values: Vec<&'s Value>,
}

/// Appends a statement to `out` with each placeholder `$k` written `$(k + offset)`.
fn renumbered(statement: &Statement, offset: usize, out: &mut String) -> Result<(), StoreError> {
    rewrite_placeholders(statement, out, |k, _, out| {
        out.push('$');
        out.push_str(&(k + offset).to_string());
    })
}

/// The statement as SQLite can run it without [`positional`]'s rewrite, when its placeholders
/// `$1`…`$n` first appear in the text in that order: its SQL and the values of `$1`…`$n`.
/// SQLite numbers named parameters (`$1` is one, named "$1") in order of first appearance, so
/// then `$k` is SQLite's parameter `k` and value `k` binds to it, however often it appears.
/// `None` (use [`positional`]) when a number first appears out of that order, a `$` has no
/// number, or a number has no value.
pub(crate) fn numbered_in_order(statement: &Statement) -> Option<(&str, &[Value])> {
    let mut highest = 0_usize;
    let mut rest = statement.sql.as_bytes();
    while let Some(at) = memchr::memchr(b'$', rest) {
        rest = &rest[at + 1..];
        let digits = rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
        let mut k = 0_usize;
        for digit in &rest[..digits] {
            k = k.checked_mul(10)?.checked_add(usize::from(digit - b'0'))?;
        }
        if k == highest + 1 {
            highest = k;
        } else if k == 0 || k > highest {
            return None;
        }
        rest = &rest[digits..];
    }
    let values = statement.values.get(..highest)?;
    Some((&statement.sql, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_positional_with_their_values_in_order() {
        let mut first = Script::new();
        first
            .statement("INSERT INTO t VALUES ($1, $2)")
            .bind(1)
            .bind(2);
        let mut second = Script::new();
        second
            .statement("UPDATE t SET a = $2 WHERE b = $1 OR c = $1")
            .bind(3)
            .bind(4);
        second.statement("DELETE FROM t");
        let joined = joined(&[&first, &second]).unwrap();
        assert_eq!(
            joined.sql,
            "BEGIN;\nINSERT INTO t VALUES (?, ?);\n\
             UPDATE t SET a = ? WHERE b = ? OR c = ?;\nDELETE FROM t;\nCOMMIT"
        );
        let values: Vec<i64> = joined
            .values
            .iter()
            .map(|v| match v {
                Value::Int(n) => *n,
                _ => -1,
            })
            .collect();
        assert_eq!(values, vec![1, 2, 4, 3, 3]);
        assert_eq!(
            joined.origins,
            vec![None, Some((0, 0)), Some((1, 0)), Some((1, 1)), None]
        );
    }

    #[test]
    fn a_placeholder_without_a_value_is_an_error() {
        let mut script = Script::new();
        script.statement("SELECT $1, $2, $10").bind(1).bind(2);
        assert!(joined(&[&script]).is_err());
    }

    #[test]
    fn rows_are_written_in_groups_of_a_few_sizes() {
        let sizes = |rows| row_groups(rows).map(|g| g.len()).collect::<Vec<_>>();
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(1), [1]);
        assert_eq!(sizes(7), [4, 2, 1]);
        assert_eq!(sizes(45), [32, 8, 4, 1]);
        assert_eq!(sizes(64), [32, 32]);
        let mut forms = std::collections::BTreeSet::new();
        for rows in 0..=300 {
            let groups: Vec<_> = row_groups(rows).collect();
            // In order, without gaps or overlaps, covering every row.
            let mut next = 0;
            for group in &groups {
                assert_eq!(group.start, next, "{rows}: {groups:?}");
                next = group.end;
                forms.insert(group.len());
            }
            assert_eq!(next, rows, "{rows}: {groups:?}");
        }
        assert_eq!(forms.into_iter().collect::<Vec<_>>(), [1, 2, 4, 8, 16, 32]);
    }

    #[test]
    fn values_lists_number_their_placeholders_in_order() {
        let mut sql = String::from("VALUES ");
        push_values(&mut sql, 1, 2, 3);
        assert_eq!(sql, "VALUES ($2, $3, $4), ($5, $6, $7)");
    }

    /// The values [`numbered_in_order`] binds, as numbers (`None`: it declines).
    fn in_order(sql: &'static str, values: &[i64]) -> Option<Vec<i64>> {
        let mut script = Script::new();
        let statement = script.statement(sql);
        for &value in values {
            statement.bind(value);
        }
        let (text, bound) = numbered_in_order(script.statements().first()?)?;
        assert_eq!(text, sql);
        Some(
            bound
                .iter()
                .map(|v| match v {
                    Value::Int(n) => *n,
                    _ => -1,
                })
                .collect(),
        )
    }

    #[test]
    fn placeholders_numbered_in_order_of_first_use_run_as_written() {
        assert_eq!(
            in_order(
                "INSERT INTO t VALUES ($1, $2) ON CONFLICT DO UPDATE SET a = $1",
                &[7, 8]
            ),
            Some(vec![7, 8])
        );
        assert_eq!(in_order("DELETE FROM t", &[]), Some(vec![]));
        // Values no placeholder names are not bound (as `positional` lists none for them).
        assert_eq!(in_order("SELECT $1", &[7, 8]), Some(vec![7]));
        assert_eq!(
            in_order(
                "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11",
                &[1; 11]
            ),
            Some(vec![1; 11])
        );
    }

    #[test]
    fn placeholders_out_of_order_or_without_values_are_rewritten() {
        // SQLite would number `$2` as its parameter 1 here.
        assert_eq!(in_order("UPDATE t SET a = $2 WHERE b = $1", &[3, 4]), None);
        assert_eq!(in_order("SELECT $1, $3", &[1, 2, 3]), None);
        assert_eq!(in_order("SELECT $1, $2, $10", &[1, 2]), None);
        assert_eq!(in_order("SELECT $0", &[1]), None);
        assert_eq!(in_order("SELECT $", &[1]), None);
        assert_eq!(in_order("SELECT $1, $2", &[1]), None);
    }

    fn ints(values: &[&Value]) -> Vec<i64> {
        values
            .iter()
            .map(|value| match value {
                Value::Int(n) => *n,
                _ => -1,
            })
            .collect()
    }

    #[test]
    fn a_scripts_writes_merge_into_one_statement_after_its_locks() {
        let mut script = Script::new();
        script
            .statement("SELECT 1 FROM c WHERE id = $1 FOR UPDATE")
            .bind(9);
        script
            .statement("INSERT INTO t VALUES ($1, $2), ($2, $1)")
            .bind(1)
            .bind(2);
        script
            .statement("INSERT INTO u SELECT $1 FROM c WHERE id = $2")
            .bind(3)
            .bind(4);
        script.statement("DELETE FROM v WHERE id = $1").bind(5);
        let merged = merged(&script).expect("merged");
        assert_eq!(merged.selects.len(), 1);
        assert_eq!(
            merged.selects[0].sql(),
            "SELECT 1 FROM c WHERE id = $1 FOR UPDATE"
        );
        assert_eq!(
            merged.sql,
            "WITH w0 AS (INSERT INTO t VALUES ($1, $2), ($2, $1)), \
             w1 AS (INSERT INTO u SELECT $3 FROM c WHERE id = $4) \
             DELETE FROM v WHERE id = $5"
        );
        assert_eq!(ints(&merged.values), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn scripts_that_gain_nothing_or_cannot_merge_are_not_merged() {
        let mut one = Script::new();
        one.statement("INSERT INTO t VALUES ($1)").bind(1);
        assert!(merged(&one).is_none(), "one write");
        let mut locked = Script::new();
        locked
            .statement("SELECT 1 FROM c WHERE id = $1 FOR UPDATE")
            .bind(1);
        locked.statement("INSERT INTO t VALUES ($1)").bind(1);
        assert!(merged(&locked).is_none(), "one write after the lock");
        let mut late = Script::new();
        late.statement("INSERT INTO t VALUES ($1)").bind(1);
        late.statement("select 1 FROM c WHERE id = $1 FOR UPDATE")
            .bind(1);
        late.statement("INSERT INTO t VALUES ($1)").bind(2);
        assert!(merged(&late).is_none(), "a lock after a write");
        let mut large = Script::new();
        for n in 0..2 {
            let statement = large.statement(format!(
                "INSERT INTO t VALUES {}",
                (1..=MERGED_VALUES / 2 + 1)
                    .map(|k| format!("(${k})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            for k in 0..=MERGED_VALUES / 2 {
                statement.bind((n * 10_000 + k) as i64);
            }
        }
        assert!(
            merged(&large).is_none(),
            "more values than a merged statement takes"
        );
        let mut missing = Script::new();
        missing.statement("INSERT INTO t VALUES ($1, $2)").bind(1);
        missing.statement("DELETE FROM t WHERE n = $1").bind(1);
        assert!(merged(&missing).is_none(), "a placeholder without a value");
    }

    #[test]
    fn a_batch_merges_in_its_order_unless_a_script_takes_a_lock() {
        let insert = |table: &str, n: i64| {
            let mut script = Script::new();
            script
                .statement(format!("INSERT INTO {table} VALUES ($1)"))
                .bind(n);
            script
        };
        let (u, t1, t2) = (insert("u", 1), insert("t", 2), insert("t", 3));
        let batch = merged_batch(&[&u, &t1, &t2]).expect("merged");
        assert_eq!(
            batch.sql,
            "WITH w0 AS (INSERT INTO u VALUES ($1)), w1 AS (INSERT INTO t VALUES ($2)) \
             INSERT INTO t VALUES ($3)"
        );
        let values: Vec<String> = batch.values.iter().map(|v| format!("{v:?}")).collect();
        assert_eq!(values, ["Int(1)", "Int(2)", "Int(3)"]);
        assert!(merged_batch(&[&u]).is_none(), "one script");
        let mut locked = Script::new();
        locked
            .statement("SELECT 1 FROM c WHERE id = $1 FOR UPDATE")
            .bind(4);
        locked.statement("INSERT INTO t VALUES ($1)").bind(4);
        assert!(
            merged_batch(&[&u, &locked]).is_none(),
            "a script locks first"
        );
        let many: Vec<Script> = (0..=MERGED_SCRIPTS as i64)
            .map(|n| insert("t", n))
            .collect();
        let many: Vec<&Script> = many.iter().collect();
        assert!(
            merged_batch(&many).is_none(),
            "more scripts than one statement takes"
        );
        assert!(merged_batch(&many[..MERGED_SCRIPTS]).is_some());
    }
}
