//! `fetch_url` against real HTTP servers on 127.0.0.1: article extraction, PDF, character
//! sets, JSON, caps, timeouts, HTTP errors, the network guard, events and bad arguments.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers outside #[test] fns fail the test on setup errors and wrong shapes"
)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::hosted::{CallContext, EventSink, HostedTool, Source, ToolOutcome};
use fetch::{FetchSettings, FetchShared, FetchUrl};
use protocol::events::EventData;
use protocol::output::{OutputItem, UrlContent};
use protocol::request::FetchUrlTool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------------------------------
// The test server: a few canned pages over plain HTTP/1.1, one request per connection.

/// What the server sends for a path.
enum Body {
    Bytes(Vec<u8>),
    /// Text without end (no `Content-Length`): only a byte cap stops the reader.
    Endless,
    /// The head and a first part at once, the rest never (only a timeout stops the reader).
    Stalled(Vec<u8>),
}

struct Reply {
    status: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Body,
}

fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
    Reply {
        status: "200 OK",
        headers: vec![("Content-Type", content_type.to_owned())],
        body: Body::Bytes(body.into()),
    }
}

const ARTICLE_PARAGRAPHS: [&str; 5] = [
    "Arctic terns make the longest migration of any animal, flying from their breeding grounds \
     in the Arctic to the Antarctic and back again every single year of their lives.",
    "Tracking studies with tiny geolocators showed that the birds do not fly in a straight \
     line but follow a zigzag course over the Atlantic, riding the prevailing wind systems.",
    "A tern that lives for thirty years may cover more than two million kilometres over its \
     lifetime, the equivalent of several return trips between the Earth and the Moon.",
    "Researchers believe the detours save energy: by following the winds the birds spend less \
     effort per kilometre, even though the total distance they travel becomes much longer.",
    "Climate change is now shifting those wind patterns, and scientists are watching closely \
     to learn whether the terns can adapt their ancient routes quickly enough to survive.",
];

fn article_html() -> String {
    let paragraphs: String = ARTICLE_PARAGRAPHS
        .iter()
        .map(|p| format!("<p>{p}</p>\n"))
        .collect();
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>The Migration of Arctic Terns | Bird News</title>
<style>.ad {{ color: red; }} body {{ font-family: STYLE_MARKER, sans-serif; }}</style>
<script>var trackingId = "SCRIPT_MARKER_HEAD"; window.ads = [];</script>
</head><body>
<header class="site-header"><nav class="site-nav"><ul>
<li><a href="/">Home</a></li><li><a href="/news">NAV_MARKER Latest news</a></li>
<li><a href="/about">About us</a></li><li><a href="/shop">Shop</a></li>
</ul></nav></header>
<div class="ad banner-ad" id="top-ad">ADVERT_MARKER Buy cheap binoculars now! Limited offer!</div>
<main><article>
<h1>The Migration of Arctic Terns</h1>
{paragraphs}</article></main>
<aside class="sidebar"><h3>Related</h3><ul>
<li><a href="/a">SIDEBAR_MARKER Ten birds you must see</a></li>
<li><a href="/b">Why owls hoot at night</a></li></ul></aside>
<footer class="site-footer"><p>FOOTER_MARKER Copyright 2026 Bird News. All rights reserved.</p>
<a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer>
<script>document.write("SCRIPT_MARKER_BODY");</script>
</body></html>"#
    )
}

/// A one-page PDF whose content stream shows `lines` in the font resource named `font`
/// (the page has one, `F1`: Helvetica), with a correct xref table (pdf-extract's lopdf
/// needs the offsets).
fn tiny_pdf(font: &str, lines: &[&str]) -> Vec<u8> {
    let mut content = format!("BT /{font} 18 Tf 72 720 Td 24 TL\n");
    for line in lines {
        content.push_str(&format!("({line}) Tj T*\n"));
    }
    content.push_str("ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_owned(),
        format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_owned(),
    ];
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", i + 1).as_bytes());
    }
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    pdf
}

fn route(path: &str) -> Reply {
    match path {
        "/article" => ok("text/html; charset=utf-8", article_html()),
        "/old-article" => Reply {
            status: "302 Found",
            headers: vec![("Location", "/article".to_owned())],
            body: Body::Bytes(Vec::new()),
        },
        "/paper.pdf" => ok(
            "application/pdf",
            tiny_pdf(
                "F1",
                &[
                    "Quarterly report of the Tern Society",
                    "Sightings rose by forty percent",
                ],
            ),
        ),
        // pdf-extract panics on a font the page's resources do not define.
        "/panics.pdf" => ok("application/pdf", tiny_pdf("F9", &["Never read"])),
        "/broken.pdf" => ok(
            "application/pdf",
            b"%PDF-1.7\n1 0 obj << /Type /Catalog".to_vec(),
        ),
        "/sjis" => {
            let html = "<html><head><title>日本語のページ</title></head><body>\
                        <p>吾輩は猫である。名前はまだ無い。</p></body></html>";
            let (bytes, _, unmappable) = encoding_rs::SHIFT_JIS.encode(html);
            assert!(!unmappable);
            ok("text/html; charset=Shift_JIS", bytes.into_owned())
        }
        "/meta-1252" => {
            let html = "<html><head><meta charset=\"windows-1252\"><title>Menu</title></head>\
                        <body><p>Café crème brûlée — a naïve dessert for 5 €.</p></body></html>";
            let (bytes, _, unmappable) = encoding_rs::WINDOWS_1252.encode(html);
            assert!(!unmappable);
            // No charset in the header: only the <meta> tells.
            ok("text/html", bytes.into_owned())
        }
        "/data.json" => ok(
            "application/json",
            r#"{"name":"agentd","tags":["fetch","url"],"nested":{"count":3}}"#,
        ),
        "/notes.txt" => ok("text/plain; charset=utf-8", "Plain notes.\nSecond line."),
        "/image.png" => ok("image/png", b"\x89PNG\r\n\x1a\n".to_vec()),
        "/huge" => Reply {
            status: "200 OK",
            headers: vec![("Content-Type", "text/plain".to_owned())],
            body: Body::Endless,
        },
        "/slow" => Reply {
            status: "200 OK",
            headers: vec![
                ("Content-Type", "text/plain".to_owned()),
                ("Content-Length", "100000".to_owned()),
            ],
            body: Body::Stalled(b"The first part arrives, the rest never does.".to_vec()),
        },
        _ => Reply {
            status: "404 Not Found",
            headers: vec![("Content-Type", "text/html".to_owned())],
            body: Body::Bytes(b"<h1>Not Found</h1>".to_vec()),
        },
    }
}

struct Server {
    addr: SocketAddr,
    /// Connections accepted so far.
    connections: Arc<AtomicUsize>,
    /// Paths requested so far.
    paths: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (Arc::clone(&connections), Arc::clone(&paths));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, Arc::clone(&seen)));
            }
        });
        Server {
            addr,
            connections,
            paths,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

async fn serve(mut stream: TcpStream, paths: Arc<Mutex<Vec<String>>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    paths.lock().unwrap().push(path.clone());
    let reply = route(&path);
    let mut out = format!("HTTP/1.1 {}\r\nConnection: close\r\n", reply.status);
    for (name, value) in &reply.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Body::Bytes(body) = &reply.body {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    if stream.write_all(out.as_bytes()).await.is_err() {
        return;
    }
    match reply.body {
        Body::Bytes(body) => {
            let _ = stream.write_all(&body).await;
        }
        Body::Endless => {
            let chunk = "All work and no play makes a very long page. ".repeat(1000);
            // Bounded, so a reader that never stops still ends the test (at ~100 MB).
            for _ in 0..2000 {
                if stream.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
        Body::Stalled(first) => {
            let _ = stream.write_all(&first).await;
            let _ = stream.flush().await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    }
    let _ = stream.shutdown().await;
}

// ---------------------------------------------------------------------------------------
// The tool under test.

#[derive(Default)]
struct Events(Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

impl Events {
    fn take(&self) -> Vec<EventData> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn loopback_settings() -> FetchSettings {
    FetchSettings {
        policy: netguard::Policy::with_allowed(&["127.0.0.0/8".into()]).unwrap(),
        timeout: Duration::from_secs(10),
        max_page_bytes: 5 << 20,
        default_budget_tokens: 10_000,
    }
}

fn tool_with(settings: FetchSettings, config: FetchUrlTool) -> FetchUrl {
    FetchUrl::new(&config, Arc::new(FetchShared::new(settings).unwrap()))
}

fn tool() -> FetchUrl {
    tool_with(loopback_settings(), FetchUrlTool::default())
}

/// Calls the tool with `{"urls": urls}`, sources numbered from 1.
async fn fetch(tool: &FetchUrl, urls: &[String]) -> (ToolOutcome, Vec<EventData>) {
    let events = Events::default();
    let arguments = serde_json::json!({ "urls": urls }).to_string();
    let outcome = tool
        .call(
            &arguments,
            CallContext {
                events: &events,
                next_source: 1,
                call_id: "call_1",
                conversation: "resp_test",
                project_id: "proj_test",
                files: &engine::hosted::NoFiles,
            },
        )
        .await;
    (outcome, events.take())
}

fn contents(outcome: &ToolOutcome) -> &[UrlContent] {
    match outcome.items.as_slice() {
        [OutputItem::FetchUrlResults(results)] => &results.contents,
        other => panic!("expected one fetch_url_results item, got {other:?}"),
    }
}

/// The one page read, when the call read exactly one.
fn single(outcome: &ToolOutcome) -> &UrlContent {
    match contents(outcome) {
        [page] => page,
        other => panic!("expected one page, got {other:?}\n{}", outcome.model_text),
    }
}

// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn html_article_is_extracted_without_boilerplate() {
    let server = Server::start().await;
    let url = server.url("/article");
    let (outcome, _) = fetch(&tool(), std::slice::from_ref(&url)).await;
    let page = single(&outcome);
    assert_eq!(page.url, url);
    assert!(
        page.title.contains("Migration of Arctic Terns"),
        "{}",
        page.title
    );
    for paragraph in ARTICLE_PARAGRAPHS {
        assert!(
            page.snippet.contains(paragraph),
            "missing {paragraph:?} in\n{}",
            page.snippet
        );
    }
    for marker in [
        "NAV_MARKER",
        "ADVERT_MARKER",
        "SIDEBAR_MARKER",
        "FOOTER_MARKER",
        "SCRIPT_MARKER",
        "STYLE_MARKER",
        "trackingId",
    ] {
        assert!(
            !page.snippet.contains(marker),
            "{marker} leaked into\n{}",
            page.snippet
        );
    }
    assert!(
        outcome
            .model_text
            .starts_with(&format!("Source [1]: {}\nURL: {url}\n\n", page.title)),
        "{}",
        outcome.model_text
    );
    assert_eq!(
        outcome.sources,
        vec![Source {
            number: 1,
            url: url.clone(),
            title: page.title.clone(),
        }]
    );
    assert_eq!(outcome.invocations, vec![("fetch_url".to_owned(), 1)]);
}

#[tokio::test]
async fn redirects_are_followed_and_reported() {
    let server = Server::start().await;
    let url = server.url("/old-article");
    let (outcome, _) = fetch(&tool(), std::slice::from_ref(&url)).await;
    let page = single(&outcome);
    assert_eq!(page.url, url);
    assert!(page.snippet.contains(ARTICLE_PARAGRAPHS[0]));
    assert!(
        outcome
            .model_text
            .contains(&format!("(redirected to {})", server.url("/article"))),
        "{}",
        outcome.model_text
    );
    assert_eq!(server.paths(), vec!["/old-article", "/article"]);
}

#[tokio::test]
async fn pdf_text_is_extracted() {
    let server = Server::start().await;
    let url = server.url("/paper.pdf");
    let (outcome, _) = fetch(&tool(), std::slice::from_ref(&url)).await;
    let page = single(&outcome);
    let words: Vec<&str> = page.snippet.split_whitespace().collect();
    let text = words.join(" ");
    assert!(
        text.contains("Quarterly report of the Tern Society"),
        "{text:?}"
    );
    assert!(text.contains("Sightings rose by forty percent"), "{text:?}");
    // No title in the PDF: the URL stands in.
    assert_eq!(page.title, url);
}

#[tokio::test]
async fn a_broken_pdf_is_an_error_for_that_url_only() {
    let server = Server::start().await;
    let urls = [server.url("/broken.pdf"), server.url("/notes.txt")];
    let (outcome, _) = fetch(&tool(), &urls).await;
    let page = single(&outcome);
    assert_eq!(page.url, urls[1]);
    assert_eq!(page.snippet, "Plain notes.\nSecond line.");
    assert!(
        outcome
            .model_text
            .starts_with(&format!("URL: {}\nerror: ", urls[0])),
        "{}",
        outcome.model_text
    );
    // The page read is still source 1: failed URLs get no number.
    assert_eq!(outcome.sources.len(), 1);
    assert_eq!(outcome.sources[0].number, 1);
    assert_eq!(outcome.invocations, vec![("fetch_url".to_owned(), 2)]);
}

#[tokio::test]
async fn a_pdf_that_panics_the_parser_is_an_error_for_that_url_only() {
    let server = Server::start().await;
    let urls = [server.url("/panics.pdf"), server.url("/paper.pdf")];
    let (outcome, _) = fetch(&tool(), &urls).await;
    let page = single(&outcome);
    assert_eq!(page.url, urls[1]);
    assert!(
        outcome.model_text.starts_with(&format!(
            "URL: {}\nerror: the content could not be parsed (the parser failed)",
            urls[0]
        )),
        "{}",
        outcome.model_text
    );
}

#[tokio::test]
async fn character_sets_from_the_header_and_from_meta() {
    let server = Server::start().await;
    let urls = [server.url("/sjis"), server.url("/meta-1252")];
    let (outcome, _) = fetch(&tool(), &urls).await;
    let pages = contents(&outcome);
    assert_eq!(pages.len(), 2, "{}", outcome.model_text);
    assert_eq!(pages[0].title, "日本語のページ");
    assert!(
        pages[0]
            .snippet
            .contains("吾輩は猫である。名前はまだ無い。"),
        "{}",
        pages[0].snippet
    );
    assert_eq!(pages[1].title, "Menu");
    assert!(
        pages[1]
            .snippet
            .contains("Café crème brûlée — a naïve dessert for 5 €."),
        "{}",
        pages[1].snippet
    );
}

#[tokio::test]
async fn json_is_pretty_printed() {
    let server = Server::start().await;
    let (outcome, _) = fetch(&tool(), &[server.url("/data.json")]).await;
    let page = single(&outcome);
    assert_eq!(
        page.snippet,
        "{\n  \"name\": \"agentd\",\n  \"nested\": {\n    \"count\": 3\n  },\n  \"tags\": [\n    \"fetch\",\n    \"url\"\n  ]\n}"
    );
}

#[tokio::test]
async fn a_huge_body_is_capped_and_marked() {
    let server = Server::start().await;
    let settings = FetchSettings {
        max_page_bytes: 64 * 1024,
        ..loopback_settings()
    };
    // A budget far above the cap: only the byte cap cuts.
    let config = FetchUrlTool {
        max_urls: None,
        total_budget_tokens: Some(120_000),
    };
    let (outcome, _) = fetch(&tool_with(settings, config), &[server.url("/huge")]).await;
    let page = single(&outcome);
    assert!(page.snippet.starts_with("All work and no play"));
    assert!(
        page.snippet
            .ends_with("[truncated: only the start of the page was downloaded]"),
        "{}",
        &page.snippet[page.snippet.len() - 200..]
    );
    assert!(
        page.snippet.len() <= 64 * 1024 + 100,
        "{}",
        page.snippet.len()
    );
    assert!(page.snippet.len() > 60 * 1024, "{}", page.snippet.len());
}

#[tokio::test]
async fn pages_are_trimmed_to_the_token_budget() {
    let server = Server::start().await;
    let config = FetchUrlTool {
        max_urls: Some(2),
        total_budget_tokens: Some(1_000),
    };
    let urls = [server.url("/huge"), server.url("/notes.txt")];
    let (outcome, _) = fetch(&tool_with(loopback_settings(), config), &urls).await;
    let pages = contents(&outcome);
    assert_eq!(pages.len(), 2);
    // The short page keeps all of its text; the long one gets the rest of 4000 characters.
    assert_eq!(pages[1].snippet, "Plain notes.\nSecond line.");
    let long = &pages[0].snippet;
    let (text, marker) = long.rsplit_once("\n\n").unwrap();
    assert!(
        text.chars().count() <= 4_000 - 25,
        "{}",
        text.chars().count()
    );
    assert!(text.chars().count() > 3_000, "{}", text.chars().count());
    assert!(
        marker.starts_with("[truncated: the page is longer than its share"),
        "{marker}"
    );
}

#[tokio::test]
async fn a_slow_page_times_out_while_the_others_are_read() {
    let server = Server::start().await;
    let settings = FetchSettings {
        timeout: Duration::from_secs(1),
        ..loopback_settings()
    };
    let urls = [server.url("/slow"), server.url("/article")];
    let started = std::time::Instant::now();
    let (outcome, _) = fetch(&tool_with(settings, FetchUrlTool::default()), &urls).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let page = single(&outcome);
    assert_eq!(page.url, urls[1]);
    assert!(
        outcome
            .model_text
            .starts_with(&format!("URL: {}\nerror: timed out after 1 s", urls[0])),
        "{}",
        outcome.model_text
    );
}

#[tokio::test]
async fn http_errors_and_unsupported_types_are_in_band() {
    let server = Server::start().await;
    let urls = [server.url("/nowhere"), server.url("/image.png")];
    let (outcome, events) = fetch(&tool(), &urls).await;
    assert!(contents(&outcome).is_empty());
    assert!(outcome.sources.is_empty());
    assert_eq!(
        outcome.model_text,
        format!(
            "URL: {}\nerror: HTTP status 404 Not Found\n\n---\n\n\
             URL: {}\nerror: unsupported content type image/png",
            urls[0], urls[1]
        )
    );
    assert_eq!(outcome.invocations, vec![("fetch_url".to_owned(), 2)]);
    // The events still run their course, with no contents.
    assert!(matches!(
        events.as_slice(),
        [
            EventData::ReasoningStarted { .. },
            EventData::FetchUrlQueries { .. },
            EventData::FetchUrlResults { contents, .. },
            EventData::ReasoningStopped { .. },
        ] if contents.is_empty()
    ));
}

#[tokio::test]
async fn the_strict_guard_refuses_loopback_and_nothing_is_sent() {
    let server = Server::start().await;
    let port = server.addr.port();
    let tool = tool_with(
        FetchSettings {
            policy: netguard::Policy::strict(),
            ..loopback_settings()
        },
        FetchUrlTool::default(),
    );
    let urls = [
        format!("http://127.0.0.1:{port}/article"),
        format!("http://localhost:{port}/article"),
        format!("http://2130706433:{port}/article"),
        "file:///etc/passwd".to_owned(),
    ];
    let (outcome, _) = fetch(&tool, &urls).await;
    assert!(contents(&outcome).is_empty(), "{}", outcome.model_text);
    let blocks: Vec<&str> = outcome.model_text.split("\n\n---\n\n").collect();
    assert_eq!(blocks.len(), 4, "{}", outcome.model_text);
    assert_eq!(
        blocks[0],
        format!(
            "URL: {}\nerror: refused by the network guard: 127.0.0.1 is a loopback address",
            urls[0]
        )
    );
    for (block, url) in blocks.iter().zip(&urls) {
        assert!(
            block.starts_with(&format!(
                "URL: {url}\nerror: refused by the network guard: "
            )),
            "{block}"
        );
    }
    assert!(blocks[3].contains("scheme \"file\""), "{}", blocks[3]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn events_come_in_order_with_the_urls_and_contents() {
    let server = Server::start().await;
    let urls = [
        server.url("/notes.txt"),
        server.url("/nowhere"),
        server.url("/data.json"),
    ];
    let events = Events::default();
    let arguments = serde_json::json!({ "urls": urls }).to_string();
    let outcome = tool()
        .call(
            &arguments,
            CallContext {
                events: &events,
                next_source: 4,
                call_id: "call_1",
                conversation: "resp_test",
                project_id: "proj_test",
                files: &engine::hosted::NoFiles,
            },
        )
        .await;
    let expected_contents = contents(&outcome).to_vec();
    assert_eq!(expected_contents.len(), 2);
    assert_eq!(
        events.take(),
        vec![
            EventData::ReasoningStarted { thought: None },
            EventData::FetchUrlQueries {
                urls: urls.to_vec(),
                thought: None,
            },
            EventData::FetchUrlResults {
                contents: expected_contents,
                thought: None,
            },
            EventData::ReasoningStopped { thought: None },
        ]
    );
    let numbers: Vec<u64> = outcome.sources.iter().map(|s| s.number).collect();
    assert_eq!(numbers, vec![4, 5]);
    assert!(
        outcome.model_text.contains("Source [5]: "),
        "{}",
        outcome.model_text
    );
}

#[tokio::test]
async fn invalid_arguments_give_an_error_and_fetch_nothing() {
    let server = Server::start().await;
    let tool = tool_with(
        loopback_settings(),
        FetchUrlTool {
            max_urls: Some(2),
            total_budget_tokens: None,
        },
    );
    let url = server.url("/article");
    let too_many = serde_json::json!({ "urls": [url, server.url("/a"), server.url("/b")] });
    for arguments in [
        "{\"urls\": [".to_owned(),
        "{}".to_owned(),
        "{\"urls\": []}".to_owned(),
        "{\"url\": \"https://example.com/\"}".to_owned(),
        too_many.to_string(),
    ] {
        let events = Events::default();
        let outcome = tool
            .call(
                &arguments,
                CallContext {
                    events: &events,
                    next_source: 1,
                    call_id: "call_1",
                    conversation: "resp_test",
                    project_id: "proj_test",
                    files: &engine::hosted::NoFiles,
                },
            )
            .await;
        assert!(
            outcome.model_text.starts_with("error: "),
            "{arguments}: {}",
            outcome.model_text
        );
        assert!(outcome.items.is_empty(), "{arguments}");
        assert!(outcome.invocations.is_empty(), "{arguments}");
        assert!(outcome.sources.is_empty(), "{arguments}");
        assert!(events.take().is_empty(), "{arguments}");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);
}
