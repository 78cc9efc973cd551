//! From a downloaded body to clean text: the kind of content, its character set, and the
//! text a model should read (article Markdown for HTML, the text layer of a PDF, pretty
//! JSON, plain text as it is). Everything here is synchronous and CPU-bound: the tool runs
//! it on the blocking pool, behind `catch_unwind` (see [`super`]).

use std::borrow::Cow;

use dom_query::Document;
use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// What a body is, decided from its `Content-Type` and, when that is missing or generic,
/// from its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Html,
    Pdf,
    Json,
    Text,
    /// Not text we can read (images, video, archives…); holds the media type.
    Unsupported(String),
}

/// The text of one page and the title it gave itself, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    pub(crate) title: Option<String>,
    pub(crate) text: String,
}

/// How much of a page's start is searched for `<meta charset>` (the HTML standard's
/// prescan looks at 1024 bytes; pages with long heads put it later).
const META_PRESCAN_BYTES: usize = 4096;

/// The lower-cased media type of a `Content-Type` value (`text/html` for
/// `text/html; charset=utf-8`).
pub(crate) fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Classifies a body. A specific `Content-Type` wins; a missing, `application/octet-stream`
/// or `binary/octet-stream` one is replaced by a look at the bytes (`%PDF-`, a leading `<`,
/// a leading `{`/`[` that parses as JSON, or text).
pub(crate) fn classify(content_type: Option<&str>, body: &[u8]) -> Kind {
    let media = content_type.map(media_type).unwrap_or_default();
    match media.as_str() {
        "text/html" | "application/xhtml+xml" => return Kind::Html,
        "application/pdf" | "application/x-pdf" => return Kind::Pdf,
        "application/json" | "text/json" => return Kind::Json,
        "" | "application/octet-stream" | "binary/octet-stream" | "application/unknown" => {
            return sniff(body, media);
        }
        _ => {}
    }
    // `image/svg+xml` is XML too, but a picture.
    let text = media.starts_with("text/")
        || (media.ends_with("+xml") && !media.starts_with("image/"))
        || matches!(
            media.as_str(),
            "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-ndjson"
                | "application/yaml"
                | "application/toml"
        );
    if media.ends_with("+json") {
        Kind::Json
    } else if text {
        Kind::Text
    } else {
        Kind::Unsupported(media)
    }
}

/// Guesses what an untyped body is from its first bytes.
fn sniff(body: &[u8], media: String) -> Kind {
    let start = trim_ascii_start(strip_bom(body));
    if start.starts_with(b"%PDF-") {
        return Kind::Pdf;
    }
    let head = &start[..start.len().min(512)];
    let lower = head.to_ascii_lowercase();
    if lower.starts_with(b"<!doctype html")
        || lower.starts_with(b"<html")
        || lower.starts_with(b"<head")
        || lower.starts_with(b"<body")
        || lower.starts_with(b"<!--")
        || (lower.starts_with(b"<") && contains(&lower, b"<p"))
    {
        return Kind::Html;
    }
    if (start.starts_with(b"{") || start.starts_with(b"["))
        && serde_json::from_slice::<serde_json::Value>(start).is_ok()
    {
        return Kind::Json;
    }
    // Text has no NUL bytes and (in its first part) decodes as UTF-8.
    let probe = &start[..start.len().min(4096)];
    if !probe.contains(&0) && utf8_prefix_is_valid(probe) {
        return Kind::Text;
    }
    Kind::Unsupported(if media.is_empty() {
        "an unknown binary type".to_owned()
    } else {
        media
    })
}

/// Whether `bytes` is UTF-8, allowing a code point cut off at the very end.
fn utf8_prefix_is_valid(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(err) => err.error_len().is_none(),
    }
}

fn strip_bom(body: &[u8]) -> &[u8] {
    match Encoding::for_bom(body) {
        Some((_, len)) => &body[len..],
        None => body,
    }
}

fn trim_ascii_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &bytes[skip..]
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle, 0).is_some()
}

/// The first position of `needle` in `haystack` at or after `from`.
fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > haystack.len() {
        return None;
    }
    haystack[from..]
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|at| at + from)
}

/// The encoding named by a `Content-Type` value's `charset` parameter, if it names one
/// encoding_rs knows.
pub(crate) fn charset_from_content_type(content_type: &str) -> Option<&'static Encoding> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'').trim();
        Encoding::for_label(value.as_bytes())
    })
}

/// The encoding an HTML page declares in its head: `<meta charset="…">` or
/// `<meta http-equiv="Content-Type" content="text/html; charset=…">`. A declared UTF-16 is
/// read as UTF-8, as browsers do (a page whose `<meta>` could be read byte by byte as ASCII
/// is not UTF-16).
pub(crate) fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = body[..body.len().min(META_PRESCAN_BYTES)].to_ascii_lowercase();
    let mut from = 0;
    while let Some(start) = find(&head, b"<meta", from) {
        let end = find(&head, b">", start).unwrap_or(head.len());
        let tag = &head[start..end];
        from = end;
        let Some(at) = find(tag, b"charset", 0) else {
            continue;
        };
        let rest = trim_ascii_start(&tag[at + b"charset".len()..]);
        let Some(rest) = rest.strip_prefix(b"=") else {
            continue;
        };
        let rest = trim_ascii_start(rest);
        let rest = rest
            .strip_prefix(b"\"")
            .or_else(|| rest.strip_prefix(b"'"))
            .unwrap_or(rest);
        let len = rest
            .iter()
            .take_while(|&&b| {
                !matches!(b, b'"' | b'\'' | b';' | b'/' | b'>') && !b.is_ascii_whitespace()
            })
            .count();
        if let Some(encoding) = Encoding::for_label(&rest[..len]) {
            return Some(if encoding.output_encoding() == UTF_8 {
                UTF_8
            } else {
                encoding
            });
        }
    }
    None
}

/// Decodes a body to text. Order: a byte-order mark, then the `Content-Type` charset, then
/// (HTML only) `<meta charset>`, then UTF-8 when the bytes are UTF-8, else windows-1252 for
/// HTML (the web's legacy default) and lossy UTF-8 for everything else.
pub(crate) fn decode<'a>(body: &'a [u8], content_type: Option<&str>, html: bool) -> Cow<'a, str> {
    let declared = content_type
        .and_then(charset_from_content_type)
        .or_else(|| if html { meta_charset(body) } else { None });
    let encoding = match declared {
        Some(encoding) => encoding,
        None if utf8_prefix_is_valid(body) => UTF_8,
        None if html => WINDOWS_1252,
        None => UTF_8,
    };
    // `decode` lets a byte-order mark override the label, as the standard says.
    let (text, _, _) = encoding.decode(body);
    text
}

/// The text of the page's first `<title>` element (its character references decoded by the
/// HTML parser), whitespace collapsed; `None` when there is none or it is blank.
pub(crate) fn title_element(document: &Document) -> Option<String> {
    let first = document.try_select("title")?.nodes().first()?.text();
    let title = collapse_whitespace(&first);
    (!title.is_empty()).then_some(title)
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An HTML page as Markdown: the article readability finds (dom_smoothie), converted with
/// htmd; when that yields nothing, the whole page as plain text (html2text). The title is
/// readability's (which drops site-name suffixes), else `<title>`. The page is parsed once,
/// by dom_smoothie's parser (html5ever through dom_query).
pub(crate) fn html_to_page(html: &str, url: &str) -> Page {
    let document = Document::from(html);
    let fallback_title = title_element(&document);
    let (title, article) = readable_article(document, html, url);
    let title = title.or(fallback_title);
    let text = match article {
        Some(markdown) if !markdown.is_empty() => markdown,
        _ => plain_text(html),
    };
    Page { title, text }
}

/// Readability's title and the article as Markdown (`None` when it found no article).
/// Readability refuses only a URL that is not absolute; `html` is read again without one then.
fn readable_article(document: Document, html: &str, url: &str) -> (Option<String>, Option<String>) {
    let readability = dom_smoothie::Readability::with_document(document, Some(url), None)
        .or_else(|_| dom_smoothie::Readability::new(html, None, None));
    let Ok(mut readability) = readability else {
        return (None, None);
    };
    let title = non_blank(readability.get_article_title().to_string());
    match readability.parse() {
        Ok(article) => {
            let title = non_blank(collapse_whitespace(&article.title)).or(title);
            (title, article_markdown(&article.content))
        }
        Err(err) => {
            tracing::debug!(%err, "fetch_url: readability found no article");
            (title, None)
        }
    }
}

fn non_blank(text: String) -> Option<String> {
    (!text.trim().is_empty()).then_some(text)
}

/// The article's HTML as Markdown. Images are dropped: their `data:` URIs can be huge and a
/// model reading text gains nothing from them.
fn article_markdown(article_html: &str) -> Option<String> {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "img", "picture", "iframe", "object",
            "form", "button",
        ])
        .build();
    match converter.convert(article_html) {
        Ok(markdown) => Some(tidy(&markdown)),
        Err(err) => {
            tracing::debug!(%err, "fetch_url: htmd could not convert the article");
            None
        }
    }
}

/// The whole page as plain text (no link footnotes, so `[n]` keeps meaning a source).
fn plain_text(html: &str) -> String {
    match html2text::config::plain_no_decorate()
        .allow_width_overflow()
        .string_from_read(html.as_bytes(), 120)
    {
        Ok(text) => tidy(&text),
        Err(err) => {
            tracing::debug!(%err, "fetch_url: html2text could not read the page");
            String::new()
        }
    }
}

/// Trailing spaces dropped from every line, runs of blank lines folded into one, and the
/// whole trimmed.
pub(crate) fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(line);
    }
    out
}

/// JSON pretty-printed (two-space indent); text that does not parse is returned as it is.
pub(crate) fn json_text(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.to_owned()),
        Err(_) => text.trim().to_owned(),
    }
}

/// The text layer of a PDF. pdf-extract panics on some files: the caller runs this behind
/// `catch_unwind`.
pub(crate) fn pdf_text(bytes: &[u8]) -> Result<String, String> {
    match pdf_extract::extract_text_from_mem(bytes) {
        Ok(text) => {
            let text = tidy(&text);
            if text.is_empty() {
                Err("the PDF has no text layer (a scanned document?)".to_owned())
            } else {
                Ok(text)
            }
        }
        Err(err) => Err(format!("could not read the PDF: {err}")),
    }
}

/// The clean text of a downloaded body, or why there is none. `truncated` says the body
/// was cut at the byte cap (a cut PDF cannot be read).
pub(crate) fn extract(
    body: &[u8],
    content_type: Option<&str>,
    url: &str,
    truncated: bool,
) -> Result<Page, String> {
    let page = match classify(content_type, body) {
        Kind::Html => html_to_page(&decode(body, content_type, true), url),
        Kind::Pdf if truncated => {
            return Err("the PDF is larger than the download limit".to_owned());
        }
        Kind::Pdf => Page {
            title: None,
            text: pdf_text(body)?,
        },
        Kind::Json => Page {
            title: None,
            text: if truncated {
                tidy(&decode(body, content_type, false))
            } else {
                json_text(&decode(body, content_type, false))
            },
        },
        Kind::Text => Page {
            title: None,
            text: tidy(&decode(body, content_type, false)),
        },
        Kind::Unsupported(media) => {
            return Err(format!("unsupported content type {media}"));
        }
    };
    if page.text.is_empty() {
        return Err("the page has no readable text".to_owned());
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charset_comes_from_the_content_type() {
        assert_eq!(
            charset_from_content_type("text/html; charset=Shift_JIS"),
            Some(encoding_rs::SHIFT_JIS)
        );
        assert_eq!(
            charset_from_content_type("text/plain;charset=\"windows-1252\""),
            Some(WINDOWS_1252)
        );
        // latin1 is windows-1252 on the web.
        assert_eq!(
            charset_from_content_type("text/html; CHARSET = iso-8859-1"),
            Some(WINDOWS_1252)
        );
        assert_eq!(charset_from_content_type("text/html"), None);
        assert_eq!(charset_from_content_type("text/html; charset=bogus"), None);
    }

    #[test]
    fn charset_comes_from_meta_tags() {
        assert_eq!(
            meta_charset(b"<html><head><META CharSet=\"shift_jis\"><title>x</title>"),
            Some(encoding_rs::SHIFT_JIS)
        );
        assert_eq!(
            meta_charset(
                b"<meta name=viewport content=x><meta http-equiv=\"Content-Type\" \
                  content=\"text/html; charset=windows-1251\">"
            ),
            Some(encoding_rs::WINDOWS_1251)
        );
        assert_eq!(meta_charset(b"<meta charset=utf-16le>"), Some(UTF_8));
        assert_eq!(
            meta_charset(b"<meta name=description content=charset>"),
            None
        );
        assert_eq!(meta_charset(b"<p>no meta</p>"), None);
    }

    #[test]
    fn decoding_prefers_bom_then_header_then_meta() {
        // "café" in windows-1252, with only a <meta> declaring it.
        let body = b"<meta charset=windows-1252><p>caf\xe9</p>";
        assert!(decode(body, Some("text/html"), true).contains("café"));
        // The header wins over <meta>.
        let body = b"<meta charset=utf-8><p>caf\xe9</p>";
        assert!(decode(body, Some("text/html; charset=latin1"), true).contains("café"));
        // A BOM wins over both.
        let body = b"\xef\xbb\xbf<meta charset=windows-1252><p>caf\xc3\xa9</p>";
        assert!(decode(body, Some("text/html; charset=latin1"), true).contains("café"));
        // Undeclared: UTF-8 when it is, else windows-1252 for HTML.
        assert!(decode("<p>café</p>".as_bytes(), None, true).contains("café"));
        assert!(decode(b"<p>caf\xe9</p>", None, true).contains("café"));
        // Shift_JIS from the header: "日本語".
        let sjis = b"\x93\xfa\x96\x7b\x8c\xea";
        assert_eq!(
            decode(sjis, Some("text/plain; charset=shift_jis"), false),
            "日本語"
        );
    }

    fn title_tag(html: &str) -> Option<String> {
        title_element(&Document::from(html))
    }

    #[test]
    fn titles_come_from_the_title_element() {
        assert_eq!(
            title_tag(
                "<html><head><TITLE lang=en>\n  Fish &amp; Chips &#8212; a&#x20;history\n</TITLE>"
            ),
            Some("Fish & Chips — a history".to_owned())
        );
        assert_eq!(
            title_tag("<titles>no</titles><title>yes</title>"),
            Some("yes".to_owned())
        );
        assert_eq!(title_tag("<title>   </title>"), None);
        assert_eq!(title_tag("<p>none</p>"), None);
        assert_eq!(
            title_tag("<title>AT&T &bogus; 5 &lt; 6"),
            Some("AT&T &bogus; 5 < 6".to_owned())
        );
    }

    #[test]
    fn title_references_are_decoded_as_a_browser_would() {
        // The HTML parser's rule, the same as web_search's: every named reference (with or
        // without its `;` where HTML allows that), numeric ones with the windows-1252
        // remapping of 128..159.
        assert_eq!(
            title_tag("<title>&copy; 2024 &eacute;t&eacute; &#150; &copy 1999 &frac12;</title>"),
            Some("© 2024 été – © 1999 ½".to_owned())
        );
    }

    #[test]
    fn html_pages_fall_back_to_the_title_element_and_plain_text() {
        let page = html_to_page(
            "<html><head><title>Tiny</title></head><body><p>Just one line.</p></body></html>",
            "https://example.com/tiny",
        );
        assert_eq!(page.title.as_deref(), Some("Tiny"));
        assert!(page.text.contains("Just one line."), "{}", page.text);
    }

    #[test]
    fn bodies_are_classified_by_type_then_by_content() {
        assert_eq!(classify(Some("text/html; charset=utf-8"), b""), Kind::Html);
        assert_eq!(classify(Some("application/pdf"), b""), Kind::Pdf);
        assert_eq!(
            classify(Some("application/problem+json"), b"{}"),
            Kind::Json
        );
        assert_eq!(classify(Some("text/csv"), b"a,b"), Kind::Text);
        assert_eq!(classify(Some("application/rss+xml"), b"<rss/>"), Kind::Text);
        assert_eq!(
            classify(Some("image/png"), b"\x89PNG"),
            Kind::Unsupported("image/png".to_owned())
        );
        assert_eq!(classify(None, b"%PDF-1.4\n"), Kind::Pdf);
        assert_eq!(
            classify(Some("application/octet-stream"), b"  <!DOCTYPE html><p>x"),
            Kind::Html
        );
        assert_eq!(classify(None, b"[1, 2]"), Kind::Json);
        assert_eq!(classify(None, b"hello"), Kind::Text);
        assert_eq!(
            classify(None, b"\x00\x01\x02"),
            Kind::Unsupported("an unknown binary type".to_owned())
        );
    }

    #[test]
    fn json_is_pretty_printed_and_text_tidied() {
        assert_eq!(
            json_text("{\"a\":[1,2]}"),
            "{\n  \"a\": [\n    1,\n    2\n  ]\n}"
        );
        assert_eq!(json_text("{not json"), "{not json");
        assert_eq!(tidy("a  \n\n\n\nb\n  \nc\n"), "a\n\nb\n\nc");
    }

    #[test]
    fn cut_pdfs_and_binary_bodies_are_errors() {
        assert_eq!(
            extract(
                b"%PDF-1.4",
                Some("application/pdf"),
                "https://x.test/",
                true
            ),
            Err("the PDF is larger than the download limit".to_owned())
        );
        assert!(extract(b"%PDF-1.4 garbage", None, "https://x.test/", false).is_err());
        assert_eq!(
            extract(b"GIF89a", Some("image/gif"), "https://x.test/", false),
            Err("unsupported content type image/gif".to_owned())
        );
        assert_eq!(
            extract(b"  \n", Some("text/plain"), "https://x.test/", false),
            Err("the page has no readable text".to_owned())
        );
    }
}
