//! A long conversation's transcript stored as a link to an earlier response's (schema version
//! 18): the pieces the two share are not stored again.
//!
//! Every response keeps its conversation's whole transcript, and a transcript in pieces
//! (`transcript_pack.rs`) begins with the pieces of the one before it, byte for byte; stored
//! whole, a conversation of n turns stores its first turn n times, so its store grows with the
//! square of n. A linked value stores only the pieces of its own: the format byte [`LINKED`],
//! the length of the JSON (u32, little endian), how many pieces of its base's transcript it
//! begins with (u32), then its own pieces as [`PIECES`] values hold them. Its base, a response
//! of the same project, is named by the row's `transcript_base` column; the base's transcript
//! may be linked in turn, at most [`MAX_DEPTH`] links in a row (a deeper one is stored whole,
//! so that a read takes at most that many lookups and a conversation's store grows with
//! n²/[`MAX_DEPTH`] at worst).
//!
//! Read, a linked value is put back together on its base's whole value ([`link`]) into the
//! [`PIECES`] value it stands for; a response that others link to is deleted by first
//! rewriting each of them on its own base ([`splice`]): both only copy pieces, never pack.
//!
//! [`PIECES`]: transcript_pack::PIECES

use crate::transcript_pack::{After, HEADER, PIECES, piece_ends};

/// The format byte (after `transcript_pack.rs`'s 4).
pub(crate) const LINKED: u8 = 5;

/// The most links in a row: a transcript whose base is that deep is stored whole.
pub(crate) const MAX_DEPTH: u32 = 32;

/// Bytes before a linked value's own pieces: the format byte, the length and the count.
const LINKED_HEADER: usize = HEADER + 4;

/// Whether `stored` (a packed column value) is a linked transcript.
pub(crate) fn is_linked(stored: &[u8]) -> bool {
    stored.first() == Some(&LINKED)
}

/// `after` (a transcript packed after its base's whole value) as a value linked to that base:
/// its own pieces only; `None` when it keeps none of the base's pieces.
pub(crate) fn linked(after: &After) -> Option<Vec<u8>> {
    if after.kept == 0 {
        return None;
    }
    let own = after.packed.get(after.own..)?;
    let mut value = Vec::with_capacity(LINKED_HEADER + own.len());
    value.push(LINKED);
    value.extend_from_slice(after.packed.get(1..HEADER)?);
    value.extend_from_slice(&u32::try_from(after.kept).ok()?.to_le_bytes());
    value.extend_from_slice(own);
    Some(value)
}

/// A linked value's parts: the length of its JSON (as stored), the count of its base's pieces
/// it keeps, and its own pieces with where each ends.
struct Parts<'a> {
    length: &'a [u8],
    kept: usize,
    own: &'a [u8],
    own_ends: Vec<usize>,
}

fn parts(value: &[u8]) -> Result<Parts<'_>, String> {
    if !is_linked(value) {
        return Err(format!(
            "a linked transcript of format {}, not {LINKED}",
            value
                .first()
                .map_or_else(|| "none".to_owned(), u8::to_string)
        ));
    }
    let header = value
        .get(..LINKED_HEADER)
        .ok_or("a linked transcript cut short")?;
    let kept = u32::from_le_bytes(
        header[HEADER..]
            .try_into()
            .map_err(|_| "a linked transcript's header")?,
    );
    let own = &value[LINKED_HEADER..];
    Ok(Parts {
        length: &header[1..HEADER],
        kept: usize::try_from(kept).map_err(|_| "a linked transcript's count")?,
        own_ends: piece_ends(own)?,
        own,
    })
}

/// The first `count` of `records`' pieces (`ends`: where each ends).
fn first_pieces<'a>(records: &'a [u8], ends: &[usize], count: usize) -> Result<&'a [u8], String> {
    match count.checked_sub(1) {
        None => Ok(&records[..0]),
        Some(last) => ends.get(last).map(|&end| &records[..end]).ok_or_else(|| {
            format!(
                "a linked transcript keeping {count} pieces of a transcript of {}",
                ends.len()
            )
        }),
    }
}

/// `value`, linked, put back together on `base`, its base's whole value: the [`PIECES`]
/// value it stands for. `Err` says what is wrong with either.
pub(crate) fn link(base: &[u8], value: &[u8]) -> Result<Vec<u8>, String> {
    let parts = parts(value)?;
    if base.first() != Some(&PIECES) {
        return Err("a linked transcript whose base is not a transcript in pieces".to_owned());
    }
    let records = base.get(HEADER..).ok_or("a packed transcript cut short")?;
    let kept = first_pieces(records, &piece_ends(records)?, parts.kept)?;
    let mut whole = Vec::with_capacity(HEADER + kept.len() + parts.own.len());
    whole.push(PIECES);
    whole.extend_from_slice(parts.length);
    whole.extend_from_slice(kept);
    whole.extend_from_slice(parts.own);
    Ok(whole)
}

/// `chain`, linked values each linked to the next (the first the one read, the last linked
/// to `root`, a whole value), put back together: the [`PIECES`] value the first stands for.
/// The same as [`link`] applied from the last to the first, but each piece kept is copied
/// once, not once per link above it. `Err` says what is wrong with any of them.
pub(crate) fn link_all(root: &[u8], chain: &[&[u8]]) -> Result<Vec<u8>, String> {
    let parts = chain
        .iter()
        .map(|value| parts(value))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = parts.first() else {
        return Ok(root.to_vec());
    };
    if root.first() != Some(&PIECES) {
        return Err("a linked transcript whose base is not a transcript in pieces".to_owned());
    }
    let records = root.get(HEADER..).ok_or("a packed transcript cut short")?;
    // From the first down: how many pieces each level's whole must give the one above it,
    // and which of its own pieces that takes.
    let mut segments = vec![first.own];
    let mut need = first.kept;
    for level in &parts[1..] {
        if let Some(more) = need.checked_sub(level.kept).filter(|&more| more > 0) {
            segments.push(first_pieces(level.own, &level.own_ends, more)?);
            need = level.kept;
        }
    }
    segments.push(first_pieces(records, &piece_ends(records)?, need)?);
    let mut whole = Vec::with_capacity(HEADER + segments.iter().map(|s| s.len()).sum::<usize>());
    whole.push(PIECES);
    whole.extend_from_slice(first.length);
    for segment in segments.iter().rev() {
        whole.extend_from_slice(segment);
    }
    Ok(whole)
}

/// `dependent`, linked to `base`'s value, rewritten so that it no longer needs it: whole when
/// `base` is whole, else linked to `base`'s own base (which the caller names in the row). `Err`
/// says what is wrong with either.
pub(crate) fn splice(base: &[u8], dependent: &[u8]) -> Result<Vec<u8>, String> {
    if !is_linked(base) {
        return link(base, dependent);
    }
    let (base, dependent) = (parts(base)?, parts(dependent)?);
    // The dependent keeps `dependent.kept` of the base's pieces: the base's own base's first
    // `base.kept`, then the base's own.
    let (kept, from_base) = match dependent.kept.checked_sub(base.kept) {
        None | Some(0) => (dependent.kept, 0),
        Some(more) => (base.kept, more),
    };
    let borrowed = first_pieces(base.own, &base.own_ends, from_base)?;
    let mut value = Vec::with_capacity(LINKED_HEADER + borrowed.len() + dependent.own.len());
    value.push(LINKED);
    value.extend_from_slice(dependent.length);
    value.extend_from_slice(
        &u32::try_from(kept)
            .map_err(|_| "a linked transcript's count")?
            .to_le_bytes(),
    );
    value.extend_from_slice(borrowed);
    value.extend_from_slice(dependent.own);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript_pack::{pack, pack_after_parts, unpack};

    /// A conversation's transcript of `turns` turns, each different from the others.
    fn transcript_json(turns: usize) -> String {
        let items: Vec<String> = (0..turns)
            .map(|n| {
                let words: String = (0..60)
                    .map(|w| format!(" w{}", (n * 60 + w) * 7919 % 997))
                    .collect();
                format!(r#"{{"type":"message","role":"user","content":"{n}:{words}"}}"#)
            })
            .collect();
        format!("[{}]", items.join(","))
    }

    /// 60 turns (past the 16 KiB from which transcripts are packed), then `more` turns, each
    /// packed after the one before: each turn's JSON and `After`.
    fn chain(more: usize) -> Vec<(String, After)> {
        let first = transcript_json(60);
        let mut whole = pack(&first).unwrap();
        let mut before = first;
        let mut out = Vec::new();
        for turns in 61..=60 + more {
            let json = transcript_json(turns);
            let after = pack_after_parts(&json, &before, &whole).unwrap();
            whole = std::sync::Arc::clone(&after.packed);
            before = json.clone();
            out.push((json, after));
        }
        out
    }

    #[test]
    fn a_linked_value_holds_its_own_pieces_and_reads_back_on_its_base() {
        let turns = chain(5);
        for pair in turns.windows(2) {
            let [(_, base), (json, after)] = pair else {
                unreachable!()
            };
            let value = linked(after).unwrap();
            assert!(is_linked(&value));
            assert_eq!(value.len(), LINKED_HEADER + after.packed.len() - after.own);
            assert!(
                value.len() * 4 < after.packed.len(),
                "{} of {}",
                value.len(),
                after.packed.len()
            );
            let whole = link(&base.packed, &value).unwrap();
            assert_eq!(whole, *after.packed);
            assert_eq!(unpack(&whole).unwrap(), *json);
        }
        // One that keeps none of its base's pieces is not linked.
        let json = transcript_json(70);
        let none = After {
            packed: pack(&json).unwrap(),
            kept: 0,
            own: HEADER,
        };
        assert!(linked(&none).is_none());
    }

    #[test]
    fn a_dependent_spliced_past_its_base_reads_the_same() {
        let turns = chain(4);
        // 61 whole; 62 linked to 61, 63 to 62, 64 to 63.
        let whole_41 = turns[0].1.packed.to_vec();
        let linked_42 = linked(&turns[1].1).unwrap();
        let linked_43 = linked(&turns[2].1).unwrap();
        let linked_44 = linked(&turns[3].1).unwrap();
        // 63 loses its base, 62 (linked to 61): 63 is linked to 61 with 62's own pieces.
        let spliced_43 = splice(&linked_42, &linked_43).unwrap();
        assert!(is_linked(&spliced_43));
        assert_eq!(
            unpack(&link(&whole_41, &spliced_43).unwrap()).unwrap(),
            turns[2].0
        );
        // 64 then loses 63 (now linked to 61): linked to 61 too.
        let spliced_44 = splice(&spliced_43, &linked_44).unwrap();
        assert_eq!(
            unpack(&link(&whole_41, &spliced_44).unwrap()).unwrap(),
            turns[3].0
        );
        // 62 loses 61, whole: 62 becomes whole.
        let whole_42 = splice(&whole_41, &linked_42).unwrap();
        assert_eq!(whole_42[0], PIECES);
        assert_eq!(unpack(&whole_42).unwrap(), turns[1].0);
        // A dependent keeping fewer pieces than its base keeps of its own base (a branch off
        // an earlier turn): it keeps that many of the base's base.
        let mut short = linked_43.clone();
        short[HEADER..LINKED_HEADER].copy_from_slice(&1u32.to_le_bytes());
        let spliced = splice(&linked_42, &short).unwrap();
        assert_eq!(
            link(&whole_41, &spliced).unwrap(),
            link(&link(&whole_41, &linked_42).unwrap(), &short).unwrap()
        );
    }

    #[test]
    fn a_chain_put_back_at_once_is_the_chain_put_back_link_by_link() {
        let turns = chain(6);
        let root = turns[0].1.packed.to_vec();
        let mut values: Vec<Vec<u8>> = turns[1..].iter().map(|(_, a)| linked(a).unwrap()).collect();
        // One that keeps fewer pieces than its base keeps of its own base (a branch off an
        // earlier turn), in the middle.
        values[2][HEADER..LINKED_HEADER].copy_from_slice(&2u32.to_le_bytes());
        // The ones above keep what they keep of it, and one of their own pieces each.
        values[3][HEADER..LINKED_HEADER].copy_from_slice(&3u32.to_le_bytes());
        values[4][HEADER..LINKED_HEADER].copy_from_slice(&4u32.to_le_bytes());
        let mut step = root.clone();
        let mut wholes = Vec::new();
        for value in &values {
            step = link(&step, value).unwrap();
            wholes.push(step.clone());
        }
        for (n, whole) in wholes.iter().enumerate() {
            let chain: Vec<&[u8]> = values[..=n].iter().rev().map(Vec::as_slice).collect();
            assert_eq!(link_all(&root, &chain).unwrap(), *whole, "{n}");
        }
        assert_eq!(link_all(&root, &[]).unwrap(), root);
        assert!(link_all(&values[0], &[&values[1]]).is_err());
        let mut too_many = values[0].clone();
        too_many[HEADER..LINKED_HEADER].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(link_all(&root, &[&too_many]).is_err());
    }

    #[test]
    fn a_corrupt_link_is_an_error_not_a_panic() {
        let turns = chain(2);
        let base = turns[0].1.packed.to_vec();
        let value = linked(&turns[1].1).unwrap();
        let mut too_many = value.clone();
        too_many[HEADER..LINKED_HEADER].copy_from_slice(&u32::MAX.to_le_bytes());
        let cases: [(&[u8], &[u8], &str); 4] = [
            (&base, &too_many, "keeping"),
            (&value, &value, "not a transcript in pieces"),
            (&base, &base, "format 4"),
            (&base, &[], "format none"),
        ];
        for (base, value, says) in cases {
            let err = link(base, value).unwrap_err();
            assert!(err.contains(says), "{says}: {err}");
        }
        for end in 0..value.len() {
            let Ok(whole) = link(&base, &value[..end]) else {
                continue;
            };
            assert!(unpack(&whole).is_err(), "cut at {end}");
        }
        for end in 0..base.len() {
            // Cut past the pieces the value keeps, the base still holds them.
            if let Ok(whole) = link(&base[..end], &value)
                && let Ok(json) = unpack(&whole)
            {
                assert_eq!(json, turns[1].0, "base cut at {end}");
            }
            let _ = splice(&base[..end], &value);
            let _ = splice(&value, &base[..end]);
        }
    }
}
