//! The ORCID public API (researchers): `GET {base}/v3.0/expanded-search/?q=…&rows=n` with
//! `Accept: application/json`, keyless. `q` is Solr syntax: the text's words (any may
//! match), and each hint in its field (`given-and-family-names`, `affiliation-org-name`
//! for company and school, `keyword` for skill), every value quoted and escaped.
//!
//! Read from each result: `orcid-id`, `given-names`, `family-names`, `credit-name`,
//! `institution-name[0]`. The `email` list is not decoded. The profile URL is
//! `https://orcid.org/{orcid-id}` (built here for a well-formed iD only).

use netguard::Policy;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use url::Url;

use crate::backend::{Directory, DirectoryError};
use crate::http;
use crate::query::{Hint, Search, words};
use crate::record::Person;

/// The public endpoint's base.
pub const DEFAULT_BASE_URL: &str = "https://pub.orcid.org";

pub struct Orcid {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
}

impl Orcid {
    pub fn new(base_url: Option<&str>, policy: &Policy) -> Result<Orcid, DirectoryError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        Ok(Orcid {
            client: http::client(policy)?,
            endpoint: http::endpoint(
                policy,
                base_url.unwrap_or(DEFAULT_BASE_URL),
                "/v3.0/expanded-search/",
            )?,
            headers,
        })
    }
}

/// A Solr phrase: `"…"` with `\` and `"` escaped.
fn phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The Solr `q` of one search; `None` when there is nothing to ask.
pub fn q(search: &Search) -> Option<String> {
    let mut clauses: Vec<String> = Vec::new();
    let text = search.words();
    if !text.is_empty() {
        let any: Vec<String> = text.iter().map(|word| phrase(word)).collect();
        clauses.push(format!("({})", any.join(" OR ")));
    }
    for (hint, value) in search.hints.iter() {
        let fields: &[&str] = match hint {
            Hint::Name => &["given-and-family-names"],
            Hint::Company | Hint::School => &["affiliation-org-name"],
            Hint::Skill => &["keyword"],
            Hint::Title | Hint::Location => &[],
        };
        if fields.is_empty() {
            // ORCID has no title or location field: the words join the free text.
            let any: Vec<String> = words(value).iter().map(|w| phrase(w)).collect();
            if !any.is_empty() {
                clauses.push(format!("({})", any.join(" OR ")));
            }
        }
        for field in fields {
            clauses.push(format!("{field}:{}", phrase(value)));
        }
    }
    (!clauses.is_empty()).then(|| clauses.join(" AND "))
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default, rename = "expanded-result")]
    results: Option<Vec<Record>>,
}

/// The allow-listed fields of an ORCID expanded-search result.
#[derive(Deserialize)]
struct Record {
    #[serde(default, rename = "orcid-id")]
    orcid_id: Option<String>,
    #[serde(default, rename = "given-names")]
    given_names: Option<String>,
    #[serde(default, rename = "family-names")]
    family_names: Option<String>,
    #[serde(default, rename = "credit-name")]
    credit_name: Option<String>,
    #[serde(default, rename = "institution-name")]
    institutions: Vec<String>,
}

/// `0000-0002-1825-0097`.
fn is_orcid(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.len() == 19
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 9 | 14 => *b == b'-',
            18 => b.is_ascii_digit() || *b == b'X',
            _ => b.is_ascii_digit(),
        })
}

impl Record {
    fn person(self) -> Option<Person> {
        let id = self.orcid_id.filter(|id| is_orcid(id))?;
        let name = match self.credit_name.filter(|n| !n.trim().is_empty()) {
            Some(name) => name,
            None => [self.given_names.as_deref(), self.family_names.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" "),
        };
        Some(
            Person::new("orcid", &id, &name)?
                .company(self.institutions.first().map(String::as_str))
                .profile_url(Some(&format!("https://orcid.org/{id}"))),
        )
    }
}

#[async_trait::async_trait]
impl Directory for Orcid {
    fn name(&self) -> &'static str {
        "orcid"
    }

    async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        let Some(q) = q(search) else {
            return Ok(Vec::new());
        };
        let mut url = self.endpoint.clone();
        url.query_pairs_mut()
            .append_pair("q", &q)
            .append_pair("start", "0")
            .append_pair("rows", &search.limit.to_string());
        let request = self.client.get(url).headers(self.headers.clone());
        let answer: Answer = http::send(request).await?.json()?;
        Ok(answer
            .results
            .unwrap_or_default()
            .into_iter()
            .filter_map(Record::person)
            .take(search.limit)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Hints;

    #[test]
    fn solr_query_quotes_and_escapes() {
        let search = Search {
            text: "protein folding".into(),
            hints: Hints {
                company: Some("ETH \"Zürich\"".into()),
                title: Some("professor".into()),
                ..Hints::default()
            },
            limit: 5,
            project: String::new(),
        };
        assert_eq!(
            q(&search).unwrap(),
            "(\"protein\" OR \"folding\") AND (\"professor\") AND affiliation-org-name:\"ETH \\\"Zürich\\\"\""
        );
        assert!(is_orcid("0000-0002-1825-009X"));
        assert!(!is_orcid("0000-0002-1825-009"));
        assert!(!is_orcid("../../etc/passwd/xx"));
    }
}
