//! The open-file limit: raised to what the system allows at start, and the default cap on
//! connections derived from it (every connection is a descriptor; the rest of the server —
//! the store, outbound HTTP, MCP sessions, sandbox processes — needs descriptors too).

use rustix::process::{Resource, getrlimit, setrlimit};

/// The cap on connections when the operator sets none: half the open-file limit, within
/// 16 ..= 16 384 (1 024 when the limit is unknown or unlimited).
pub fn default_max_connections(open_files: Option<u64>) -> usize {
    match open_files {
        Some(limit) => usize::try_from(limit / 2)
            .unwrap_or(usize::MAX)
            .clamp(16, 16_384),
        None => 1024,
    }
}

/// Descriptors kept for the rest of the server when the operator's cap is above the limit.
const RESERVED: u64 = 64;

/// The operator's cap (or the default), lowered to leave [`RESERVED`] descriptors when it is
/// above the open-file limit; the second value says whether it was lowered.
pub fn max_connections(configured: Option<usize>, open_files: Option<u64>) -> (usize, bool) {
    let Some(configured) = configured else {
        return (default_max_connections(open_files), false);
    };
    match open_files {
        Some(limit) if configured as u64 + RESERVED > limit => {
            let lowered = usize::try_from(limit.saturating_sub(RESERVED))
                .unwrap_or(1)
                .max(1);
            (lowered, true)
        }
        _ => (configured, false),
    }
}

/// The soft limit on open files now (`None`: unlimited).
pub fn open_files_limit() -> Option<u64> {
    getrlimit(Resource::Nofile).current
}

/// Raises the soft limit on open files to the hard limit; returns the soft limit then.
pub fn raise_open_files_limit() -> std::io::Result<Option<u64>> {
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )?;
    }
    Ok(open_files_limit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_descriptors_for_the_rest() {
        assert_eq!(default_max_connections(Some(1024)), 512);
        assert_eq!(default_max_connections(Some(1 << 20)), 16_384);
        assert_eq!(default_max_connections(Some(10)), 16);
        assert_eq!(default_max_connections(None), 1024);
        assert_eq!(max_connections(None, Some(1024)), (512, false));
        assert_eq!(max_connections(Some(900), Some(1024)), (900, false));
        assert_eq!(max_connections(Some(1000), Some(1024)), (960, true));
        assert_eq!(max_connections(Some(5000), None), (5000, false));
    }

    #[test]
    fn raising_never_lowers_the_limit() {
        let before = open_files_limit();
        let after = raise_open_files_limit().ok().flatten();
        assert!(
            after >= before || after.is_none(),
            "{before:?} -> {after:?}"
        );
    }
}
