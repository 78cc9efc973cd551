//! Apollo.io People API search: `POST {base}/api/v1/mixed_people/api_search` with the key
//! in `x-api-key` (a master key). The text, name, company, school and skill go into
//! `q_keywords`; the title hint is `person_titles[]`, the location hint
//! `person_locations[]`; `per_page` is the limit. This endpoint returns no e-mails or
//! phone numbers; what it does return beyond the allow list is not decoded.
//!
//! Read from each person: `id, name, title, organization.name` (or `organization_name`),
//! `departments[0]`, `city, state, country`, `linkedin_url`, `updated_at`.

use netguard::Policy;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use crate::backend::{Directory, DirectoryError};
use crate::http;
use crate::query::{Hint, Search};
use crate::record::Person;

/// The public endpoint's base.
pub const DEFAULT_BASE_URL: &str = "https://api.apollo.io";

pub struct Apollo {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
}

impl Apollo {
    pub fn new(
        api_key: &str,
        base_url: Option<&str>,
        policy: &Policy,
    ) -> Result<Apollo, DirectoryError> {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", http::secret_header("Apollo", api_key, "")?);
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache"),
        );
        Ok(Apollo {
            client: http::client(policy)?,
            endpoint: http::endpoint(
                policy,
                base_url.unwrap_or(DEFAULT_BASE_URL),
                "/api/v1/mixed_people/api_search",
            )?,
            headers,
        })
    }
}

/// The request body of one search.
pub fn body(search: &Search) -> Value {
    let mut keywords: Vec<&str> = Vec::new();
    if !search.text.trim().is_empty() {
        keywords.push(search.text.trim());
    }
    let mut body = json!({"page": 1, "per_page": search.limit});
    for (hint, value) in search.hints.iter() {
        match hint {
            Hint::Title => body["person_titles"] = json!([value]),
            Hint::Location => body["person_locations"] = json!([value]),
            Hint::Name | Hint::Company | Hint::School | Hint::Skill => keywords.push(value),
        }
    }
    if !keywords.is_empty() {
        body["q_keywords"] = json!(keywords.join(" "));
    }
    body
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    people: Vec<Record>,
}

/// The allow-listed fields of an Apollo person.
#[derive(Deserialize)]
struct Record {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    first_name: Option<String>,
    #[serde(default)]
    last_name: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    organization: Option<Organization>,
    #[serde(default)]
    organization_name: Option<String>,
    #[serde(default)]
    departments: Vec<String>,
    #[serde(default)]
    city: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    country: Option<String>,
    #[serde(default)]
    linkedin_url: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
}

#[derive(Deserialize)]
struct Organization {
    #[serde(default)]
    name: Option<String>,
}

/// `master_engineering_technical` -> `engineering technical`.
fn department(raw: &str) -> String {
    raw.trim_start_matches("master_").replace('_', " ")
}

impl Record {
    fn person(self) -> Option<Person> {
        let name = match self.name.as_deref() {
            Some(name) if !name.trim().is_empty() => name.to_owned(),
            _ => [self.first_name.as_deref(), self.last_name.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" "),
        };
        let company = self
            .organization
            .and_then(|org| org.name)
            .or(self.organization_name);
        let department = self.departments.first().map(|d| department(d));
        Some(
            Person::new("apollo", self.id.as_deref().unwrap_or_default(), &name)?
                .title(self.title.as_deref())
                .company(company.as_deref())
                .department(department.as_deref())
                .location(&[
                    self.city.as_deref(),
                    self.state.as_deref(),
                    self.country.as_deref(),
                ])
                .profile_url(self.linkedin_url.as_deref())
                .last_updated(self.updated_at.as_deref()),
        )
    }
}

#[async_trait::async_trait]
impl Directory for Apollo {
    fn name(&self) -> &'static str {
        "apollo"
    }

    async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&body(search));
        let answer: Answer = http::send(request).await?.json()?;
        Ok(answer
            .people
            .into_iter()
            .filter_map(Record::person)
            .take(search.limit)
            .collect())
    }
}
