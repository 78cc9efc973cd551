//! GitHub user search (public profiles): `GET {base}/search/users?q=…&per_page=n`, then
//! `GET {base}/users/{login}` for each hit's profile (name, company, location). With
//! `GITHUB_TOKEN` the token goes in `Authorization: Bearer` (30 searches a minute instead
//! of 10). Hints become qualifiers: `location:"…"`, `language:…` (skill), `"…" in:name`;
//! title, company and school join the text.
//!
//! Only `login` is taken from a search hit: the profile is read from our own base URL with
//! the login as one path segment (a hit's `url` is never followed). From a profile only
//! `login, id, name, company, location, html_url, updated_at` are decoded: `email`, `bio`,
//! `blog`, `twitter_username` and the rest never leave the answer's bytes. A 403 with
//! `x-ratelimit-remaining: 0`, or a 429, is a rate limit.

use netguard::Policy;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use url::Url;

use crate::backend::{Directory, DirectoryError};
use crate::http;
use crate::query::{Hint, Search};
use crate::record::Person;

/// The public endpoint's base.
pub const DEFAULT_BASE_URL: &str = "https://api.github.com";

pub struct GitHub {
    client: reqwest::Client,
    base: Url,
    headers: HeaderMap,
}

impl GitHub {
    /// GitHub user search, with `token` when there is one.
    pub fn new(
        token: Option<&str>,
        base_url: Option<&str>,
        policy: &Policy,
    ) -> Result<GitHub, DirectoryError> {
        let mut headers = HeaderMap::new();
        if let Some(token) = token.filter(|t| !t.trim().is_empty()) {
            headers.insert(
                reqwest::header::AUTHORIZATION,
                http::secret_header("GitHub", token, "Bearer ")?,
            );
        }
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/vnd.github+json"),
        );
        headers.insert(
            "x-github-api-version",
            HeaderValue::from_static("2022-11-28"),
        );
        headers.insert(
            reqwest::header::USER_AGENT,
            HeaderValue::from_static("agentd-people-search"),
        );
        Ok(GitHub {
            client: http::client(policy)?,
            base: http::endpoint(policy, base_url.unwrap_or(DEFAULT_BASE_URL), "/")?,
            headers,
        })
    }

    fn url(&self, segments: &[&str]) -> Result<Url, DirectoryError> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| DirectoryError::Config("the GitHub base URL cannot be a base".into()))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    async fn profile(&self, login: &str) -> Result<Option<Person>, DirectoryError> {
        let request = self
            .client
            .get(self.url(&["users", login])?)
            .headers(self.headers.clone());
        let profile: Profile = http::send(request).await?.json()?;
        Ok(profile.person())
    }
}

/// A qualifier value, quoted when it has spaces (quotes inside dropped).
fn qualifier(value: &str) -> String {
    let value = value.replace('"', "");
    if value.contains(char::is_whitespace) {
        format!("\"{value}\"")
    } else {
        value
    }
}

/// The `q` of one search: text plus qualifiers, at most 256 characters.
pub fn q(search: &Search) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !search.text.trim().is_empty() {
        parts.push(search.text.trim().to_owned());
    }
    for (hint, value) in search.hints.iter() {
        match hint {
            Hint::Location => parts.push(format!("location:{}", qualifier(value))),
            Hint::Skill => parts.push(format!("language:{}", qualifier(value))),
            Hint::Name => parts.push(format!("{} in:name", qualifier(value))),
            Hint::Title | Hint::Company | Hint::School => parts.push(value.to_owned()),
        }
    }
    parts.push("type:user".to_owned());
    parts.join(" ").chars().take(256).collect()
}

#[derive(Deserialize)]
struct Found {
    #[serde(default)]
    items: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    login: String,
}

/// The allow-listed fields of a GitHub user.
#[derive(Deserialize)]
struct Profile {
    login: String,
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    company: Option<String>,
    #[serde(default)]
    location: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
}

impl Profile {
    fn person(self) -> Option<Person> {
        let name = self
            .name
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| self.login.clone());
        let company = self
            .company
            .as_deref()
            .map(|c| c.trim().trim_start_matches('@'));
        let id = self
            .id
            .map_or_else(|| self.login.clone(), |id| id.to_string());
        Some(
            Person::new("github", &id, &name)?
                .company(company)
                .location(&[self.location.as_deref()])
                .profile_url(
                    self.html_url
                        .as_deref()
                        .or(Some(&format!("https://github.com/{}", self.login))),
                )
                .last_updated(self.updated_at.as_deref()),
        )
    }
}

/// A GitHub login: letters, digits and single hyphens (anything else is not a login and
/// is not looked up).
fn is_login(login: &str) -> bool {
    !login.is_empty()
        && login.len() <= 39
        && login.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

#[async_trait::async_trait]
impl Directory for GitHub {
    fn name(&self) -> &'static str {
        "github"
    }

    async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        let mut url = self.url(&["search", "users"])?;
        url.query_pairs_mut()
            .append_pair("q", &q(search))
            .append_pair("per_page", &search.limit.to_string());
        let request = self.client.get(url).headers(self.headers.clone());
        let found: Found = http::send(request).await?.json()?;
        let logins: Vec<String> = found
            .items
            .into_iter()
            .map(|hit| hit.login)
            .filter(|login| is_login(login))
            .take(search.limit)
            .collect();
        let profiles =
            futures::future::join_all(logins.iter().map(|login| self.profile(login))).await;
        let mut people = Vec::new();
        for profile in profiles {
            match profile {
                Ok(Some(person)) => people.push(person),
                Ok(None) => {}
                // One unreadable profile drops that person; a rate limit ends the search.
                Err(err @ DirectoryError::RateLimited { .. }) if people.is_empty() => {
                    return Err(err);
                }
                Err(err) => tracing::debug!(error = %err, "a GitHub profile could not be read"),
            }
        }
        Ok(people)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Hints;

    #[test]
    fn qualifiers() {
        let search = Search {
            text: "compiler engineer".into(),
            hints: Hints {
                location: Some("New York".into()),
                skill: Some("rust".into()),
                name: Some("Ada \"x\"".into()),
                ..Hints::default()
            },
            limit: 3,
            project: String::new(),
        };
        assert_eq!(
            q(&search),
            "compiler engineer \"Ada x\" in:name language:rust location:\"New York\" type:user"
        );
        assert!(is_login("octo-cat"));
        assert!(!is_login("../admin"));
        assert!(!is_login(""));
    }
}
