//! Prefixed ids (`resp_…`, `msg_…`, `fc_…`, `mcpl_…`, `mcpr_…`): the prefix and a UUID.
//!
//! The UUIDs are version 7 (RFC 9562): 48 bits of Unix milliseconds, then a counter that starts
//! at a random value each millisecond, then random bits (74 bits that are not the time, at
//! least 32 of them fresh for every id). Ids minted by one process sort in the order they were
//! minted. They key the store's tables (responses, event chunks, items): a new key lands at the
//! right edge of each index, on the page the previous run wrote, instead of on a random leaf
//! (see docs/benchmarks.md, "Issue 18, sixth pass"). Ids are not secrets: every read checks the
//! caller's project, and API keys are not made here. Clients see the same shape as before
//! (`resp_` and a lowercase hyphenated UUID) and nothing parses the UUID back.

/// A new id: the prefix, `_`, and a time-ordered UUID (increasing within the process).
pub fn new_id(prefix: &str) -> String {
    let mut buf = [0; uuid::fmt::Hyphenated::LENGTH];
    let uuid = uuid::Uuid::now_v7().hyphenated().encode_lower(&mut buf);
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

    /// Ids are UUID version 7: unique, and in the order they were minted within the process
    /// (the string order is the time order), also when minted on several threads at once.
    #[test]
    fn ids_are_time_ordered_and_unique() {
        let threads: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(|| (0..2_000).map(|_| new_id("msg")).collect::<Vec<_>>()))
            .collect();
        let mut all = std::collections::BTreeSet::new();
        for thread in threads {
            let ids = thread.join().unwrap_or_default();
            assert_eq!(ids.len(), 2_000);
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "not increasing");
            for id in ids {
                let uuid = id.strip_prefix("msg_").unwrap_or_default();
                let parsed = uuid::Uuid::parse_str(uuid).unwrap_or_default();
                assert_eq!(parsed.get_version_num(), 7, "{id}");
                assert!(all.insert(id));
            }
        }
        assert_eq!(all.len(), 8_000);
        let before = new_id("resp");
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(new_id("resp") > before);
    }
}
