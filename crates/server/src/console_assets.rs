//! The web console's files, embedded in the binary (`include_str!`): plain JavaScript modules,
//! one style sheet and the page, served as they are checked in under `crates/server/console/`
//! (no build step; see docs/console.md). The route table has one `GET` row per file; the
//! handler is [`crate::console`].

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The path it is served at.
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

macro_rules! asset {
    ($path:literal, $type:expr, $file:literal) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_str!(concat!("../console/", $file)),
        }
    };
}

/// Every file of the console.
pub const ASSETS: &[Asset] = &[
    asset!("/console", HTML, "index.html"),
    asset!("/console/console.css", CSS, "console.css"),
    asset!("/console/app.js", JS, "app.js"),
    asset!("/console/api.js", JS, "api.js"),
    asset!("/console/dom.js", JS, "dom.js"),
    asset!("/console/keys.js", JS, "keys.js"),
    asset!("/console/connectors.js", JS, "connectors.js"),
    asset!("/console/responses.js", JS, "responses.js"),
    asset!("/console/trace.js", JS, "trace.js"),
    asset!("/console/turns.js", JS, "turns.js"),
    asset!("/console/approvals.js", JS, "approvals.js"),
    asset!("/console/live.js", JS, "live.js"),
];

/// The file served at `path`.
pub fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.path == path)
}
