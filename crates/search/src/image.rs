//! The back-end port of `image_search`: one query in, images out.

use crate::backend::BackendError;

/// One image search as a back end receives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageQuery {
    pub text: String,
    /// How many images to ask for (1..=50).
    pub max_results: u32,
    /// Domains the source pages must come from (bare, lower case; subdomains count).
    pub allow_domains: Vec<String>,
    /// Domains they must not come from.
    pub deny_domains: Vec<String>,
    /// `filters.safe_search`: ask the service to leave out explicit images.
    pub safe_search: bool,
}

/// Images asked for when the request names no `max_results`.
pub const DEFAULT_MAX_IMAGES: u32 = 10;

impl ImageQuery {
    /// `max_results` within 1..=50 (0 means [`DEFAULT_MAX_IMAGES`]).
    pub fn limit(&self) -> u32 {
        match self.max_results {
            0 => DEFAULT_MAX_IMAGES,
            n => n.min(crate::backend::MAX_RESULTS),
        }
    }

    /// The text with a `site:` operator when the allow list names exactly one domain.
    pub fn text_with_site(&self) -> String {
        match self.allow_domains.as_slice() {
            [domain] => format!("{} site:{domain}", self.text),
            _ => self.text.clone(),
        }
    }
}

/// One image as a back end found it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageHit {
    /// The image itself.
    pub image_url: String,
    /// The page the image is on.
    pub origin_url: String,
    pub title: Option<String>,
    /// Pixels, when the service (or the page's markup) says.
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// The format the service names (`jpeg`, `png`, …), when it does.
    pub format: Option<String>,
}

/// `1920 x 1080`, `1920x1080`, `1920×1080` -> (1920, 1080).
pub fn parse_resolution(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split(['x', 'X', '×']).map(str::trim);
    let width = parts.next()?.parse().ok()?;
    let height = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((width, height))
}

/// A service `image_search` can query.
#[async_trait::async_trait]
pub trait ImageBackend: Send + Sync {
    /// A short name for logs and error texts (`searxng`, `brave`, `local index`).
    fn name(&self) -> &'static str;

    async fn search_images(&self, query: &ImageQuery) -> Result<Vec<ImageHit>, BackendError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolutions() {
        assert_eq!(parse_resolution("1920 x 1080"), Some((1920, 1080)));
        assert_eq!(parse_resolution("640×480"), Some((640, 480)));
        assert_eq!(parse_resolution("big"), None);
        assert_eq!(parse_resolution("1x2x3"), None);
    }
}
