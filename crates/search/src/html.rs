//! Small HTML helpers: page text for the local index (through `html2text`), the title and
//! publication date of a page, and cleaning the inline markup some services put in
//! titles and snippets (`<strong>`, `&amp;`).

/// Width given to `html2text`; wide so paragraphs stay on one line.
const TEXT_WIDTH: usize = 10_000;

/// The readable text of an HTML page, whitespace tidied (one blank line between blocks).
pub fn page_text(html: &str) -> String {
    let text = html2text::config::plain_no_decorate()
        .allow_width_overflow()
        .string_from_read(html.as_bytes(), TEXT_WIDTH)
        .unwrap_or_else(|_| strip_tags(html));
    tidy_lines(&text)
}

/// Trims every line, collapses runs of spaces and of blank lines.
pub fn tidy_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for line in text.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
    }
    out
}

/// One line of text: tags removed, entities decoded, whitespace collapsed.
pub fn clean_inline(text: &str) -> String {
    let stripped = if text.contains('<') {
        strip_tags(text)
    } else {
        text.to_owned()
    };
    decode_entities(&stripped)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Removes `<…>` tags that look like tags (`<b>`, `</strong>`, `<br/>`, `<!-- -->`); a
/// `<` that starts no tag (`a < b`) stays.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let starts_tag = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!');
        match after.find('>') {
            Some(end) if starts_tag => rest = &after[end + 1..],
            _ => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Decodes the named entities search services use and numeric ones.
pub fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let decoded = after
            .find(';')
            .filter(|&end| end <= 10)
            .and_then(|end| entity(&after[..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    let named = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "rsquo" => '’',
        "lsquo" => '‘',
        "rdquo" => '”',
        "ldquo" => '“',
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            return char::from_u32(code);
        }
    };
    Some(named)
}

/// The text of the first `<title>` element.
pub fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = clean_inline(&html[start..end]);
    (!title.is_empty()).then_some(title)
}

/// The `content` of the first `<meta>` whose `property`/`name`/`itemprop` is one of
/// `names` (compared without case).
pub fn meta_content(html: &str, names: &[&str]) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let mut from = 0;
    while let Some(offset) = lower[from..].find("<meta") {
        let start = from + offset;
        let end = start + lower[start..].find('>')?;
        let tag = &html[start..end];
        let tag_lower = &lower[start..end];
        let named = ["property", "name", "itemprop"].iter().any(|attribute| {
            attribute_value(tag_lower, attribute)
                .is_some_and(|value| names.iter().any(|name| value == *name))
        });
        if named && let Some(content) = attribute_value(tag, "content") {
            return Some(decode_entities(&content));
        }
        from = end;
    }
    None
}

/// The value of `attribute="…"` (or `'…'`) inside one tag. `tag` and `attribute` are
/// matched as given; pass lower-case text to match without case.
fn attribute_value(tag: &str, attribute: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(offset) = lower[from..].find(attribute) {
        let at = from + offset;
        from = at + attribute.len();
        let before_ok = lower[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_whitespace);
        let rest = lower[from..].trim_start();
        if !before_ok || !rest.starts_with('=') {
            continue;
        }
        let value_start = tag.len() - rest.len() + 1;
        let value = tag[value_start..].trim_start();
        let quote = value.chars().next()?;
        if quote == '"' || quote == '\'' {
            let inner = &value[1..];
            return inner.find(quote).map(|end| inner[..end].to_owned());
        }
        let end = value
            .find(|c: char| c.is_whitespace() || c == '/')
            .unwrap_or(value.len());
        return Some(value[..end].to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_markup_is_cleaned() {
        assert_eq!(
            clean_inline("The <strong>Rust</strong>  book &amp; more&#33; &#x41; a < b"),
            "The Rust book & more! A a < b"
        );
        assert_eq!(clean_inline("R&D &unknown; &"), "R&D &unknown; &");
    }

    #[test]
    fn title_and_meta() {
        let html = r#"<html><head><TITLE> A &amp; B </TITLE>
            <meta name="description" content="x">
            <meta property="article:published_time" content="2024-05-06T07:00:00Z" />
            </head><body><p>Hi</p></body></html>"#;
        assert_eq!(title(html).as_deref(), Some("A & B"));
        assert_eq!(
            meta_content(html, &["article:published_time"]).as_deref(),
            Some("2024-05-06T07:00:00Z")
        );
        assert_eq!(meta_content(html, &["date"]), None);
        assert_eq!(title("<p>no title</p>"), None);
    }

    #[test]
    fn page_text_drops_markup() {
        let text = page_text(
            "<html><head><style>p{color:red}</style><script>var x=1;</script></head>\
             <body><h1>Head</h1><p>First   para.</p><p>Second</p></body></html>",
        );
        assert!(text.contains("Head"), "{text}");
        assert!(text.contains("First para."), "{text}");
        assert!(text.contains("Second"), "{text}");
        assert!(!text.contains("color:red"), "{text}");
        assert!(!text.contains("var x"), "{text}");
        assert!(!text.contains('<'), "{text}");
    }

    #[test]
    fn lines_are_tidied() {
        assert_eq!(tidy_lines("  a  b \n\n\n c\n"), "a b\n\nc");
    }
}
