//! The SEC's submissions (`submissions/CIK##########.json`, one file per filer in the bulk
//! `submissions.zip`, older filings in `CIK##########-submissions-NNN.json` pages): the
//! company's profile and its filings, and the tables made from them (profile, filings,
//! insider filings). Filing links point at the public `https://www.sec.gov` archive.

use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::facts::{date, parse_cik};
use crate::table::Table;

/// Where filing links point (the public archive, whatever host the data came from).
pub const SEC_WWW: &str = "https://www.sec.gov";

/// Form types the model may name in its query to narrow a filing list.
const KNOWN_FORMS: &[&str] = &[
    "10-K", "10-Q", "8-K", "20-F", "40-F", "6-K", "S-1", "S-3", "S-4", "DEF 14A", "13F", "SC 13D",
    "SC 13G", "424B", "11-K", "N-PORT",
];

/// Forms that report insiders' holdings and trades.
const INSIDER_FORMS: &[&str] = &["3", "4", "5", "3/A", "4/A", "5/A"];

/// A filer as its submissions describe it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Company {
    pub cik: u64,
    pub name: String,
    pub entity_type: Option<String>,
    pub sic: Option<String>,
    pub sic_description: Option<String>,
    pub tickers: Vec<String>,
    pub exchanges: Vec<String>,
    /// `MMDD`.
    pub fiscal_year_end: Option<String>,
    pub state_of_incorporation: Option<String>,
    pub category: Option<String>,
    pub website: Option<String>,
}

/// One filing.
#[derive(Debug, Clone, PartialEq)]
pub struct Filing {
    pub accession: String,
    pub form: String,
    pub filing_date: NaiveDate,
    pub report_date: Option<NaiveDate>,
    pub primary_document: Option<String>,
    pub description: Option<String>,
    /// 8-K items (`2.02,9.01`).
    pub items: Option<String>,
}

/// A page of older filings the main file points to.
#[derive(Debug, Clone, PartialEq)]
pub struct OlderPage {
    /// As the SEC writes it: a file name next to the main file.
    pub name: String,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
}

/// A parsed submissions file.
#[derive(Debug, Clone, PartialEq)]
pub struct Submissions {
    pub company: Company,
    /// Most recent first.
    pub filings: Vec<Filing>,
    pub older: Vec<OlderPage>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawSubmissions {
    cik: Value,
    name: String,
    entity_type: Option<String>,
    sic: Option<String>,
    sic_description: Option<String>,
    tickers: Vec<Option<String>>,
    exchanges: Vec<Option<String>>,
    fiscal_year_end: Option<String>,
    state_of_incorporation: Option<String>,
    category: Option<String>,
    website: Option<String>,
    filings: RawFilings,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawFilings {
    recent: RawColumns,
    files: Vec<RawFile>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawColumns {
    accession_number: Vec<String>,
    filing_date: Vec<String>,
    report_date: Vec<String>,
    form: Vec<String>,
    items: Vec<String>,
    primary_document: Vec<String>,
    primary_doc_description: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawFile {
    name: String,
    filing_from: Option<String>,
    filing_to: Option<String>,
}

pub fn parse(bytes: &[u8]) -> Result<Submissions, String> {
    let raw: RawSubmissions =
        serde_json::from_slice(bytes).map_err(|err| format!("not a submissions file: {err}"))?;
    let cik = parse_cik(&raw.cik).ok_or("a submissions file without a valid cik")?;
    let text = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
    let company = Company {
        cik,
        name: raw.name,
        entity_type: text(raw.entity_type),
        sic: text(raw.sic),
        sic_description: text(raw.sic_description),
        tickers: raw.tickers.into_iter().flatten().collect(),
        exchanges: raw.exchanges.into_iter().flatten().collect(),
        fiscal_year_end: text(raw.fiscal_year_end),
        state_of_incorporation: text(raw.state_of_incorporation),
        category: text(raw.category),
        website: text(raw.website),
    };
    let older = raw
        .filings
        .files
        .into_iter()
        .map(|file| OlderPage {
            name: file.name,
            from: file.filing_from.as_deref().and_then(date),
            to: file.filing_to.as_deref().and_then(date),
        })
        .collect();
    Ok(Submissions {
        company,
        filings: columns(raw.filings.recent),
        older,
    })
}

/// A page of older filings.
pub fn parse_page(bytes: &[u8]) -> Result<Vec<Filing>, String> {
    let raw: RawColumns =
        serde_json::from_slice(bytes).map_err(|err| format!("not a submissions page: {err}"))?;
    Ok(columns(raw))
}

fn columns(raw: RawColumns) -> Vec<Filing> {
    let at = |list: &Vec<String>, i: usize| {
        list.get(i)
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let mut filings: Vec<Filing> = (0..raw.accession_number.len())
        .filter_map(|i| {
            Some(Filing {
                accession: at(&raw.accession_number, i)?,
                form: at(&raw.form, i)?,
                filing_date: date(&at(&raw.filing_date, i)?)?,
                report_date: at(&raw.report_date, i).as_deref().and_then(date),
                primary_document: at(&raw.primary_document, i),
                description: at(&raw.primary_doc_description, i),
                items: at(&raw.items, i),
            })
        })
        .collect();
    filings.sort_by_key(|f| std::cmp::Reverse(f.filing_date));
    filings
}

/// The public page of one filing (its primary document, else its folder).
pub fn filing_url(cik: u64, filing: &Filing) -> String {
    let folder = format!(
        "{SEC_WWW}/Archives/edgar/data/{cik}/{}/",
        filing.accession.replace('-', "")
    );
    match &filing.primary_document {
        Some(document) if !document.contains('/') && !document.contains("..") => {
            format!("{folder}{document}")
        }
        _ => folder,
    }
}

/// The folder of the filing with this accession number.
pub fn accession_url(cik: u64, accession: &str) -> String {
    format!(
        "{SEC_WWW}/Archives/edgar/data/{cik}/{}/",
        accession.replace('-', "")
    )
}

/// The company's filing index on EDGAR.
pub fn company_url(cik: u64) -> String {
    format!("{SEC_WWW}/cgi-bin/browse-edgar?action=getcompany&CIK={cik:010}")
}

/// The profile as a field table.
pub fn profile_table(company: &Company) -> Table {
    let mut table = Table::new(&["field", "value"]);
    let mut add = |field: &str, value: Option<String>| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            table.push(vec![json!(field), json!(value)]);
        }
    };
    add("name", Some(company.name.clone()));
    add("cik", Some(format!("{:010}", company.cik)));
    add("tickers", Some(company.tickers.join(", ")));
    add("exchanges", Some(company.exchanges.join(", ")));
    add("sic", company.sic.clone());
    add("industry", company.sic_description.clone());
    add("entity type", company.entity_type.clone());
    add("filer category", company.category.clone());
    add(
        "fiscal year end",
        company
            .fiscal_year_end
            .as_deref()
            .map(|mmdd| match (mmdd.get(..2), mmdd.get(2..)) {
                (Some(mm), Some(dd)) => format!("{mm}-{dd}"),
                _ => mmdd.to_owned(),
            }),
    );
    add(
        "state of incorporation",
        company.state_of_incorporation.clone(),
    );
    add("website", company.website.clone());
    table
}

/// Forms named in the query (`10-K`, `8-K`, …).
pub fn forms_in(query: &str) -> Vec<&'static str> {
    let upper = query.to_ascii_uppercase();
    KNOWN_FORMS
        .iter()
        .copied()
        .filter(|form| upper.contains(form))
        .collect()
}

/// Which filings a list shows.
#[derive(Debug, Clone, Default)]
pub struct FilingFilter {
    pub forms: Vec<String>,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
}

impl FilingFilter {
    pub fn matches(&self, filing: &Filing) -> bool {
        (self.forms.is_empty()
            || self
                .forms
                .iter()
                .any(|f| filing.form.starts_with(f.as_str())))
            && self.from.is_none_or(|from| filing.filing_date >= from)
            && self.to.is_none_or(|to| filing.filing_date <= to)
    }

    /// The insider forms (3, 4, 5) instead of the query's forms.
    pub fn insiders(mut self) -> FilingFilter {
        self.forms = INSIDER_FORMS.iter().map(|f| (*f).to_owned()).collect();
        self
    }

    /// Exact form match for the insider forms (`4` must not match `424B`).
    pub fn matches_exact(&self, filing: &Filing) -> bool {
        self.forms.contains(&filing.form)
            && self.from.is_none_or(|from| filing.filing_date >= from)
            && self.to.is_none_or(|to| filing.filing_date <= to)
    }
}

/// A filing list (most recent first) as a table with links.
pub fn filings_table(cik: u64, filings: &[&Filing]) -> Table {
    let mut table = Table::new(&["form", "filed", "report date", "description", "url"]);
    for filing in filings {
        let description = match (&filing.description, &filing.items) {
            (Some(d), Some(items)) => format!("{d} (items {items})"),
            (Some(d), None) => d.clone(),
            (None, Some(items)) => format!("items {items}"),
            (None, None) => String::new(),
        };
        table.push(vec![
            json!(filing.form),
            json!(filing.filing_date.to_string()),
            filing
                .report_date
                .map_or(Value::Null, |d| json!(d.to_string())),
            json!(description),
            json!(filing_url(cik, filing)),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        json!({
            "cik": "0000320193", "entityType": "operating", "sic": "3571",
            "sicDescription": "Electronic Computers", "name": "Apple Inc.",
            "tickers": ["AAPL"], "exchanges": ["Nasdaq"], "fiscalYearEnd": "0928",
            "stateOfIncorporation": "CA", "category": "Large accelerated filer",
            "filings": {
                "recent": {
                    "accessionNumber": ["0000320193-24-000123", "0000320193-24-000120", "0001140361-24-000001"],
                    "filingDate": ["2024-11-01", "2024-08-02", "2024-10-03"],
                    "reportDate": ["2024-09-28", "2024-06-29", ""],
                    "form": ["10-K", "10-Q", "4"],
                    "items": ["", "", ""],
                    "primaryDocument": ["aapl-20240928.htm", "aapl-20240629.htm", "xslF345X05/wk-form4.xml"],
                    "primaryDocDescription": ["10-K", "10-Q", "FORM 4"]
                },
                "files": [{"name": "CIK0000320193-submissions-001.json", "filingCount": 10,
                           "filingFrom": "1994-01-26", "filingTo": "2014-06-30"}]
            }
        })
    }

    #[test]
    fn submissions_parse_into_company_and_sorted_filings() {
        let value = sample();
        let parsed = parse(value.to_string().as_bytes()).unwrap();
        assert_eq!(parsed.company.cik, 320193);
        assert_eq!(parsed.company.tickers, ["AAPL"]);
        assert_eq!(parsed.filings[0].form, "10-K");
        assert_eq!(parsed.filings[1].form, "4");
        assert_eq!(parsed.older[0].name, "CIK0000320193-submissions-001.json");
        assert_eq!(
            filing_url(320193, &parsed.filings[0]),
            "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
        );
        // A primary document with a path is linked by its folder.
        assert!(filing_url(320193, &parsed.filings[1]).ends_with("/000114036124000001/"));
        let profile = profile_table(&parsed.company);
        assert!(
            profile
                .rows
                .contains(&vec![json!("fiscal year end"), json!("09-28")])
        );
    }

    #[test]
    fn filters_pick_forms_dates_and_insiders() {
        let parsed = parse(sample().to_string().as_bytes()).unwrap();
        assert_eq!(forms_in("latest 10-K and 8-K filings"), ["10-K", "8-K"]);
        let filter = FilingFilter {
            forms: vec!["10-Q".to_owned()],
            ..FilingFilter::default()
        };
        let found: Vec<&Filing> = parsed
            .filings
            .iter()
            .filter(|f| filter.matches(f))
            .collect();
        assert_eq!(found.len(), 1);
        let insiders = FilingFilter::default().insiders();
        assert_eq!(
            parsed
                .filings
                .iter()
                .filter(|f| insiders.matches_exact(f))
                .count(),
            1
        );
    }
}
