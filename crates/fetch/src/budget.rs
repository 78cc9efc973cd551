//! The token budget of one call: how much of each page the model gets.
//!
//! Tokens are approximated as characters / [`CHARS_PER_TOKEN`] (close enough for English
//! prose with common tokenizers, generous for code and CJK). The call's budget is shared by
//! its pages: evenly, except that what a short page does not use goes to the longer ones.

/// Characters per approximate token.
pub(crate) const CHARS_PER_TOKEN: usize = 4;

/// Shares `total` (characters) among pages of the given lengths (characters): every page
/// gets an equal share, a page shorter than its share keeps its length, and the rest is
/// shared again among the longer pages. The result has one entry per page, each at most
/// its length, and sums to at most `total`.
pub(crate) fn allot(lengths: &[usize], total: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let mut shares = vec![0; lengths.len()];
    let mut left = total;
    for (done, &i) in order.iter().enumerate() {
        let pages_left = lengths.len() - done;
        let share = (left / pages_left).min(lengths[i]);
        shares[i] = share;
        left -= share;
    }
    shares
}

/// `text` cut to at most `max_chars` characters, preferring to end at a paragraph break,
/// else a line break, else a space, found in the last fifth of the allowed length; `None`
/// when it already fits.
pub(crate) fn trim(text: &str, max_chars: usize) -> Option<&str> {
    let (cut, _) = text.char_indices().nth(max_chars)?;
    let head = &text[..cut];
    let floor = head
        .char_indices()
        .nth(max_chars - max_chars / 5)
        .map_or(0, |(at, _)| at);
    let window = &head[floor..];
    let end = window
        .rfind("\n\n")
        .or_else(|| window.rfind('\n'))
        .or_else(|| window.rfind(' '))
        .map_or(cut, |at| floor + at);
    Some(head[..end].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_even_split_when_every_page_is_long() {
        assert_eq!(allot(&[1000, 5000, 800], 1500), vec![500, 500, 500]);
        assert_eq!(allot(&[10, 10, 10], 10), vec![3, 3, 4]);
    }

    #[test]
    fn short_pages_leave_their_share_to_long_ones() {
        // 900 / 3 = 300 each; the 100-character page keeps 100, so 400 each for the others.
        assert_eq!(allot(&[100, 5000, 5000], 900), vec![100, 400, 400]);
        // Everything fits.
        assert_eq!(allot(&[100, 200], 1000), vec![100, 200]);
        assert_eq!(allot(&[], 1000), Vec::<usize>::new());
        assert_eq!(allot(&[50, 10_000], 0), vec![0, 0]);
    }

    #[test]
    fn trimming_keeps_text_that_fits() {
        assert_eq!(trim("short", 5), None);
        assert_eq!(trim("", 0), None);
        assert_eq!(trim("short", 4), Some("shor"));
    }

    #[test]
    fn trimming_ends_at_a_break_and_respects_characters() {
        let text = "First paragraph here.\n\nSecond paragraph that goes on and on.";
        assert_eq!(trim(text, 25), Some("First paragraph here."));
        assert_eq!(
            trim("one two three four five", 20),
            Some("one two three four")
        );
        // No break in the window: a hard cut, on a character boundary.
        assert_eq!(trim("ééééééééééé", 5), Some("ééééé"));
        assert_eq!(trim("日本語のテキスト", 3), Some("日本語"));
    }
}
