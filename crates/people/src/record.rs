//! The one record every back end maps into: [`Person`], an allow list of professional
//! fields. Nothing else about a person exists past a back end's decoder: back ends declare
//! only these fields when they read an answer (serde skips the rest), ask directories
//! for only these attributes, and free text is scrubbed of e-mail addresses and phone
//! numbers on its way in ([`Person::new`] and the setters all go through [`clean`]).

use std::sync::LazyLock;

use regex::Regex;

/// Longest text kept of one field (characters).
const MAX_FIELD_CHARS: usize = 300;
/// Longest summary kept (characters).
const MAX_SUMMARY_CHARS: usize = 600;
/// Most skills and education entries kept.
const MAX_LIST: usize = 12;

/// One person, as the tool shows them: professional information only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Person {
    /// The back end's own id of the record (for `urn:agentd:people:{source}:{id}`).
    id: String,
    name: String,
    title: Option<String>,
    company: Option<String>,
    department: Option<String>,
    /// City, region, country: never a street address.
    location: Option<String>,
    /// `School, degree` entries.
    education: Vec<String>,
    skills: Vec<String>,
    /// An `http(s)` profile page; checked against the network guard before it is shown.
    profile_url: Option<String>,
    /// The operator's own `summary` column (directory imports only).
    summary: Option<String>,
    /// Columns the operator chose to show (`extra_columns`), as (column, value).
    extra: Vec<(String, String)>,
    /// The back end: `directory`, `pdl`, `apollo`, `github`, `orcid`, `scim`, `ldap`.
    source: &'static str,
    /// `YYYY-MM-DD`.
    last_updated: Option<String>,
}

static EMAIL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)[a-z0-9._%+\-]+(?:@|\s*\[at\]\s*|\s+at\s+)[a-z0-9.\-]+\.[a-z]{2,}").ok()
});
static PHONE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\+?\(?\d[\d\s().\-/]{6,}\d").ok());

/// One line of text without e-mail addresses or phone-like digit runs, at most
/// `max_chars` characters; `None` when nothing is left.
pub fn clean(text: &str, max_chars: usize) -> Option<String> {
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(email) = &*EMAIL
        && email.is_match(&text)
    {
        text = email.replace_all(&text, "").into_owned();
    }
    if let Some(phone) = &*PHONE
        && phone.is_match(&text)
    {
        // Digit runs long enough to be a phone number; dates and year ranges (8 digits
        // at most) stay.
        text = phone
            .replace_all(&text, |found: &regex::Captures<'_>| {
                let run = &found[0];
                let digits = run.chars().filter(char::is_ascii_digit).count();
                if digits >= 9 || (run.starts_with('+') && digits >= 7) {
                    String::new()
                } else {
                    run.to_owned()
                }
            })
            .into_owned();
    }
    // Tidy what a removal left behind: `(call )` -> `(call)`, `(, )` -> nothing.
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    loop {
        let tidied = text
            .replace("( ", "(")
            .replace(" )", ")")
            .replace("(,", "(")
            .replace(",)", ")")
            .replace(" ,", ",")
            .replace("()", "");
        if tidied == text {
            break;
        }
        text = tidied;
    }
    let text = text
        .trim_matches(|c: char| matches!(c, ',' | ';' | '-' | '|') || c.is_whitespace())
        .to_owned();
    if text.is_empty() {
        return None;
    }
    Some(match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    })
}

fn clean_opt(text: Option<&str>) -> Option<String> {
    text.and_then(|text| clean(text, MAX_FIELD_CHARS))
}

impl Person {
    /// A person from `source` with a name (`None` when the name is empty once cleaned:
    /// a record without a name is not shown).
    pub fn new(source: &'static str, id: &str, name: &str) -> Option<Person> {
        Some(Person {
            id: id.trim().to_owned(),
            name: clean(name, MAX_FIELD_CHARS)?,
            source,
            ..Person::default()
        })
    }

    pub fn title(mut self, title: Option<&str>) -> Person {
        self.title = clean_opt(title);
        self
    }

    pub fn company(mut self, company: Option<&str>) -> Person {
        self.company = clean_opt(company);
        self
    }

    pub fn department(mut self, department: Option<&str>) -> Person {
        self.department = clean_opt(department);
        self
    }

    /// The location from its parts (city, region, country; empty parts skipped, repeats
    /// dropped).
    pub fn location(mut self, parts: &[Option<&str>]) -> Person {
        let mut kept: Vec<String> = Vec::new();
        for part in parts.iter().flatten() {
            if let Some(part) = clean(part, 80)
                && !kept.iter().any(|k| k.eq_ignore_ascii_case(&part))
            {
                kept.push(part);
            }
        }
        self.location = (!kept.is_empty()).then(|| kept.join(", "));
        self
    }

    pub fn education<'a>(mut self, entries: impl IntoIterator<Item = &'a str>) -> Person {
        self.education = clean_list(entries);
        self
    }

    pub fn skills<'a>(mut self, skills: impl IntoIterator<Item = &'a str>) -> Person {
        self.skills = clean_list(skills);
        self
    }

    /// A profile URL; one without a scheme (`linkedin.com/in/x`) gets `https://`. Anything
    /// that is not an `http(s)` URL is dropped here; the tool checks the rest against the
    /// network guard.
    pub fn profile_url(mut self, url: Option<&str>) -> Person {
        self.profile_url = url.and_then(normalize_url);
        self
    }

    /// Extra columns the operator configured, values cleaned like every other field.
    pub fn extra<'a>(mut self, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Person {
        self.extra = pairs
            .into_iter()
            .filter_map(|(column, value)| {
                let column = column.trim().to_ascii_lowercase();
                let value = clean(value, MAX_FIELD_CHARS)?;
                (!column.is_empty()).then_some((column, value))
            })
            .take(MAX_LIST)
            .collect();
        self
    }

    pub fn extra_fields(&self) -> &[(String, String)] {
        &self.extra
    }

    pub fn summary(mut self, summary: Option<&str>) -> Person {
        self.summary = summary.and_then(|text| clean(text, MAX_SUMMARY_CHARS));
        self
    }

    /// The last-updated date, in any common form; kept as `YYYY-MM-DD` when it is a date.
    pub fn last_updated(mut self, date: Option<&str>) -> Person {
        self.last_updated = date.and_then(normalize_date);
        self
    }

    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn job_title(&self) -> Option<&str> {
        self.title.as_deref()
    }
    pub fn employer(&self) -> Option<&str> {
        self.company.as_deref()
    }
    pub fn dept(&self) -> Option<&str> {
        self.department.as_deref()
    }
    pub fn place(&self) -> Option<&str> {
        self.location.as_deref()
    }
    pub fn schools(&self) -> &[String] {
        &self.education
    }
    pub fn skill_list(&self) -> &[String] {
        &self.skills
    }
    pub fn profile(&self) -> Option<&str> {
        self.profile_url.as_deref()
    }
    pub fn about(&self) -> Option<&str> {
        self.summary.as_deref()
    }
    pub fn source(&self) -> &'static str {
        self.source
    }
    pub fn updated(&self) -> Option<&str> {
        self.last_updated.as_deref()
    }

    /// Drops the profile URL (the guard refused it).
    pub(crate) fn without_profile_url(mut self) -> Person {
        self.profile_url = None;
        self
    }

    /// The stable reference of a record without a profile page.
    pub fn urn(&self) -> String {
        let id = if self.id.is_empty() {
            self.name.to_lowercase().replace(' ', "-")
        } else {
            self.id.clone()
        };
        format!("urn:agentd:people:{}:{id}", self.source)
    }

    /// The result's URL: the profile page, else [`Person::urn`].
    pub fn url(&self) -> String {
        self.profile_url.clone().unwrap_or_else(|| self.urn())
    }

    /// `Name — Title, Company`.
    pub fn headline(&self) -> String {
        let role = [self.title.as_deref(), self.company.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
        if role.is_empty() {
            self.name.clone()
        } else {
            format!("{} — {role}", self.name)
        }
    }

    /// Department, location, education, skills, extra columns and summary in one line.
    pub fn snippet(&self) -> String {
        let mut parts = Vec::new();
        if let Some(department) = &self.department {
            parts.push(format!("Department: {department}"));
        }
        if let Some(location) = &self.location {
            parts.push(format!("Location: {location}"));
        }
        if !self.education.is_empty() {
            parts.push(format!("Education: {}", self.education.join("; ")));
        }
        if !self.skills.is_empty() {
            parts.push(format!("Skills: {}", self.skills.join(", ")));
        }
        for (column, value) in &self.extra {
            parts.push(format!("{column}: {value}"));
        }
        if let Some(summary) = &self.summary {
            parts.push(summary.clone());
        }
        parts.push(format!("Source: {}", self.source));
        parts.join(". ")
    }
}

fn clean_list<'a>(entries: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for entry in entries {
        if let Some(entry) = clean(entry, 120)
            && !kept.contains(&entry)
        {
            kept.push(entry);
        }
        if kept.len() == MAX_LIST {
            break;
        }
    }
    kept
}

fn normalize_url(url: &str) -> Option<String> {
    let url = url.trim();
    if url.is_empty() {
        return None;
    }
    let with_scheme = if url.contains("://") {
        url.to_owned()
    } else if url.contains(':') {
        // `javascript:…`, `mailto:…`, `data:…`: not a page.
        return None;
    } else {
        format!("https://{url}")
    };
    let parsed = url::Url::parse(&with_scheme).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return None;
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return None;
    }
    Some(parsed.to_string())
}

/// `YYYY-MM-DD` from `2025-03-01`, an RFC 3339 time, an LDAP generalized time
/// (`20250301120000Z`) or a Unix time in seconds.
pub fn normalize_date(text: &str) -> Option<String> {
    let text = text.trim();
    let date = if let Some(head) = text.get(..10)
        && let Ok(date) = chrono::NaiveDate::parse_from_str(head, "%Y-%m-%d")
    {
        Some(date)
    } else if text.len() >= 8 && text[..8].chars().all(|c| c.is_ascii_digit()) {
        chrono::NaiveDate::parse_from_str(&text[..8], "%Y%m%d").ok()
    } else {
        None
    };
    date.map(|date| date.format("%Y-%m-%d").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_loses_emails_and_phone_numbers() {
        assert_eq!(
            clean("CTO (ada@example.com, +1 (555) 123-4567)", 100).as_deref(),
            Some("CTO")
        );
        assert_eq!(
            clean("Builds it (call +44 20 7946 0958)", 100).as_deref(),
            Some("Builds it (call)")
        );
        assert_eq!(
            clean("Staff  Engineer\n  ada at example dot com", 100).as_deref(),
            Some("Staff Engineer ada at example dot com")
        );
        assert_eq!(
            clean("reach me: ada [at] example.org", 100).as_deref(),
            Some("reach me:")
        );
        assert_eq!(
            clean("Team of 12 since 2019-2023", 100).as_deref(),
            Some("Team of 12 since 2019-2023")
        );
        assert_eq!(
            clean("Call +49 30 1234567 now", 100).as_deref(),
            Some("Call now")
        );
        assert_eq!(clean("  ", 10), None);
        assert_eq!(clean("abcdef", 3).as_deref(), Some("abc…"));
    }

    #[test]
    fn profile_urls_are_http_pages_only() {
        let with = |url: &str| {
            Person::new("pdl", "1", "Ada")
                .unwrap()
                .profile_url(Some(url))
        };
        assert_eq!(
            with("linkedin.com/in/ada").profile(),
            Some("https://linkedin.com/in/ada")
        );
        assert_eq!(with("https://x.org/a").profile(), Some("https://x.org/a"));
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "mailto:ada@example.com",
            "ftp://x.org/",
            "https://user:pw@x.org/",
            "data:text/html,hi",
        ] {
            assert_eq!(with(bad).profile(), None, "{bad}");
        }
    }

    #[test]
    fn headline_snippet_and_urn() {
        let person = Person::new("directory", "e-7", "Ada Lovelace")
            .unwrap()
            .title(Some("Engineer"))
            .company(Some("Analytical Engines"))
            .location(&[Some("London"), None, Some("london"), Some("UK")])
            .skills(["Math", "Math", "Poetry"])
            .last_updated(Some("20250301120000Z"));
        assert_eq!(
            person.headline(),
            "Ada Lovelace — Engineer, Analytical Engines"
        );
        assert_eq!(person.url(), "urn:agentd:people:directory:e-7");
        assert_eq!(
            person.snippet(),
            "Location: London, UK. Skills: Math, Poetry. Source: directory"
        );
        assert_eq!(person.updated(), Some("2025-03-01"));
        assert!(Person::new("x", "1", " (555) 123 4567 ").is_none());
    }
}
