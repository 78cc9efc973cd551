//! Pure helpers: domain lists, URL hosts, date parsing and recency cut-offs.

use chrono::{DateTime, Datelike, Months, NaiveDate};
use protocol::request::RecencyFilter;

/// Splits `search_domain_filter` into (allow, deny) lists of bare domains. Entries may be
/// written as `example.com`, `-example.com`, `www.example.com`, `*.example.com` or even
/// `https://example.com/path`; unusable entries are dropped.
pub fn split_domain_filter(entries: &[String]) -> (Vec<String>, Vec<String>) {
    let mut allow = Vec::new();
    let mut deny = Vec::new();
    for entry in entries {
        let entry = entry.trim();
        let (list, bare) = match entry.strip_prefix('-') {
            Some(rest) => (&mut deny, rest),
            None => (&mut allow, entry),
        };
        if let Some(domain) = normalize_domain(bare)
            && !list.contains(&domain)
        {
            list.push(domain);
        }
    }
    (allow, deny)
}

/// `Example.COM.` -> `example.com`; scheme, path, port, `*.` and `www.` are removed.
pub fn normalize_domain(entry: &str) -> Option<String> {
    let mut rest = entry.trim();
    if let Some((_, after)) = rest.split_once("://") {
        rest = after;
    }
    let rest = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Keep IPv6 literals whole; otherwise drop a port.
    let host = if rest.starts_with('[') {
        rest.split_inclusive(']').next().unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or_default()
    };
    let host = host
        .trim_start_matches("*.")
        .trim_matches('.')
        .to_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host);
    (!host.is_empty()).then(|| host.to_owned())
}

/// The host of a URL, lower case and without a trailing dot.
pub fn url_host(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str()?.trim_end_matches('.').to_lowercase();
    (!host.is_empty()).then_some(host)
}

/// Whether `host` is `domain` or one of its subdomains.
pub fn host_matches(host: &str, domain: &str) -> bool {
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|prefix| prefix.ends_with('.'))
}

/// Whether a URL passes the allow and deny lists. With an allow list, a URL without a
/// host (a local file) does not pass.
pub fn domain_allowed(url: &str, allow: &[String], deny: &[String]) -> bool {
    match url_host(url) {
        Some(host) => {
            (allow.is_empty() || allow.iter().any(|domain| host_matches(&host, domain)))
                && !deny.iter().any(|domain| host_matches(&host, domain))
        }
        None => allow.is_empty(),
    }
}

/// `MM/DD/YYYY` (one-digit month and day accepted), the request's date format.
pub fn parse_us_date(text: &str) -> Option<NaiveDate> {
    let mut parts = text.trim().split('/');
    let month = parts.next()?.parse().ok()?;
    let day = parts.next()?.parse().ok()?;
    let year_text = parts.next()?;
    if parts.next().is_some() || year_text.len() != 4 {
        return None;
    }
    NaiveDate::from_ymd_opt(year_text.parse().ok()?, month, day)
}

/// A date in any of the forms search services send: `2025-03-01`, RFC 3339 / ISO 8601
/// date-times (with or without an offset), RFC 2822 (`Sat, 01 Mar 2025 10:00:00 GMT`),
/// `03/01/2025`, `2025/03/01`, `March 1, 2025` and `1 March 2025`.
pub fn parse_date(text: &str) -> Option<NaiveDate> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if let Some(head) = text.get(..10)
        && let Ok(date) = NaiveDate::parse_from_str(head, "%Y-%m-%d")
        && text[10..]
            .chars()
            .next()
            .is_none_or(|c| c == 'T' || c == ' ' || c == 't')
    {
        return Some(date);
    }
    if let Ok(datetime) = DateTime::parse_from_rfc2822(text) {
        return Some(datetime.date_naive());
    }
    if let Some(date) = parse_us_date(text) {
        return Some(date);
    }
    ["%Y/%m/%d", "%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y"]
        .iter()
        .find_map(|format| NaiveDate::parse_from_str(text, format).ok())
}

/// A date as the wire carries it (`YYYY-MM-DD`), when the text is a date at all.
pub fn normalize_date(text: &str) -> Option<String> {
    parse_date(text).map(|date| date.format("%Y-%m-%d").to_string())
}

/// The oldest date a hit may have under `recency` on `today`. Hits carry days, not
/// times, so `hour` keeps what is dated today or yesterday, as `day` does.
pub fn recency_cutoff(recency: RecencyFilter, today: NaiveDate) -> NaiveDate {
    let back = match recency {
        RecencyFilter::Hour | RecencyFilter::Day => today.pred_opt(),
        RecencyFilter::Week => today.checked_sub_days(chrono::Days::new(7)),
        RecencyFilter::Month => today.checked_sub_months(Months::new(1)),
        RecencyFilter::Year => today.with_year(today.year() - 1).or_else(|| {
            // 29 February.
            today.checked_sub_days(chrono::Days::new(366))
        }),
    };
    back.unwrap_or(NaiveDate::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn domain_entries_are_normalised_and_split() {
        let entries: Vec<String> = [
            "Example.com",
            "-spam.org",
            "https://www.docs.rs/crate",
            "*.wiki.org",
            "- ",
            "example.com",
            "host:8080",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (allow, deny) = split_domain_filter(&entries);
        assert_eq!(allow, vec!["example.com", "docs.rs", "wiki.org", "host"]);
        assert_eq!(deny, vec!["spam.org"]);
    }

    #[test]
    fn subdomains_match_but_lookalikes_do_not() {
        assert!(host_matches("example.com", "example.com"));
        assert!(host_matches("www.example.com", "example.com"));
        assert!(host_matches("a.b.example.com", "example.com"));
        assert!(!host_matches("badexample.com", "example.com"));
        assert!(!host_matches("example.com.evil.net", "example.com"));
    }

    #[test]
    fn allow_and_deny_lists() {
        let allow = vec!["example.com".to_owned()];
        let deny = vec!["ads.example.com".to_owned()];
        assert!(domain_allowed("https://WWW.Example.com./a", &allow, &deny));
        assert!(!domain_allowed("https://ads.example.com/x", &allow, &deny));
        assert!(!domain_allowed("https://other.org/", &allow, &deny));
        assert!(domain_allowed("https://other.org/", &[], &deny));
        assert!(!domain_allowed("file:///tmp/a.md", &allow, &[]));
        assert!(domain_allowed("file:///tmp/a.md", &[], &deny));
    }

    #[test]
    fn dates_in_every_form() {
        let want = Some(day(2025, 3, 1));
        for text in [
            "2025-03-01",
            "2025-03-01T10:00:00Z",
            "2025-03-01T10:00:00.123+02:00",
            "2025-03-01 10:00:00",
            "2025-03-01T10:00:00",
            "Sat, 01 Mar 2025 10:00:00 GMT",
            "03/01/2025",
            "3/1/2025",
            "2025/03/01",
            "March 1, 2025",
            "Mar 1, 2025",
            "1 March 2025",
        ] {
            assert_eq!(parse_date(text), want, "{text}");
        }
        for text in ["", "2 days ago", "2025-13-01", "20250301", "2025-03-011"] {
            assert_eq!(parse_date(text), None, "{text}");
        }
        assert_eq!(normalize_date("3/1/2025").as_deref(), Some("2025-03-01"));
        assert_eq!(parse_us_date("02/30/2025"), None);
        assert_eq!(parse_us_date("2025-03-01"), None);
    }

    #[test]
    fn recency_cutoffs() {
        let today = day(2024, 2, 29);
        assert_eq!(recency_cutoff(RecencyFilter::Hour, today), day(2024, 2, 28));
        assert_eq!(recency_cutoff(RecencyFilter::Day, today), day(2024, 2, 28));
        assert_eq!(recency_cutoff(RecencyFilter::Week, today), day(2024, 2, 22));
        assert_eq!(
            recency_cutoff(RecencyFilter::Month, today),
            day(2024, 1, 29)
        );
        assert_eq!(recency_cutoff(RecencyFilter::Year, today), day(2023, 2, 28));
    }
}
