//! The guarded fetch: [`Policy::fetch`] and [`Policy::send_capped`], the one way the
//! built-in tools (`fetch_url`, the search back ends, `agentd index add`) read a
//! request-supplied URL. Each call checks the URL, sends through the guarded client,
//! re-checks the address the response came from, and reads at most `max_bytes` of the
//! body, all within one deadline.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use url::Url;

use crate::{Blocked, Policy, blocked_reason, describe};

/// How much of a response [`Policy::fetch`] reads, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// The most body bytes kept. Reading stops there: the rest of the body is never
    /// received (the connection is closed) and [`Fetched::truncated`] says so.
    pub max_bytes: usize,
    /// The deadline for the whole exchange: connect, every redirect hop, the response
    /// head and the body. Past it the call ends with [`FetchError::Timeout`].
    pub total_timeout: Duration,
}

/// A response read by [`Policy::fetch`]. Any status is a response: a 404 or a 500 is
/// here with its body, not an error.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL of the last hop, after redirects.
    pub final_url: Url,
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type` header, when present and visible ASCII.
    pub content_type: Option<String>,
    /// The body, at most [`FetchLimits::max_bytes`] long.
    pub body: Bytes,
    /// True when the body was longer than `max_bytes`: `body` then holds its first
    /// `max_bytes` bytes and the rest was not read.
    pub truncated: bool,
    /// The address the response came from (already checked with
    /// [`Policy::check_ip`]); `None` when the connection did not report one.
    pub remote_addr: Option<SocketAddr>,
}

/// Why [`Policy::fetch`] returned no response. No message carries the URL (whose query
/// may hold a token), header values or anything from the body.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The guard refused the URL, a redirect hop, every address a name resolved to, or
    /// the address the response came from. Nothing was read from a refused address.
    #[error("refused by the network guard: {0}")]
    Blocked(Blocked),
    /// The exchange did not finish within [`FetchLimits::total_timeout`] (the value).
    #[error("the request did not finish within {0:?}")]
    Timeout(Duration),
    /// Any other failure (connection refused, TLS, a reset body, ...), described by
    /// [`describe`].
    #[error("{0}")]
    Http(String),
}

impl Policy {
    /// GETs a request-supplied URL through the guard.
    ///
    /// In order: [`Policy::check_url`] (so IP literals in every spelling are judged
    /// here, since they never reach the resolver); a GET with `client`, whose resolver
    /// and redirect policy check every host name and every hop; then the address the
    /// response came from (`remote_addr`) goes through [`Policy::check_ip`], a second
    /// line against anything that got past the resolver: if it is refused the result
    /// is [`FetchError::Blocked`] and the body is never read. A redirect to a target
    /// reqwest cannot follow (`file:`, `data:`) is refused the same way rather than
    /// returned as an empty 30x. The body is then read up to [`FetchLimits::max_bytes`];
    /// the whole call, body included, is bounded by [`FetchLimits::total_timeout`].
    ///
    /// `client` must have been built from [`Policy::client_builder`] of a policy no
    /// wider than this one (usually this one): a plain `reqwest::Client` resolves names
    /// and follows redirects unchecked, and then only the final `remote_addr` check
    /// stands between the caller and an internal address. Clients are meant to be built
    /// once and shared.
    ///
    /// # Example
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use netguard::{FetchLimits, Policy};
    ///
    /// let policy = Policy::strict();
    /// let client = policy.client_builder().build()?;
    /// let limits = FetchLimits { max_bytes: 1 << 20, total_timeout: Duration::from_secs(20) };
    /// let page = policy.fetch(&client, "https://example.com/", &limits).await?;
    /// if page.truncated {
    ///     // `page.body` holds the first MiB only.
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn fetch(
        &self,
        client: &reqwest::Client,
        url: &str,
        limits: &FetchLimits,
    ) -> Result<Fetched, FetchError> {
        let url = self.check_url(url).map_err(FetchError::Blocked)?;
        let request = client.get(url).build().map_err(from_reqwest)?;
        self.execute_capped(client, request, limits).await
    }

    /// Like [`Policy::fetch`], for a request the caller built (a POST with a JSON body to
    /// a search API, extra headers, ...). The request's URL goes through
    /// [`Policy::check_url`] before anything is sent; the rest is as in `fetch`.
    ///
    /// The request must come from a client built from [`Policy::client_builder`] (see
    /// [`Policy::fetch`]). reqwest moves credentials written in a URL
    /// (`user:pass@host`) into an `Authorization` header when the request is built, so
    /// here the host is checked but such credentials are not refused as they are by
    /// `fetch`.
    pub async fn send_capped(
        &self,
        request: reqwest::RequestBuilder,
        limits: &FetchLimits,
    ) -> Result<Fetched, FetchError> {
        let (client, request) = request.build_split();
        let request = request.map_err(from_reqwest)?;
        self.check_url(request.url().as_str())
            .map_err(FetchError::Blocked)?;
        self.execute_capped(&client, request, limits).await
    }

    /// Sends `request` and reads the capped body, all within `total_timeout`.
    async fn execute_capped(
        &self,
        client: &reqwest::Client,
        request: reqwest::Request,
        limits: &FetchLimits,
    ) -> Result<Fetched, FetchError> {
        let exchange = self.exchange(client, request, limits.max_bytes);
        match tokio::time::timeout(limits.total_timeout, exchange).await {
            Ok(result) => result,
            // Dropping the exchange drops the connection: nothing more is read.
            Err(_elapsed) => Err(FetchError::Timeout(limits.total_timeout)),
        }
    }

    async fn exchange(
        &self,
        client: &reqwest::Client,
        request: reqwest::Request,
        max_bytes: usize,
    ) -> Result<Fetched, FetchError> {
        let mut response = client.execute(request).await.map_err(from_reqwest)?;
        let remote_addr = response.remote_addr();
        if let Some(addr) = remote_addr {
            // Returning here drops the response unread, which closes the connection.
            self.check_ip(addr.ip()).map_err(|blocked| {
                FetchError::Blocked(Blocked(format!(
                    "the response came from a refused address: {blocked}"
                )))
            })?;
        }
        if let Some(blocked) = self.unfollowed_redirect(&response) {
            return Err(FetchError::Blocked(blocked));
        }
        let final_url = response.url().clone();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let (body, truncated) = read_capped(&mut response, max_bytes).await?;
        Ok(Fetched {
            final_url,
            status,
            content_type,
            body,
            truncated,
            remote_addr,
        })
    }

    /// A redirect reqwest handed back instead of following, refused when its target is.
    ///
    /// reqwest only asks the redirect policy about a `Location` it can turn into an
    /// HTTP request target; one it cannot (`file:///etc/passwd`, `data:...`) is returned
    /// as the 30x response itself. Nothing was fetched from it, but to the caller it
    /// is a hop the guard refuses like any other, so it says so instead of passing on an
    /// empty 302.
    fn unfollowed_redirect(&self, response: &reqwest::Response) -> Option<Blocked> {
        let status = response.status();
        let followed_kinds = [301, 302, 303, 307, 308];
        if !followed_kinds.contains(&status.as_u16()) {
            return None;
        }
        let location = response.headers().get(reqwest::header::LOCATION)?;
        let refused = |reason: String| Some(Blocked(format!("redirect refused: {reason}")));
        let Ok(location) = location.to_str() else {
            return refused("the Location header is not valid text".to_owned());
        };
        match response.url().join(location) {
            Ok(target) => self
                .check_url(target.as_str())
                .err()
                .map(|blocked| Blocked(format!("redirect refused: {blocked}"))),
            Err(err) => refused(format!("invalid URL: {err}")),
        }
    }
}

/// The first `max_bytes` of the body, and whether there was more. Stops reading as soon
/// as the body is known to be longer than `max_bytes`.
async fn read_capped(
    response: &mut reqwest::Response,
    max_bytes: usize,
) -> Result<(Bytes, bool), FetchError> {
    let announced = response.content_length();
    // Reserve what the server announced, within the cap; never trust it beyond that.
    let reserve = announced
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(8 * 1024)
        .min(max_bytes);
    let mut body = BytesMut::with_capacity(reserve);
    loop {
        if body.len() == max_bytes && announced.is_some_and(|len| len > max_bytes as u64) {
            // The announced length already says there is more: do not wait for it.
            return Ok((body.freeze(), true));
        }
        let Some(chunk) = response.chunk().await.map_err(from_reqwest)? else {
            return Ok((body.freeze(), false));
        };
        let room = max_bytes.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body.freeze(), true));
        }
        body.extend_from_slice(&chunk);
    }
}

/// A guard refusal found anywhere in the error's causes is [`FetchError::Blocked`];
/// anything else is described without the URL.
fn from_reqwest(err: reqwest::Error) -> FetchError {
    match blocked_reason(&err) {
        Some(blocked) => FetchError::Blocked(blocked),
        None => FetchError::Http(describe(&err)),
    }
}
