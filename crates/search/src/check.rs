//! The final check every hit passes, whatever the back end did with the filters upstream
//! (pure).

use chrono::NaiveDate;

use crate::backend::{Hit, SearchQuery};
use crate::filter::{domain_allowed, parse_date, recency_cutoff};

/// The final check of one hit: domain lists always; date filters and recency when the
/// hit has the date they are about (an undated hit is kept). Recency looks at the
/// publication date, or at the last-updated date when there is none.
pub fn passes(hit: &Hit, query: &SearchQuery, today: NaiveDate) -> bool {
    if !domain_allowed(&hit.url, &query.allow_domains, &query.deny_domains) {
        return false;
    }
    let published = hit.date.as_deref().and_then(parse_date);
    let updated = hit.last_updated.as_deref().and_then(parse_date);
    if let Some(date) = published
        && !query.published.contains(date)
    {
        return false;
    }
    if let Some(date) = updated
        && !query.last_updated.contains(date)
    {
        return false;
    }
    if let Some(recency) = query.recency
        && let Some(date) = published.or(updated)
        && date < recency_cutoff(recency, today)
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::DateRange;
    use protocol::request::RecencyFilter;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn final_check_uses_dates_only_when_known() {
        let today = day(2025, 6, 15);
        let hit = |date: Option<&str>, updated: Option<&str>| Hit {
            url: "https://example.com/".into(),
            date: date.map(str::to_owned),
            last_updated: updated.map(str::to_owned),
            ..Hit::default()
        };
        let query = SearchQuery {
            published: DateRange {
                after: Some(day(2025, 1, 1)),
                before: None,
            },
            last_updated: DateRange {
                after: None,
                before: Some(day(2025, 6, 1)),
            },
            ..SearchQuery::default()
        };
        assert!(passes(&hit(None, None), &query, today));
        assert!(passes(&hit(Some("2025-02-01"), None), &query, today));
        assert!(!passes(&hit(Some("2024-12-31"), None), &query, today));
        assert!(!passes(&hit(None, Some("2025-06-02")), &query, today));
        assert!(passes(&hit(Some("not a date"), None), &query, today));

        let recent = SearchQuery {
            recency: Some(RecencyFilter::Week),
            ..SearchQuery::default()
        };
        assert!(passes(&hit(Some("2025-06-10"), None), &recent, today));
        assert!(!passes(&hit(Some("2025-06-01"), None), &recent, today));
        assert!(!passes(&hit(None, Some("2025-06-01")), &recent, today));
        assert!(passes(&hit(None, None), &recent, today));
    }
}
