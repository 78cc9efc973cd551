//! Prefixed random ids (`resp_…`, `msg_…`, `fc_…`, `mcpl_…`, `mcpr_…`).

/// A new id: the prefix, `_`, and a random UUID.
pub fn new_id(prefix: &str) -> String {
    let mut buf = [0; uuid::fmt::Hyphenated::LENGTH];
    let uuid = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf);
    prefixed(prefix, uuid)
}

/// A call id for a call the upstream gave none (`call_…`, no dashes, like OpenAI's).
pub fn new_call_id() -> String {
    let mut buf = [0; uuid::fmt::Simple::LENGTH];
    let uuid = uuid::Uuid::new_v4().simple().encode_lower(&mut buf);
    prefixed("call", uuid)
}

/// `prefix_uuid` in one allocation of the right size (no `fmt` machinery).
fn prefixed(prefix: &str, uuid: &str) -> String {
    let mut id = String::with_capacity(prefix.len() + 1 + uuid.len());
    id.push_str(prefix);
    id.push('_');
    id.push_str(uuid);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_prefix_and_a_lowercase_uuid() {
        let id = new_id("resp");
        let uuid = id.strip_prefix("resp_").unwrap_or_default();
        assert_eq!(uuid.len(), 36, "{id}");
        assert_eq!(
            uuid::Uuid::parse_str(uuid).map(|u| u.to_string()),
            Ok(uuid.to_owned())
        );
        let call = new_call_id();
        let hex = call.strip_prefix("call_").unwrap_or_default();
        assert_eq!(hex.len(), 32, "{call}");
        assert!(
            hex.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{call}"
        );
        assert_ne!(new_id("resp"), id);
    }
}
