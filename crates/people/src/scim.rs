//! An enterprise directory over SCIM 2.0 (RFC 7644 §3.4.2):
//! `GET {base}/Users?filter=…&attributes=…&startIndex=1&count=n` with a bearer token.
//!
//! The filter: any word of the text appears (`co`) in `displayName`, `title` or
//! `name.familyName` (the people matching most words come first); each hint is a `co` clause on its attribute (`displayName`, `title`,
//! the enterprise extension's `organization` and `department`, `addresses.locality`);
//! school and skill have no SCIM attribute and join the text. String values are JSON
//! strings (quotes and backslashes escaped), so nothing the model writes becomes filter
//! syntax. Inactive users (`active: false`) are left out.
//!
//! `attributes=` asks for the allow-listed attributes only, and only they are decoded:
//! `id, displayName, name.givenName/familyName, title, profileUrl,
//! addresses[].locality/region/country, meta.lastModified`, and the enterprise
//! extension's `organization, department`. `emails`, `phoneNumbers`, street addresses,
//! `userName` and the rest never leave the answer's bytes.

use netguard::Policy;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use url::Url;

use crate::backend::{Directory, DirectoryError};
use crate::http;
use crate::query::{Hint, Search, words};
use crate::record::Person;

const ENTERPRISE: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";

/// The attributes asked for.
const ATTRIBUTES: &[&str] = &[
    "id",
    "displayName",
    "name.givenName",
    "name.familyName",
    "title",
    "profileUrl",
    "active",
    "addresses.locality",
    "addresses.region",
    "addresses.country",
    "meta.lastModified",
    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:organization",
    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
];

pub struct Scim {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
}

impl Scim {
    /// The SCIM service at `base_url` (e.g. `https://idp.example.com/scim/v2`).
    pub fn new(base_url: &str, token: &str, policy: &Policy) -> Result<Scim, DirectoryError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            http::secret_header("SCIM", token, "Bearer ")?,
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/scim+json, application/json"),
        );
        Ok(Scim {
            client: http::client(policy)?,
            endpoint: http::endpoint(policy, base_url, "/Users")?,
            headers,
        })
    }
}

/// A SCIM string literal.
fn literal(value: &str) -> String {
    serde_json::Value::String(value.to_owned()).to_string()
}

/// The filter of one search; `None` when there is nothing to filter on.
pub fn filter(search: &Search) -> Option<String> {
    let mut text = search.words();
    let mut clauses: Vec<String> = Vec::new();
    for (hint, value) in search.hints.iter() {
        let attribute = match hint {
            Hint::Name => "displayName".to_owned(),
            Hint::Title => "title".to_owned(),
            Hint::Company => format!("{ENTERPRISE}:organization"),
            Hint::Location => "addresses.locality".to_owned(),
            Hint::School | Hint::Skill => {
                text.extend(words(value));
                continue;
            }
        };
        clauses.push(format!("{attribute} co {}", literal(value)));
    }
    let any: Vec<String> = text
        .iter()
        .take(8)
        .map(|word| {
            let value = literal(word);
            format!("displayName co {value} or title co {value} or name.familyName co {value}")
        })
        .collect();
    if !any.is_empty() {
        clauses.push(format!("({})", any.join(" or ")));
    }
    (!clauses.is_empty()).then(|| clauses.join(" and "))
}

#[derive(Deserialize)]
struct ListResponse {
    #[serde(default, rename = "Resources")]
    resources: Vec<User>,
}

/// The allow-listed attributes of a SCIM user.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct User {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    name: Option<Name>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    profile_url: Option<String>,
    #[serde(default)]
    active: Option<bool>,
    #[serde(default)]
    addresses: Vec<Address>,
    #[serde(default)]
    meta: Option<Meta>,
    #[serde(
        default,
        rename = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
    )]
    enterprise: Option<Enterprise>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Name {
    #[serde(default)]
    given_name: Option<String>,
    #[serde(default)]
    family_name: Option<String>,
}

#[derive(Deserialize)]
struct Address {
    #[serde(default)]
    locality: Option<String>,
    #[serde(default)]
    region: Option<String>,
    #[serde(default)]
    country: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    last_modified: Option<String>,
}

#[derive(Deserialize)]
struct Enterprise {
    #[serde(default)]
    organization: Option<String>,
    #[serde(default)]
    department: Option<String>,
}

impl User {
    fn person(self) -> Option<Person> {
        if self.active == Some(false) {
            return None;
        }
        let name = match self.display_name.filter(|n| !n.trim().is_empty()) {
            Some(name) => name,
            None => {
                let name = self.name?;
                [name.given_name, name.family_name]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        };
        let address = self.addresses.first();
        let (organization, department) = match self.enterprise {
            Some(e) => (e.organization, e.department),
            None => (None, None),
        };
        Some(
            Person::new("scim", self.id.as_deref().unwrap_or_default(), &name)?
                .title(self.title.as_deref())
                .company(organization.as_deref())
                .department(department.as_deref())
                .location(&[
                    address.and_then(|a| a.locality.as_deref()),
                    address.and_then(|a| a.region.as_deref()),
                    address.and_then(|a| a.country.as_deref()),
                ])
                .profile_url(self.profile_url.as_deref())
                .last_updated(self.meta.and_then(|m| m.last_modified).as_deref()),
        )
    }
}

#[async_trait::async_trait]
impl Directory for Scim {
    fn name(&self) -> &'static str {
        "scim"
    }

    async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        let Some(filter) = filter(search) else {
            return Ok(Vec::new());
        };
        let mut url = self.endpoint.clone();
        url.query_pairs_mut()
            .append_pair("filter", &filter)
            .append_pair("attributes", &ATTRIBUTES.join(","))
            .append_pair("startIndex", "1")
            .append_pair("count", &search.limit.to_string());
        let request = self.client.get(url).headers(self.headers.clone());
        let list: ListResponse = http::send(request).await?.json()?;
        let people = list
            .resources
            .into_iter()
            .filter_map(User::person)
            .collect();
        Ok(crate::query::rank(people, search))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Hints;

    #[test]
    fn filters_escape_values() {
        let search = Search {
            text: "data".into(),
            hints: Hints {
                title: Some("eng\" or userName pr or title co \"".into()),
                skill: Some("sql".into()),
                ..Hints::default()
            },
            limit: 5,
            project: String::new(),
        };
        assert_eq!(
            filter(&search).unwrap(),
            "title co \"eng\\\" or userName pr or title co \\\"\" and \
             (displayName co \"data\" or title co \"data\" or name.familyName co \"data\" or \
             displayName co \"sql\" or title co \"sql\" or name.familyName co \"sql\")"
        );
    }
}
