//! Internally tagged unions read in one pass when the object says what it is first.
//!
//! serde buffers an internally tagged enum's object to find its `type`, and loses the field
//! path inside; [`strict`]'s way keeps the path by buffering the object as a `Value` and
//! reading it again through a nested path-tracking pass — every string and schema in it built
//! twice (a request's tools and chat history spent ~270 k instructions on it:
//! docs/benchmarks.md, "Issue 18, twenty-seventh pass"). SDKs write `type` first (and a chat
//! message's first key is often `role`, which only a message has), so [`read`] reads the first
//! key: when it decides the variant, the rest of the object is read where it is, under the
//! caller's path tracking, through [`Rest`]; otherwise the object is buffered and read as
//! before ([`from_buffered`]). What is accepted and refused is the same either way; a later
//! `type` naming the same variant is skipped (a buffered object kept the last one), any other
//! is refused at `type`.

use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::strict;

/// A union of objects told apart by their `type`.
pub(crate) trait Tagged: Sized {
    /// What the value should be, for the error when it is not an object ("a tool object").
    const EXPECTED: &'static str;

    /// The variant named `tag`, read from `rest`: the rest of its object (a map).
    fn read_variant<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error>;

    /// The variant an object beginning with `key` (not `type`) must be, if that key decides it.
    fn variant_of_first_key(_key: &str) -> Option<&'static str> {
        None
    }

    /// The variant of an object without `type` (or with a null one), if the union has one.
    fn default_variant(_object: &Map<String, Value>) -> Option<&'static str> {
        None
    }
}

/// Reads a `T` (see the module's comment); anything but an object is refused as "invalid
/// type: {kind}, expected {T::EXPECTED}", the words [`strict::kind`] uses.
pub(crate) fn read<'de, D: Deserializer<'de>, T: Tagged>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_any(TaggedVisitor(PhantomData))
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<T: Tagged> TaggedVisitor<T> {
    fn refuse<E: serde::de::Error>(&self, kind: &str) -> Result<T, E> {
        Err(E::custom(format!(
            "invalid type: {kind}, expected {}",
            T::EXPECTED
        )))
    }
}

impl<'de, T: Tagged> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(T::EXPECTED)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return from_buffered(Map::new());
        };
        if first == "type" {
            let tag: Value = map.next_value()?;
            if let Value::String(tag) = tag {
                let rest = Rest::new(map, None, tag.clone());
                return T::read_variant(&tag, MapAccessDeserializer::new(rest));
            }
            // A null `type` (the default variant) or one of the wrong kind: as buffered.
            return buffer(map, first, tag).and_then(from_buffered);
        }
        if let Some(tag) = T::variant_of_first_key(&first) {
            let rest = Rest::new(map, Some(first), tag.to_owned());
            return T::read_variant(tag, MapAccessDeserializer::new(rest));
        }
        let value = map.next_value()?;
        buffer(map, first, value).and_then(from_buffered)
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<T, E> {
        self.refuse("a string")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        self.refuse("an array")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
        self.refuse("null")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<T, E> {
        self.refuse("null")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<T, E> {
        self.refuse("a boolean")
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<T, E> {
        self.refuse("a number")
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<T, E> {
        self.refuse("a number")
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<T, E> {
        self.refuse("a number")
    }
}

/// The object's first entry and the rest of it as a map (a later key replaces an earlier one,
/// as `Value`'s own reading does).
fn buffer<'de, A: MapAccess<'de>>(
    mut map: A,
    first: String,
    value: Value,
) -> Result<Map<String, Value>, A::Error> {
    let mut buffered = Map::new();
    buffered.insert(first, value);
    while let Some((key, value)) = map.next_entry::<String, Value>()? {
        buffered.insert(key, value);
    }
    Ok(buffered)
}

/// Reads a buffered object as [`strict`] does: its `type` taken out, the rest read again by a
/// nested path-tracking pass, whose path the error carries out.
fn from_buffered<T: Tagged, E: serde::de::Error>(mut object: Map<String, Value>) -> Result<T, E> {
    let default = T::default_variant(&object);
    let tag = strict::take_tag(&mut object, default)?;
    let mut track = serde_path_to_error::Track::new();
    let rest = serde_path_to_error::Deserializer::new(Value::Object(object), &mut track);
    T::read_variant(&tag, rest).map_err(|err| strict::error_at(&track.path().to_string(), err))
}

/// The rest of an object whose variant is known: a first key already read is handed out
/// again, and a later `type` naming the same variant is skipped (a null one too when the
/// variant was decided by the first key, as a buffered object's null `type` means the
/// default); any other `type` is refused.
struct Rest<A> {
    map: A,
    pending: Option<String>,
    tag: String,
    /// The variant came from the first key, not from a `type`.
    inferred: bool,
}

impl<A> Rest<A> {
    fn new(map: A, pending: Option<String>, tag: String) -> Rest<A> {
        let inferred = pending.is_some();
        Rest {
            map,
            pending,
            tag,
            inferred,
        }
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Rest<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if let Some(key) = self.pending.take() {
            let key: serde::de::value::StringDeserializer<A::Error> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
        let mut seed = Some(seed);
        loop {
            match self.map.next_key_seed(NotType { seed: &mut seed })? {
                None => return Ok(None),
                Some(Some(key)) => return Ok(Some(key)),
                Some(None) => match self.map.next_value::<Value>()? {
                    Value::String(tag) if tag == self.tag => {}
                    Value::Null if self.inferred => {}
                    other => {
                        let message = if self.inferred {
                            format!(
                                "`type` is {other}, but the object's first key makes it a \"{}\"",
                                self.tag
                            )
                        } else {
                            format!("`type` is given twice: \"{}\" and {other}", self.tag)
                        };
                        return Err(strict::error_at("type", message));
                    }
                },
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key: `None` when it is `type`, else the key as `seed` reads it.
struct NotType<'a, S> {
    seed: &'a mut Option<S>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for NotType<'_, S> {
    type Value = Option<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for NotType<'_, S> {
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        if key == "type" {
            return Ok(None);
        }
        match self.seed.take() {
            Some(seed) => {
                let key: StrDeserializer<'_, E> = key.into_deserializer();
                seed.deserialize(key).map(Some)
            }
            None => Err(E::custom("a key was read twice")),
        }
    }
}
