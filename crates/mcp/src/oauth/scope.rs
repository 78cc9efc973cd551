//! Which scopes to ask for: the MCP spec's scope selection strategy, step-up on
//! `insufficient_scope`, and `offline_access` when the authorization server offers it.

/// The scopes of the first authorization (MCP spec, "Scope Selection Strategy"): the
/// `scope` of the 401 challenge when there is one, else every scope of the protected
/// resource metadata's `scopes_supported`, else none (the `scope` parameter is omitted).
pub fn select(
    challenge_scope: Option<&str>,
    scopes_supported: Option<&[String]>,
) -> Option<String> {
    if let Some(scope) = challenge_scope.map(str::trim).filter(|s| !s.is_empty()) {
        return Some(normalize(scope));
    }
    let supported = scopes_supported?;
    let joined = supported
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (!joined.is_empty()).then(|| normalize(&joined))
}

/// The scopes of a step-up authorization after a 403 `insufficient_scope`: what was asked
/// for before plus what the challenge requires, so no granted permission is lost.
pub fn step_up(previous: Option<&str>, required: &str) -> String {
    union(previous.unwrap_or_default(), required)
}

/// SEP-2207: a client that wants a refresh token may add `offline_access` when the
/// authorization server lists it in `scopes_supported` (and must not otherwise). Only added
/// to a non-empty request: an omitted `scope` means the server's default, which must stay.
pub fn with_offline_access(scope: Option<String>, server_lists_it: bool) -> Option<String> {
    match scope {
        Some(scope) if server_lists_it => Some(union(&scope, "offline_access")),
        other => other,
    }
}

/// Space-separated scopes of `a` then those of `b` not already in `a`.
pub fn union(a: &str, b: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for scope in a.split_whitespace().chain(b.split_whitespace()) {
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    out.join(" ")
}

fn normalize(scope: &str) -> String {
    union(scope, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_challenge_scope_comes_first() {
        let supported = strings(&["mcp:basic", "mcp:read", "mcp:write"]);
        assert_eq!(
            select(Some("mcp:basic"), Some(&supported)).as_deref(),
            Some("mcp:basic")
        );
        assert_eq!(
            select(None, Some(&supported)).as_deref(),
            Some("mcp:basic mcp:read mcp:write")
        );
        assert_eq!(
            select(Some("  "), Some(&supported)).as_deref(),
            Some("mcp:basic mcp:read mcp:write")
        );
        assert_eq!(select(None, None), None);
        assert_eq!(select(None, Some(&[])), None);
        assert_eq!(select(Some(" a  b a "), None).as_deref(), Some("a b"));
    }

    #[test]
    fn step_up_keeps_what_was_granted() {
        assert_eq!(
            step_up(Some("mcp:basic"), "mcp:basic mcp:write"),
            "mcp:basic mcp:write"
        );
        assert_eq!(step_up(Some("a b"), "c"), "a b c");
        assert_eq!(step_up(None, "c"), "c");
    }

    #[test]
    fn offline_access_only_when_listed_and_asked_for_something() {
        assert_eq!(
            with_offline_access(Some("mcp:basic".into()), true).as_deref(),
            Some("mcp:basic offline_access")
        );
        assert_eq!(
            with_offline_access(Some("mcp:basic".into()), false).as_deref(),
            Some("mcp:basic")
        );
        assert_eq!(
            with_offline_access(Some("offline_access a".into()), true).as_deref(),
            Some("offline_access a")
        );
        assert_eq!(with_offline_access(None, true), None);
    }
}
