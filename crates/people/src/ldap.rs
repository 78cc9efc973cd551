//! An enterprise directory over LDAP (`ldap3`): one connection per search, a simple bind
//! (or none), a subtree search under `base_dn`, at most `limit` entries.
//!
//! The filter (RFC 4515): the operator's object filter (default `(objectClass=person)`),
//! any word of the text as a substring of `cn`, `displayName`, `sn` or `title`, and each
//! hint as a substring of its attributes (`cn`/`displayName`, `title`, `o`/`company`,
//! `l`/`st`/`c`); school and skill join the text. Every value the model wrote is escaped
//! with `ldap3::ldap_escape` (`*` `(` `)` `\` NUL become `\2a` …), so it can only ever be
//! matched, never read as filter syntax. Entries matching most words come first.
//!
//! Only the allow-listed attributes are requested, so the server never sends the rest:
//! `cn, displayName, givenName, sn, title, department, ou, o, company, l, st, c,
//! labeledURI, modifyTimestamp, entryUUID`. `mail`, `telephoneNumber`, `mobile`,
//! `homePostalAddress`, `street` and the rest are never asked for.

use std::time::Duration;

use ldap3::{LdapConnAsync, LdapConnSettings, Scope, SearchEntry, SearchOptions, ldap_escape};

use crate::backend::{Directory, DirectoryError};
use crate::query::{Hint, Search, words};
use crate::record::Person;

/// The attributes asked for.
const ATTRIBUTES: &[&str] = &[
    "cn",
    "displayName",
    "givenName",
    "sn",
    "title",
    "department",
    "ou",
    "o",
    "company",
    "l",
    "st",
    "c",
    "labeledURI",
    "modifyTimestamp",
    "entryUUID",
];

/// The object filter when the operator sets none.
pub const DEFAULT_OBJECT_FILTER: &str = "(objectClass=person)";

/// How to reach and read the directory (`[tools.people_search.ldap]`).
#[derive(Clone, Default)]
pub struct LdapSettings {
    /// `ldap://host:389` or `ldaps://host:636`.
    pub url: String,
    pub base_dn: String,
    /// Bind DN and password; anonymous when the DN is unset.
    pub bind_dn: Option<String>,
    pub bind_password: Option<String>,
    /// Which entries are people (default [`DEFAULT_OBJECT_FILTER`]).
    pub object_filter: Option<String>,
    /// Upgrade an `ldap://` connection with StartTLS.
    pub starttls: bool,
    /// Limit on connecting, binding and searching (default 10 s).
    pub timeout: Option<Duration>,
}

/// The password stays out of logs.
impl std::fmt::Debug for LdapSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LdapSettings")
            .field("url", &self.url)
            .field("base_dn", &self.base_dn)
            .field("bind_dn", &self.bind_dn)
            .field(
                "bind_password",
                &self.bind_password.as_ref().map(|_| "<redacted>"),
            )
            .field("object_filter", &self.object_filter)
            .field("starttls", &self.starttls)
            .field("timeout", &self.timeout)
            .finish()
    }
}

pub struct Ldap {
    settings: LdapSettings,
    timeout: Duration,
}

impl Ldap {
    pub fn new(settings: LdapSettings) -> Result<Ldap, DirectoryError> {
        let url = url::Url::parse(settings.url.trim())
            .map_err(|err| DirectoryError::Config(format!("LDAP url: {err}")))?;
        if !matches!(url.scheme(), "ldap" | "ldaps") {
            return Err(DirectoryError::Config(
                "LDAP url must start with ldap:// or ldaps://".to_owned(),
            ));
        }
        if settings.base_dn.trim().is_empty() {
            return Err(DirectoryError::Config("LDAP base_dn is empty".to_owned()));
        }
        let timeout = settings.timeout.unwrap_or(Duration::from_secs(10));
        Ok(Ldap { settings, timeout })
    }

    fn object_filter(&self) -> &str {
        self.settings
            .object_filter
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .unwrap_or(DEFAULT_OBJECT_FILTER)
    }

    async fn run(&self, filter: &str, limit: usize) -> Result<Vec<SearchEntry>, DirectoryError> {
        let conn_settings = LdapConnSettings::new()
            .set_conn_timeout(self.timeout)
            .set_starttls(self.settings.starttls);
        let (conn, mut ldap) =
            LdapConnAsync::with_settings(conn_settings, self.settings.url.trim())
                .await
                .map_err(ldap_error)?;
        ldap3::drive!(conn);
        if let Some(dn) = self.settings.bind_dn.as_deref().filter(|dn| !dn.is_empty()) {
            ldap.with_timeout(self.timeout)
                .simple_bind(
                    dn,
                    self.settings.bind_password.as_deref().unwrap_or_default(),
                )
                .await
                .map_err(ldap_error)?
                .success()
                .map_err(ldap_error)?;
        }
        let result = ldap
            .with_search_options(SearchOptions::new().sizelimit(limit as i32))
            .with_timeout(self.timeout)
            .search(
                self.settings.base_dn.trim(),
                Scope::Subtree,
                filter,
                ATTRIBUTES.to_vec(),
            )
            .await
            .map_err(ldap_error)?;
        let ldap3::SearchResult(entries, status) = result;
        let _ = ldap.unbind().await;
        // 4 = sizeLimitExceeded: the first `limit` entries are what was asked for.
        if status.rc != 0 && status.rc != 4 {
            return Err(DirectoryError::Ldap(format!(
                "the search failed (result code {}{})",
                status.rc,
                if status.text.is_empty() {
                    String::new()
                } else {
                    format!(": {}", status.text)
                }
            )));
        }
        Ok(entries.into_iter().map(SearchEntry::construct).collect())
    }
}

/// `(|(a=*v*)(b=*v*))` for one value over several attributes, the value escaped.
fn any_of(attributes: &[&str], value: &str) -> String {
    let value = ldap_escape(value);
    let parts: String = attributes
        .iter()
        .map(|attribute| format!("({attribute}=*{value}*)"))
        .collect();
    if attributes.len() == 1 {
        parts
    } else {
        format!("(|{parts})")
    }
}

/// The filter of one search; `None` when there is nothing to match.
pub fn filter(object_filter: &str, search: &Search) -> Option<String> {
    let mut text = search.words();
    let mut clauses: Vec<String> = Vec::new();
    for (hint, value) in search.hints.iter() {
        let attributes: &[&str] = match hint {
            Hint::Name => &["cn", "displayName"],
            Hint::Title => &["title"],
            Hint::Company => &["o", "company"],
            Hint::Location => &["l", "st", "c"],
            Hint::School | Hint::Skill => {
                text.extend(words(value));
                continue;
            }
        };
        clauses.push(any_of(attributes, value.trim()));
    }
    let text: Vec<String> = text
        .iter()
        .take(8)
        .map(|word| any_of(&["cn", "displayName", "sn", "title"], word))
        .collect();
    match text.len() {
        0 => {}
        1 => clauses.extend(text),
        _ => clauses.push(format!("(|{})", text.concat())),
    }
    if clauses.is_empty() {
        return None;
    }
    Some(format!("(&{object_filter}{})", clauses.concat()))
}

fn first<'a>(entry: &'a SearchEntry, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|name| {
        entry
            .attrs
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .and_then(|(_, values)| values.first())
            .map(String::as_str)
    })
}

fn person(entry: &SearchEntry) -> Option<Person> {
    let name = match first(entry, &["displayName", "cn"]) {
        Some(name) => name.to_owned(),
        None => [first(entry, &["givenName"]), first(entry, &["sn"])]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" "),
    };
    let id = first(entry, &["entryUUID"]).unwrap_or(&entry.dn);
    // `labeledURI` is "URI label".
    let url = first(entry, &["labeledURI"]).and_then(|value| value.split_whitespace().next());
    Some(
        Person::new("ldap", id, &name)?
            .title(first(entry, &["title"]))
            .company(first(entry, &["o", "company"]))
            .department(first(entry, &["department", "ou"]))
            .location(&[
                first(entry, &["l"]),
                first(entry, &["st"]),
                first(entry, &["c"]),
            ])
            .profile_url(url)
            .last_updated(first(entry, &["modifyTimestamp"])),
    )
}

fn ldap_error(err: ldap3::LdapError) -> DirectoryError {
    DirectoryError::Ldap(err.to_string())
}

#[async_trait::async_trait]
impl Directory for Ldap {
    fn name(&self) -> &'static str {
        "ldap"
    }

    async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        let Some(filter) = filter(self.object_filter(), search) else {
            return Ok(Vec::new());
        };
        // Ask for more than the limit: the server does not rank, we do.
        let entries = self.run(&filter, (search.limit * 3).max(10)).await?;
        let people = entries.iter().filter_map(person).collect();
        Ok(crate::query::rank(people, search))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Hints;

    #[test]
    fn values_are_escaped_per_rfc_4515() {
        let search = Search {
            text: String::new(),
            hints: Hints {
                title: Some("*)(uid=*))(|(uid=*".into()),
                location: Some("Zürich".into()),
                ..Hints::default()
            },
            limit: 5,
            project: String::new(),
        };
        assert_eq!(
            filter(DEFAULT_OBJECT_FILTER, &search).unwrap(),
            "(&(objectClass=person)(title=*\\2a\\29\\28uid=\\2a\\29\\29\\28|\\28uid=\\2a*)\
             (|(l=*Zürich*)(st=*Zürich*)(c=*Zürich*)))"
        );
        let text = Search {
            text: "ada byron".into(),
            limit: 5,
            ..Search::default()
        };
        assert_eq!(
            filter("(objectClass=inetOrgPerson)", &text).unwrap(),
            "(&(objectClass=inetOrgPerson)(|(|(cn=*ada*)(displayName=*ada*)(sn=*ada*)(title=*ada*))\
             (|(cn=*byron*)(displayName=*byron*)(sn=*byron*)(title=*byron*))))"
        );
        assert_eq!(filter(DEFAULT_OBJECT_FILTER, &Search::default()), None);
    }
}
