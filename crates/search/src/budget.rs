//! Token budgets: `search_context_size`, `max_tokens` and `max_tokens_per_page`.
//!
//! A token is counted as four characters of snippet text (titles and URLs are free). Each
//! snippet is cut to the per-page budget, then the snippets together to the total budget:
//! hits are kept in order while budget remains, the last one kept may be cut shorter, and
//! hits after the budget runs out (less than [`MIN_SNIPPET_CHARS`] left) are dropped. The
//! first hit is always kept.

use protocol::request::{SearchContextSize, WebSearchTool};

use crate::backend::Hit;

/// Characters counted as one token.
pub const CHARS_PER_TOKEN: usize = 4;

/// Below this many characters of remaining budget no further hit is added: a snippet of
/// a few characters helps nobody.
pub const MIN_SNIPPET_CHARS: usize = 40;

/// The budgets of one `web_search` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Tokens across all hits of one call.
    pub max_tokens: u32,
    /// Tokens of one hit's snippet.
    pub max_tokens_per_page: u32,
}

impl Budget {
    /// The named sizes the docs give: low 300/300, medium 1000/1000, high 4000/4000.
    pub fn for_size(size: SearchContextSize) -> Budget {
        let tokens = match size {
            SearchContextSize::Low => 300,
            SearchContextSize::Medium => 1000,
            SearchContextSize::High => 4000,
        };
        Budget {
            max_tokens: tokens,
            max_tokens_per_page: tokens,
        }
    }

    /// The tool's budget: its `search_context_size` (medium when absent), each part
    /// overridden by an explicit `max_tokens` / `max_tokens_per_page`.
    pub fn for_tool(tool: &WebSearchTool) -> Budget {
        let base = Budget::for_size(
            tool.search_context_size
                .unwrap_or(SearchContextSize::Medium),
        );
        Budget {
            max_tokens: tool.max_tokens.unwrap_or(base.max_tokens),
            max_tokens_per_page: tool.max_tokens_per_page.unwrap_or(base.max_tokens_per_page),
        }
    }

    /// Cuts snippets to the per-page budget and the list to the total budget.
    pub fn apply(&self, hits: Vec<Hit>) -> Vec<Hit> {
        let per_page = chars(self.max_tokens_per_page);
        let mut remaining = chars(self.max_tokens);
        let mut kept = Vec::with_capacity(hits.len());
        for mut hit in hits {
            if remaining < MIN_SNIPPET_CHARS && !kept.is_empty() {
                break;
            }
            hit.snippet = truncate(&hit.snippet, per_page.min(remaining));
            remaining -= hit.snippet.chars().count().min(remaining);
            kept.push(hit);
        }
        kept
    }
}

fn chars(tokens: u32) -> usize {
    usize::try_from(tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(CHARS_PER_TOKEN)
}

/// `text` in at most `max_chars` characters: cut at a word boundary near the limit when
/// there is one, marked with `…`.
pub fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    if max_chars == 0 {
        return String::new();
    }
    // Room for the ellipsis.
    let keep = max_chars - 1;
    let end = text
        .char_indices()
        .nth(keep)
        .map_or(text.len(), |(index, _)| index);
    let head = &text[..end];
    // Prefer a word boundary within the last fifth of the kept text.
    let cut = head
        .rfind(char::is_whitespace)
        .filter(|&at| head[..at].chars().count() >= keep - keep / 5)
        .map_or(head, |at| &head[..at]);
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(snippet: &str) -> Hit {
        Hit {
            url: "https://example.com/".into(),
            snippet: snippet.into(),
            ..Hit::default()
        }
    }

    #[test]
    fn named_sizes_and_overrides() {
        let tool = |size, max_tokens, per_page| WebSearchTool {
            search_context_size: size,
            max_tokens,
            max_tokens_per_page: per_page,
            ..WebSearchTool::default()
        };
        assert_eq!(
            Budget::for_tool(&tool(Some(SearchContextSize::Low), None, None)),
            Budget {
                max_tokens: 300,
                max_tokens_per_page: 300
            }
        );
        assert_eq!(
            Budget::for_tool(&tool(None, None, None)),
            Budget::for_size(SearchContextSize::Medium)
        );
        assert_eq!(
            Budget::for_tool(&tool(Some(SearchContextSize::High), Some(50), None)),
            Budget {
                max_tokens: 50,
                max_tokens_per_page: 4000
            }
        );
        assert_eq!(
            Budget::for_tool(&tool(None, None, Some(7))),
            Budget {
                max_tokens: 1000,
                max_tokens_per_page: 7
            }
        );
    }

    #[test]
    fn truncation_respects_the_limit_and_words() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("short", 0), "");
        let cut = truncate("alpha beta gamma delta", 12);
        assert!(cut.chars().count() <= 12, "{cut}");
        assert_eq!(cut, "alpha beta…");
        // No space near the end: a hard cut.
        assert_eq!(truncate("abcdefghijklmnop", 5), "abcd…");
        // Multi-byte characters are never split.
        assert_eq!(truncate("ééééé", 3), "éé…");
    }

    #[test]
    fn total_budget_spans_hits() {
        let budget = Budget {
            max_tokens: 25,
            max_tokens_per_page: 10,
        };
        let text = "x".repeat(200);
        let kept = budget.apply(vec![hit(&text), hit(&text), hit(&text), hit(&text)]);
        let lengths: Vec<usize> = kept.iter().map(|h| h.snippet.chars().count()).collect();
        assert_eq!(lengths, vec![40, 40]);
        let budget = Budget {
            max_tokens: 30,
            max_tokens_per_page: 10,
        };
        let kept = budget.apply(vec![hit(&text), hit(&text), hit(&text), hit(&text)]);
        let lengths: Vec<usize> = kept.iter().map(|h| h.snippet.chars().count()).collect();
        assert_eq!(lengths, vec![40, 40, 40]);
        let budget = Budget {
            max_tokens: 25,
            max_tokens_per_page: 20,
        };
        let kept = budget.apply(vec![hit(&text), hit(&text), hit(&text)]);
        let lengths: Vec<usize> = kept.iter().map(|h| h.snippet.chars().count()).collect();
        assert_eq!(lengths, vec![80]);
    }

    #[test]
    fn the_first_hit_stays_even_without_budget() {
        let budget = Budget {
            max_tokens: 0,
            max_tokens_per_page: 0,
        };
        let kept = budget.apply(vec![hit("abc"), hit("def")]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].snippet, "");
    }
}
