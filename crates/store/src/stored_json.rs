//! A JSON column in its stored form: the text as it is, or packed (`event_pack.rs`) in a BLOB,
//! which SQLite does for a response's JSON (schema version 14) and its transcript (version 17)
//! when that makes them smaller. PostgreSQL keeps a response's JSON as TEXT, which TOAST
//! compresses, and stores a packed transcript in a BYTEA column of its own (version 19).

use std::borrow::Cow;
use std::sync::Arc;

/// A JSON value as written to its column.
#[derive(Debug, Clone)]
pub(crate) enum StoredJson {
    Text(Arc<str>),
    Packed(Arc<[u8]>),
}

impl StoredJson {
    /// `json` packed by `pack` when `packs` (the back end stores packed values) and `pack`
    /// finds that worth it; as it is otherwise.
    pub(crate) fn new(
        json: Arc<str>,
        packs: bool,
        pack: impl FnOnce(&Arc<str>) -> Option<Arc<[u8]>>,
    ) -> StoredJson {
        if !packs {
            return StoredJson::Text(json);
        }
        match pack(&json) {
            Some(packed) => StoredJson::Packed(packed),
            None => StoredJson::Text(json),
        }
    }

    pub(crate) fn as_ref(&self) -> StoredJsonRef<'_> {
        match self {
            StoredJson::Text(text) => StoredJsonRef::Text(text),
            StoredJson::Packed(packed) => StoredJsonRef::Packed(packed),
        }
    }

    /// The bytes it takes in its column.
    pub(crate) fn stored_len(&self) -> usize {
        match self {
            StoredJson::Text(text) => text.len(),
            StoredJson::Packed(packed) => packed.len(),
        }
    }
}

/// A JSON value as read from its column (SQLite reports each value's own storage class: a
/// BLOB is packed, TEXT is the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoredJsonRef<'a> {
    Text(&'a str),
    Packed(&'a [u8]),
}

impl<'a> StoredJsonRef<'a> {
    /// A value read as bytes: packed when its first byte is a packed format's (all under 9,
    /// which no JSON text begins with: not even whitespace, tab being 9), the JSON's UTF-8
    /// otherwise (PostgreSQL's TEXT transcripts, read as BYTEA: `transcript_column!`); `Err`
    /// when it is neither.
    pub(crate) fn from_bytes(bytes: &'a [u8]) -> Result<StoredJsonRef<'a>, String> {
        match bytes.first() {
            Some(&format) if format < b'\t' => Ok(StoredJsonRef::Packed(bytes)),
            _ => std::str::from_utf8(bytes)
                .map(StoredJsonRef::Text)
                .map_err(|_| "neither packed nor UTF-8 text".to_owned()),
        }
    }

    /// The JSON text; `Err` says what is wrong with a packed value.
    pub(crate) fn text(self) -> Result<Cow<'a, str>, String> {
        match self {
            StoredJsonRef::Text(text) => Ok(Cow::Borrowed(text)),
            StoredJsonRef::Packed(packed) => crate::event_pack::unpack(packed).map(Cow::Owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_only_where_the_back_end_packs_and_it_is_smaller() {
        let long: Arc<str> = Arc::from(format!("[{}]", r#"{"a":"bcd"},"#.repeat(2000)).as_str());
        let stored = StoredJson::new(Arc::clone(&long), true, |json| {
            crate::transcript_pack::pack(json)
        });
        let StoredJsonRef::Packed(packed) = stored.as_ref() else {
            panic!("not packed: {stored:?}");
        };
        assert!(stored.stored_len() < long.len());
        assert_eq!(StoredJsonRef::Packed(packed).text().unwrap(), &*long);
        let text = StoredJson::new(Arc::clone(&long), false, |json| {
            crate::transcript_pack::pack(json)
        });
        assert_eq!(text.as_ref(), StoredJsonRef::Text(&long));
        assert_eq!(text.stored_len(), long.len());
        let short = StoredJson::new(Arc::from("[]"), true, |json| {
            crate::transcript_pack::pack(json)
        });
        assert_eq!(short.as_ref(), StoredJsonRef::Text("[]"));
        assert_eq!(short.as_ref().text().unwrap(), "[]");
        assert!(StoredJsonRef::Packed(&[3, 1, 0]).text().is_err());
    }

    /// Bytes read back are packed when their first byte is a packed format's, the JSON's
    /// text otherwise, whatever JSON begins with; neither is an error.
    #[test]
    fn bytes_read_back_packed_or_as_text() {
        let long: Arc<str> = Arc::from(format!("[{}]", r#"{"a":"bcd"},"#.repeat(2000)).as_str());
        let packed = crate::transcript_pack::pack(&long).unwrap();
        let linked = [crate::transcript_link::LINKED, 0, 0];
        for bytes in [&packed[..], &[1, 2, 3], &[3, 0], &linked] {
            assert_eq!(
                StoredJsonRef::from_bytes(bytes),
                Ok(StoredJsonRef::Packed(bytes))
            );
        }
        assert_eq!(
            StoredJsonRef::from_bytes(&packed).unwrap().text().unwrap(),
            &*long
        );
        for text in [
            &*long,
            "[]",
            "{}",
            "\t[1]",
            "\n{}",
            " []",
            "\"é\u{1F600}\"",
            "",
        ] {
            assert_eq!(
                StoredJsonRef::from_bytes(text.as_bytes()),
                Ok(StoredJsonRef::Text(text))
            );
        }
        assert!(StoredJsonRef::from_bytes(&[b'[', 0xff, b']']).is_err());
    }
}
