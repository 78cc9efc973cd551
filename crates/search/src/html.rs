//! Small HTML helpers: page text for the local index (through `html2text`), the title and
//! publication date of a page, and cleaning the inline markup some services put in
//! titles and snippets (`<strong>`, `&amp;`). Everything but the page text is read with
//! one HTML parser (html5ever, through dom_query), which also decodes character references.

use dom_query::Document;

/// Width given to `html2text`; wide so paragraphs stay on one line.
const TEXT_WIDTH: usize = 10_000;

/// The readable text of an HTML page, whitespace tidied (one blank line between blocks).
pub fn page_text(html: &str) -> String {
    let text = html2text::config::plain_no_decorate()
        .allow_width_overflow()
        .string_from_read(html.as_bytes(), TEXT_WIDTH)
        .unwrap_or_else(|_| Document::from(html).text().to_string());
    tidy_lines(&text)
}

/// Trims every line, collapses runs of spaces and of blank lines.
pub fn tidy_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for line in text.lines() {
        let line = collapse_whitespace(line);
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

/// One line of text from an HTML fragment: tags removed, character references decoded,
/// whitespace collapsed.
pub fn clean_inline(text: &str) -> String {
    if text.contains(['<', '&']) {
        collapse_whitespace(&Document::fragment(text).text())
    } else {
        collapse_whitespace(text)
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of the page's first `<title>` element, whitespace collapsed; `None` when there
/// is none or it is blank.
pub fn title(document: &Document) -> Option<String> {
    let first = document.try_select("title")?.nodes().first()?.text();
    let title = collapse_whitespace(&first);
    (!title.is_empty()).then_some(title)
}

/// The `content` of the first `<meta>` whose `property`/`name`/`itemprop` is one of
/// `names` (compared without ASCII case).
pub fn meta_content(document: &Document, names: &[&str]) -> Option<String> {
    document
        .try_select("meta")?
        .nodes()
        .iter()
        .find_map(|meta| {
            let named = ["property", "name", "itemprop"].iter().any(|attribute| {
                meta.attr(attribute)
                    .is_some_and(|value| names.iter().any(|name| value.eq_ignore_ascii_case(name)))
            });
            if named {
                meta.attr("content").map(|content| content.to_string())
            } else {
                None
            }
        })
}

/// An `<img>` of a page, as written (the `src` may be relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageImage {
    pub src: String,
    pub alt: String,
    pub title: Option<String>,
    pub width: Option<u32>,
    pub height: Option<u32>,
}

/// The most images kept of one page.
const MAX_PAGE_IMAGES: usize = 200;

/// The page's images that have alt text (what an image search can match), in order,
/// without repeats; `src` (or `data-src`) as written.
pub fn images(document: &Document) -> Vec<PageImage> {
    let Some(selection) = document.try_select("img") else {
        return Vec::new();
    };
    let mut images: Vec<PageImage> = Vec::new();
    for img in selection.nodes() {
        let attribute = |name: &str| {
            img.attr(name)
                .map(|value| collapse_whitespace(&value))
                .filter(|value| !value.is_empty())
        };
        let (Some(src), Some(alt)) = (
            attribute("src").or_else(|| attribute("data-src")),
            attribute("alt"),
        ) else {
            continue;
        };
        if images.iter().any(|image| image.src == src) {
            continue;
        }
        let pixels =
            |name: &str| attribute(name).and_then(|v| v.trim_end_matches("px").parse().ok());
        images.push(PageImage {
            src,
            alt,
            title: attribute("title"),
            width: pixels("width"),
            height: pixels("height"),
        });
        if images.len() == MAX_PAGE_IMAGES {
            break;
        }
    }
    images
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
    fn every_character_reference_is_decoded_as_a_browser_would() {
        // The HTML parser's rule, the same as fetch_url's for titles: every named reference
        // (with or without its `;` where HTML allows that), numeric ones with the windows-1252
        // remapping of 128..159.
        assert_eq!(
            clean_inline("&copy; 2024 &eacute;t&eacute; &#150; &copy 1999 &frac12;"),
            "© 2024 été – © 1999 ½"
        );
        let page = Document::from("<title>Caf&eacute; &amp; <b>bar</b></title>");
        // A title holds text only: `<b>` in it is text, as browsers show it.
        assert_eq!(title(&page).as_deref(), Some("Café & <b>bar</b>"));
    }

    #[test]
    fn title_and_meta() {
        let html = r#"<html><head><TITLE> A &amp; B </TITLE>
            <meta name="description" content="x">
            <meta property="article:published_time" content="2024-05-06T07:00:00Z" />
            </head><body><p>Hi</p></body></html>"#;
        let html = Document::from(html);
        assert_eq!(title(&html).as_deref(), Some("A & B"));
        assert_eq!(
            meta_content(&html, &["article:published_time"]).as_deref(),
            Some("2024-05-06T07:00:00Z")
        );
        assert_eq!(meta_content(&html, &["date"]), None);
        assert_eq!(title(&Document::from("<p>no title</p>")), None);
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
    fn images_with_alt_text() {
        let page = Document::from(
            r#"<p><img src="/a.png" alt=" A  red &amp; blue kite " width="640" height="480px">
               <img src="/b.png"><img data-src="c.jpg" alt="C" title="Cee">
               <img src="/a.png" alt="again"></p>"#,
        );
        let found = images(&page);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].src, "/a.png");
        assert_eq!(found[0].alt, "A red & blue kite");
        assert_eq!((found[0].width, found[0].height), (Some(640), Some(480)));
        assert_eq!(found[1].src, "c.jpg");
        assert_eq!(found[1].title.as_deref(), Some("Cee"));
    }

    #[test]
    fn lines_are_tidied() {
        assert_eq!(tidy_lines("  a  b \n\n\n c\n"), "a b\n\nc");
    }
}
