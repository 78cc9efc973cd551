//! People Data Labs: `POST {base}/v5/person/search` with the key in `X-Api-Key` and an
//! Elasticsearch query: the text as `match` clauses on name, title, company and skills
//! (any may match), each hint as a `match` it must satisfy. PDL answers 404 when nothing
//! matches (an empty list here) and bills per record returned, so `size` is the limit.
//!
//! Read from each record: `id, full_name, job_title, job_company_name, job_title_role`
//! (as department), `location_locality/region/country` (or `location_name`), `skills`,
//! `education[].school.name` and `.degrees`, `linkedin_url` / `github_url`,
//! `job_last_verified` / `job_last_changed`. Nothing else is decoded: e-mails, phones,
//! street addresses, birth dates and sex never leave the answer's bytes.

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
pub const DEFAULT_BASE_URL: &str = "https://api.peopledatalabs.com";

pub struct Pdl {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
}

impl Pdl {
    pub fn new(
        api_key: &str,
        base_url: Option<&str>,
        policy: &Policy,
    ) -> Result<Pdl, DirectoryError> {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", http::secret_header("PDL", api_key, "")?);
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        Ok(Pdl {
            client: http::client(policy)?,
            endpoint: http::endpoint(
                policy,
                base_url.unwrap_or(DEFAULT_BASE_URL),
                "/v5/person/search",
            )?,
            headers,
        })
    }
}

fn field(hint: Hint) -> &'static str {
    match hint {
        Hint::Name => "full_name",
        Hint::Title => "job_title",
        Hint::Company => "job_company_name",
        Hint::School => "education.school.name",
        Hint::Skill => "skills",
        Hint::Location => "location_name",
    }
}

/// The Elasticsearch query of one search.
pub fn query(search: &Search) -> Value {
    let mut must: Vec<Value> = search
        .hints
        .iter()
        .map(|(hint, value)| json!({"match": {field(hint): value.to_lowercase()}}))
        .collect();
    let text = search.text.trim().to_lowercase();
    if !text.is_empty() {
        let should: Vec<Value> = ["full_name", "job_title", "job_company_name", "skills"]
            .iter()
            .map(|field| json!({"match": {*field: text}}))
            .collect();
        must.push(json!({"bool": {"should": should}}));
    }
    json!({
        "query": {"bool": {"must": must}},
        "size": search.limit,
        "titlecase": true,
    })
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    data: Vec<Record>,
}

/// The allow-listed fields of a PDL person record.
#[derive(Deserialize)]
struct Record {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    full_name: Option<String>,
    #[serde(default)]
    job_title: Option<String>,
    #[serde(default)]
    job_company_name: Option<String>,
    #[serde(default)]
    job_title_role: Option<String>,
    #[serde(default)]
    location_locality: Option<String>,
    #[serde(default)]
    location_region: Option<String>,
    #[serde(default)]
    location_country: Option<String>,
    #[serde(default)]
    location_name: Option<String>,
    #[serde(default)]
    skills: Vec<String>,
    #[serde(default)]
    education: Vec<Education>,
    #[serde(default)]
    linkedin_url: Option<String>,
    #[serde(default)]
    github_url: Option<String>,
    #[serde(default)]
    job_last_verified: Option<String>,
    #[serde(default)]
    job_last_changed: Option<String>,
}

#[derive(Deserialize)]
struct Education {
    #[serde(default)]
    school: Option<School>,
    #[serde(default)]
    degrees: Vec<String>,
}

#[derive(Deserialize)]
struct School {
    #[serde(default)]
    name: Option<String>,
}

impl Record {
    fn person(self) -> Option<Person> {
        let education: Vec<String> = self
            .education
            .iter()
            .filter_map(|entry| {
                let school = entry.school.as_ref()?.name.as_deref()?;
                Some(match entry.degrees.first() {
                    Some(degree) => format!("{school}, {degree}"),
                    None => school.to_owned(),
                })
            })
            .collect();
        let location: Vec<Option<&str>> =
            if self.location_locality.is_some() || self.location_country.is_some() {
                vec![
                    self.location_locality.as_deref(),
                    self.location_region.as_deref(),
                    self.location_country.as_deref(),
                ]
            } else {
                vec![self.location_name.as_deref()]
            };
        Some(
            Person::new(
                "pdl",
                self.id.as_deref().unwrap_or_default(),
                self.full_name.as_deref()?,
            )?
            .title(self.job_title.as_deref())
            .company(self.job_company_name.as_deref())
            .department(self.job_title_role.as_deref())
            .location(&location)
            .education(education.iter().map(String::as_str))
            .skills(self.skills.iter().map(String::as_str))
            .profile_url(self.linkedin_url.as_deref().or(self.github_url.as_deref()))
            .last_updated(
                self.job_last_verified
                    .as_deref()
                    .or(self.job_last_changed.as_deref()),
            ),
        )
    }
}

#[async_trait::async_trait]
impl Directory for Pdl {
    fn name(&self) -> &'static str {
        "pdl"
    }

    async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&query(search));
        let answer = http::send(request).await?;
        if answer.status == 404 {
            // PDL's "no records were found matching your search".
            return Ok(Vec::new());
        }
        let answer: Answer = answer.json()?;
        Ok(answer
            .data
            .into_iter()
            .filter_map(Record::person)
            .take(search.limit)
            .collect())
    }
}
