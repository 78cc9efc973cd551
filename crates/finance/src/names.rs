//! Matching company names the model writes ("apple", "Microsoft Corp") against listed
//! names ("Apple Inc.", "MICROSOFT CORP").

/// Words that do not tell companies apart.
const FILLER: &[&str] = &[
    "the",
    "inc",
    "incorporated",
    "corp",
    "corporation",
    "co",
    "company",
    "ltd",
    "limited",
    "plc",
    "llc",
    "lp",
    "sa",
    "ag",
    "nv",
    "se",
    "group",
    "holdings",
    "holding",
    "class",
    "common",
    "stock",
    "shares",
    "com",
    "de",
];

/// Lower case words without punctuation and filler.
pub fn normalize(name: &str) -> String {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !FILLER.contains(&w.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// How well `listed` matches what was asked (`wanted`, normalized): 3 the same name, 2 it
/// starts with it, 1 it contains it as words, 0 no match.
pub fn score(wanted: &str, listed: &str) -> u8 {
    let listed = normalize(listed);
    if wanted.is_empty() || listed.is_empty() {
        return 0;
    }
    if listed == wanted {
        3
    } else if listed.starts_with(&format!("{wanted} ")) {
        2
    } else if format!(" {listed} ").contains(&format!(" {wanted} ")) {
        1
    } else {
        0
    }
}

/// Whether text looks like a ticker (`AAPL`, `brk.b`, `BF-B`): one word of letters and
/// digits, at most 6, with an optional class suffix.
pub fn ticker_shaped(text: &str) -> bool {
    let text = text.trim();
    let (head, tail) = match text.split_once(['.', '-', '/']) {
        Some((head, tail)) => (head, Some(tail)),
        None => (text, None),
    };
    let word = |w: &str, max: usize| {
        !w.is_empty() && w.len() <= max && w.chars().all(|c| c.is_ascii_alphanumeric())
    };
    word(head, 6)
        && head.chars().any(|c| c.is_ascii_alphabetic())
        && tail.is_none_or(|t| word(t, 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_without_filler() {
        assert_eq!(normalize("Apple Inc."), "apple");
        assert_eq!(score("apple", "Apple Inc."), 3);
        assert_eq!(score("microsoft", "MICROSOFT CORP"), 3);
        assert_eq!(score("bank", "Bank of America Corp"), 2);
        assert_eq!(score("america", "Bank of America Corp"), 1);
        assert_eq!(score("apple", "Pineapple Express Inc"), 0);
        assert!(ticker_shaped("AAPL") && ticker_shaped("brk.b") && ticker_shaped("BF-B"));
        assert!(!ticker_shaped("Apple Inc") && !ticker_shaped("123") && !ticker_shaped("TOOLONGX"));
    }
}
