//! Citations: `[n]` markers in an answer become `url_citation` annotations for the sources
//! built-in tools numbered across the run.

use protocol::output::Annotation;

use crate::hosted::Source;

/// `url_citation` annotations for the `[n]` markers of an answer whose `n` names a source.
/// Offsets count characters (Unicode scalar values), like the SDKs' string indices; a marker
/// like `[1][2]` or `[1, 2]` cites each number.
pub fn citations(text: &str, sources: &[Source]) -> Vec<Annotation> {
    if sources.is_empty() {
        return Vec::new();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut annotations = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '[' {
            i += 1;
            continue;
        }
        let Some(close) = chars[i + 1..]
            .iter()
            .position(|c| *c == ']')
            .map(|p| i + 1 + p)
        else {
            break;
        };
        let inner: String = chars[i + 1..close].iter().collect();
        let numbers: Option<Vec<u64>> = inner
            .split(',')
            .map(|n| n.trim().parse::<u64>().ok())
            .collect();
        match numbers {
            Some(numbers) if !inner.is_empty() && close - i <= 24 => {
                for number in numbers {
                    if let Some(source) = sources.iter().find(|s| s.number == number) {
                        annotations.push(Annotation::UrlCitation {
                            url: source.url.clone(),
                            title: Some(source.title.clone()),
                            start_index: i as u64,
                            end_index: (close + 1) as u64,
                        });
                    }
                }
                i = close + 1;
            }
            _ => i += 1,
        }
    }
    annotations
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(number: u64, url: &str) -> Source {
        Source {
            number,
            url: url.to_owned(),
            title: format!("title {number}"),
        }
    }

    fn spans(text: &str, sources: &[Source]) -> Vec<(String, u64, u64)> {
        citations(text, sources)
            .into_iter()
            .map(|a| match a {
                Annotation::UrlCitation {
                    url,
                    start_index,
                    end_index,
                    ..
                } => (url, start_index, end_index),
            })
            .collect()
    }

    #[test]
    fn markers_that_name_a_source_become_citations_at_character_offsets() {
        let sources = [source(1, "https://a"), source(2, "https://b")];
        let text = "Größe ist wichtig [1]. Beides [1][2], auch [2, 1]; nicht [3] oder [x] [].";
        let found = spans(text, &sources);
        let at = |needle: &str| text[..text.find(needle).unwrap()].chars().count() as u64;
        assert_eq!(
            found,
            [
                ("https://a".to_owned(), at("[1]."), at("[1].") + 3),
                ("https://a".to_owned(), at("[1][2]"), at("[1][2]") + 3),
                ("https://b".to_owned(), at("[2],"), at("[2],") + 3),
                ("https://b".to_owned(), at("[2, 1]"), at("[2, 1]") + 6),
                ("https://a".to_owned(), at("[2, 1]"), at("[2, 1]") + 6),
            ]
        );
        // The span is the marker itself.
        let chars: Vec<char> = text.chars().collect();
        let (_, start, end) = &found[0];
        assert_eq!(
            chars[*start as usize..*end as usize]
                .iter()
                .collect::<String>(),
            "[1]"
        );
        assert!(citations(text, &[]).is_empty());
    }
}
