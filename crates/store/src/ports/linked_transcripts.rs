//! Transcripts stored linked to another response's (`transcript_link.rs`, SQLite schema
//! version 18, PostgreSQL 19): read whole by following their bases, and rewritten on their
//! base's own base before a response they are linked to is deleted. Every statement reads a
//! transcript as the back end stores it (`transcript_column!`).

use std::sync::Arc;

use engine::store::StoreError;
use sqlx::Row as _;

use super::json_columns::{json_text, stored_json};
use super::{DbRow, Store, dialect};
use crate::packed_transcripts::Seed;
use crate::stored_json::StoredJsonRef;
use crate::{error, transcript_link, transcript_pack};

/// A linked transcript's base (`transcript_link.rs`).
const SELECT_BASE: &str = concat!(
    "SELECT ",
    transcript_column!(stored ""),
    " AS transcript_json, transcript_base
FROM responses
WHERE project_id = $1 AND id = $2"
);

/// Response `$2` of project `$1` (where `$anchor` also holds of it) and its bases after it,
/// nearest first, each the base of the one before: at most `$3` rows in all, in one statement
/// (a lookup each for SQLite, not a round trip each); a missing base ends the list early.
macro_rules! chain_from {
    ($anchor:literal) => {
        concat!(
            "WITH RECURSIVE chain(depth, transcript_json, transcript_base) AS (
    SELECT 1, ",
            transcript_column!(stored ""),
            ", transcript_base
    FROM responses
    WHERE project_id = $1 AND id = $2",
            $anchor,
            "
    UNION ALL
    SELECT chain.depth + 1, ",
            transcript_column!(stored "r."),
            ", r.transcript_base
    FROM chain JOIN responses r ON r.project_id = $1 AND r.id = chain.transcript_base
    WHERE chain.depth < $3
)
SELECT transcript_json, transcript_base FROM chain ORDER BY depth"
        )
    };
}

/// A linked transcript's bases, from its base (`$2`) on.
const SELECT_BASES: &str = chain_from!("");

/// What [`Store::transcript_seed`] reads: a response whose run has ended, and its bases.
const SELECT_SEED: &str = chain_from!(" AND status NOT IN ('queued', 'in_progress')");

/// The most links a read follows: more than a write makes ([`transcript_link::MAX_DEPTH`]),
/// since a deletion splices at most as many; more is a loop, a corrupt store.
const MAX_LINKS: usize = 2 * transcript_link::MAX_DEPTH as usize;

impl Store {
    /// The whole value of the transcript in `row` (a response's, `id`) when it is linked: its
    /// bases read in turn, and each linked value put back together on the one before
    /// (`transcript_link.rs`); `None` when it is not linked.
    pub(super) async fn whole_transcript(
        &self,
        project_id: &str,
        id: &str,
        row: &DbRow,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .linked_whole(project_id, id, row)
            .await?
            .map(|(whole, _)| whole))
    }

    /// [`Store::whole_transcript`], with how many links it followed.
    async fn linked_whole(
        &self,
        project_id: &str,
        id: &str,
        row: &DbRow,
    ) -> Result<Option<(Vec<u8>, usize)>, StoreError> {
        let what = format!("response {id}");
        let StoredJsonRef::Packed(value) = stored_json(row, "transcript_json", &what)? else {
            return Ok(None);
        };
        if !transcript_link::is_linked(value) {
            return Ok(None);
        }
        let corrupt = |e: String| StoreError::Corrupt(format!("{what}: its transcript_json: {e}"));
        let base: Option<String> = row
            .try_get("transcript_base")
            .map_err(|e| error::bad_column(&what, "transcript_base", e))?;
        let Some(base_id) = base else {
            return Err(corrupt("linked, with no base named".to_owned()));
        };
        // Up to one more than a read follows, so that a loop shows.
        let bases = sqlx::query(SELECT_BASES)
            .bind(project_id)
            .bind(&base_id)
            .bind(i64::try_from(MAX_LINKS + 1).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)?;
        assemble(&what, value, base_id, &bases).map(Some)
    }

    /// Response `id`'s transcript as the next transcript of its conversation may be linked to
    /// (`packed_transcripts.rs`, [`Seed`]): read back when the memo holds nothing for it (the
    /// process restarted, the memo let it go, or it is too long for the memo). `None` when it
    /// is not stored, its run has not ended, or its transcript is not packed.
    pub(super) async fn transcript_seed(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<Seed>, StoreError> {
        let what = format!("response {id}");
        // The response, then (when it is linked) its bases: up to one more than a read follows.
        let rows = sqlx::query(SELECT_SEED)
            .bind(project_id)
            .bind(id)
            .bind(i64::try_from(MAX_LINKS + 2).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)?;
        let Some((row, bases)) = rows.split_first() else {
            return Ok(None);
        };
        let StoredJsonRef::Packed(value) = stored_json(row, "transcript_json", &what)? else {
            return Ok(None);
        };
        let (whole, depth) = if transcript_link::is_linked(value) {
            let base: Option<String> = row
                .try_get("transcript_base")
                .map_err(|e| error::bad_column(&what, "transcript_base", e))?;
            let base = base.ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "{what}: its transcript_json: linked, with no base named"
                ))
            })?;
            assemble(&what, value, base, bases)?
        } else {
            (value.to_vec(), 0)
        };
        let json = transcript_pack::unpack(&whole)
            .map_err(|e| StoreError::Corrupt(format!("{what}: its transcript_json: {e}")))?;
        Ok(Some(Seed {
            id: Arc::from(id),
            project: Arc::from(project_id),
            json: Arc::from(json),
            packed: Arc::from(whole),
            depth: u32::try_from(depth).unwrap_or(u32::MAX),
        }))
    }

    /// The transcript JSON of response `id` of `project_id`, linked or not (`agentd store
    /// copy`, which copies linked transcripts whole).
    #[allow(
        dead_code,
        reason = "the copy reads SQLite's only; this folder is compiled for PostgreSQL too"
    )]
    pub(crate) async fn linked_transcript_json(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<String, StoreError> {
        let what = format!("response {id}");
        let row = sqlx::query(SELECT_BASE)
            .bind(project_id)
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?
            .ok_or_else(|| StoreError::Corrupt(format!("{what}: not stored")))?;
        let whole = self.whole_transcript(project_id, id, &row).await?;
        let stored = match &whole {
            Some(whole) => StoredJsonRef::Packed(whole),
            None => stored_json(&row, "transcript_json", &what)?,
        };
        json_text(stored, "transcript_json", &what).map(std::borrow::Cow::into_owned)
    }
}

/// `value`, response `id`'s linked transcript (`what` names it), put back together on its
/// bases (`bases`: from `base_id`, nearest first, as [`SELECT_BASES`] lists them): the whole
/// value, and how many links it took.
fn assemble(
    what: &str,
    value: &[u8],
    mut base_id: String,
    bases: &[DbRow],
) -> Result<(Vec<u8>, usize), StoreError> {
    let corrupt = |e: String| StoreError::Corrupt(format!("{what}: its transcript_json: {e}"));
    let mut chain = vec![value];
    let mut root = None;
    for row in bases {
        let base_what = format!("response {base_id}");
        let StoredJsonRef::Packed(value) = stored_json(row, "transcript_json", &base_what)? else {
            return Err(corrupt(format!(
                "linked to response {base_id}, whose transcript is not in pieces"
            )));
        };
        if !transcript_link::is_linked(value) {
            root = Some(value);
            break;
        }
        if chain.len() > MAX_LINKS {
            return Err(corrupt(format!("linked more than {MAX_LINKS} deep")));
        }
        chain.push(value);
        let next: Option<String> = row
            .try_get("transcript_base")
            .map_err(|e| error::bad_column(&base_what, "transcript_base", e))?;
        base_id = next.ok_or_else(|| {
            corrupt(format!(
                "linked to response {base_id}, linked with no base named"
            ))
        })?;
    }
    let Some(root) = root else {
        if chain.len() > MAX_LINKS {
            return Err(corrupt(format!("linked more than {MAX_LINKS} deep")));
        }
        return Err(corrupt(format!(
            "linked to response {base_id}, which is not stored"
        )));
    };
    let whole = transcript_link::link_all(root, &chain).map_err(corrupt)?;
    Ok((whole, chain.len()))
}

/// Before response `id` of `project_id` is deleted, in the same transaction (`conn`): every
/// transcript linked to it rewritten on its base (`transcript_link::splice`), so that none
/// needs it. On PostgreSQL the response is locked first (`dialect::LOCK_RESPONSE`), so that no
/// transcript is linked to it between this read and its deletion.
pub(super) async fn unlink(
    conn: &mut <super::Db as sqlx::Database>::Connection,
    project_id: &str,
    id: &str,
) -> Result<(), StoreError> {
    if let Some(lock) = dialect::LOCK_RESPONSE {
        sqlx::query(lock)
            .bind(id)
            .bind(project_id)
            .execute(&mut *conn)
            .await
            .map_err(error::backend)?;
    }
    let dependents = sqlx::query(concat!(
        "SELECT id, ",
        transcript_column!(stored ""),
        " AS transcript_json FROM responses WHERE transcript_base = $1 AND project_id = $2"
    ))
    .bind(id)
    .bind(project_id)
    .fetch_all(&mut *conn)
    .await
    .map_err(error::backend)?;
    if dependents.is_empty() {
        return Ok(());
    }
    let what = format!("response {id}");
    let corrupt =
        |what: &str, e: String| StoreError::Corrupt(format!("{what}: its transcript_json: {e}"));
    let base = sqlx::query(SELECT_BASE)
        .bind(project_id)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(error::backend)?
        .ok_or_else(|| StoreError::Corrupt(format!("{what}: linked to, but not stored")))?;
    let StoredJsonRef::Packed(base_value) = stored_json(&base, "transcript_json", &what)? else {
        return Err(corrupt(&what, "linked to, but not in pieces".to_owned()));
    };
    let base_base: Option<String> = if transcript_link::is_linked(base_value) {
        base.try_get("transcript_base")
            .map_err(|e| error::bad_column(&what, "transcript_base", e))?
    } else {
        None
    };
    for dependent in &dependents {
        let dependent_id: String = dependent
            .try_get("id")
            .map_err(|e| error::bad_column(&what, "id", e))?;
        let dependent_what = format!("response {dependent_id}");
        let StoredJsonRef::Packed(value) =
            stored_json(dependent, "transcript_json", &dependent_what)?
        else {
            return Err(corrupt(
                &dependent_what,
                "linked, but not packed".to_owned(),
            ));
        };
        let spliced =
            transcript_link::splice(base_value, value).map_err(|e| corrupt(&dependent_what, e))?;
        sqlx::query(concat!(
            "UPDATE responses SET ",
            transcript_column!(assign),
            ", transcript_base = $2 WHERE id = $3 AND project_id = $4"
        ))
        .bind(spliced)
        .bind(base_base.as_deref())
        .bind(&dependent_id)
        .bind(project_id)
        .execute(&mut *conn)
        .await
        .map_err(error::backend)?;
    }
    Ok(())
}
