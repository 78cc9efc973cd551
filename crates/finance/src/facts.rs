//! The SEC's XBRL company facts (`companyfacts/CIK##########.json`, one file per filer in the
//! bulk `companyfacts.zip`): parsed into [`Fact`]s, keeping only the concepts asked for (the
//! statements' lines), one value per (concept, unit, period): the latest filed.
//!
//! The shape: `{cik, entityName, facts: {taxonomy: {Concept: {label, description, units:
//! {USD | shares | USD/shares: [{start?, end, val, accn, fy, fp, form, filed, frame?}]}}}}}`.

use std::collections::HashMap;

use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::value::RawValue;

/// One reported value.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub concept: String,
    /// `USD`, `USD/shares`, `shares`, …
    pub unit: String,
    /// Absent for instants (balance-sheet values).
    pub start: Option<NaiveDate>,
    pub end: NaiveDate,
    pub value: f64,
    pub fy: Option<i32>,
    pub fp: Option<String>,
    pub form: Option<String>,
    pub filed: NaiveDate,
    /// The accession number of the filing that reported it (`0000320193-24-000123`).
    pub accn: Option<String>,
}

/// One filer's facts.
#[derive(Debug, Clone, PartialEq)]
pub struct CompanyFacts {
    pub cik: u64,
    pub name: String,
    pub facts: Vec<Fact>,
}

#[derive(Deserialize)]
struct RawDocument<'a> {
    cik: serde_json::Value,
    #[serde(rename = "entityName", default)]
    entity_name: String,
    #[serde(default, borrow)]
    facts: HashMap<String, HashMap<String, &'a RawValue>>,
}

#[derive(Deserialize)]
struct RawConcept {
    #[serde(default)]
    units: HashMap<String, Vec<RawFact>>,
}

#[derive(Deserialize)]
struct RawFact {
    start: Option<String>,
    end: String,
    val: f64,
    accn: Option<String>,
    fy: Option<i32>,
    fp: Option<String>,
    form: Option<String>,
    filed: String,
}

/// Parses one companyfacts document, keeping the `wanted` concepts (sorted) only.
pub fn parse(bytes: &[u8], wanted: &[&str]) -> Result<CompanyFacts, String> {
    let document: RawDocument<'_> =
        serde_json::from_slice(bytes).map_err(|err| format!("not companyfacts JSON: {err}"))?;
    let cik = parse_cik(&document.cik).ok_or("companyfacts without a valid cik")?;
    let mut latest: HashMap<(String, String, Option<NaiveDate>, NaiveDate), Fact> = HashMap::new();
    for concepts in document.facts.values() {
        for (concept, raw) in concepts {
            if wanted.binary_search(&concept.as_str()).is_err() {
                continue;
            }
            let parsed: RawConcept = serde_json::from_str(raw.get())
                .map_err(|err| format!("companyfacts concept {concept}: {err}"))?;
            for (unit, values) in parsed.units {
                for value in values {
                    let (Some(end), Some(filed)) = (date(&value.end), date(&value.filed)) else {
                        continue;
                    };
                    let start = value.start.as_deref().and_then(date);
                    let fact = Fact {
                        concept: concept.clone(),
                        unit: unit.clone(),
                        start,
                        end,
                        value: value.val,
                        fy: value.fy,
                        fp: value.fp,
                        form: value.form,
                        filed,
                        accn: value.accn,
                    };
                    let key = (concept.clone(), unit.clone(), start, end);
                    match latest.get(&key) {
                        Some(kept) if kept.filed > fact.filed => {}
                        _ => {
                            latest.insert(key, fact);
                        }
                    }
                }
            }
        }
    }
    let mut facts: Vec<Fact> = latest.into_values().collect();
    facts.sort_by(|a, b| {
        (&a.concept, &a.unit, a.end, a.start).cmp(&(&b.concept, &b.unit, b.end, b.start))
    });
    Ok(CompanyFacts {
        cik,
        name: document.entity_name,
        facts,
    })
}

/// A CIK written as a number or as a (zero-padded) string.
pub fn parse_cik(value: &serde_json::Value) -> Option<u64> {
    match value {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().trim_start_matches("CIK").parse().ok(),
        _ => None,
    }
}

pub fn date(text: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(text.get(..10).unwrap_or(text), "%Y-%m-%d").ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_known_concepts_are_kept_and_restatements_replace() {
        let document = json!({
            "cik": 320193, "entityName": "Apple Inc.",
            "facts": {
                "dei": {"EntityCommonStockSharesOutstanding": {"units": {"shares": [
                    {"end": "2024-10-18", "val": 15115823000.0, "accn": "a", "fy": 2024, "fp": "FY", "form": "10-K", "filed": "2024-11-01"}
                ]}}},
                "us-gaap": {
                    "NetIncomeLoss": {"label": "Net income", "units": {"USD": [
                        {"start": "2022-09-25", "end": "2023-09-30", "val": 96995000000.0, "accn": "old", "fy": 2023, "fp": "FY", "form": "10-K", "filed": "2023-11-03"},
                        {"start": "2022-09-25", "end": "2023-09-30", "val": 97000000000.0, "accn": "new", "fy": 2024, "fp": "FY", "form": "10-K", "filed": "2024-11-01"}
                    ]}},
                    "SomethingObscure": {"units": {"USD": [
                        {"end": "2024-09-28", "val": 1.0, "filed": "2024-11-01"}
                    ]}}
                }
            }
        });
        let wanted = [
            "EntityCommonStockSharesOutstanding",
            "NetIncomeLoss",
            "Revenues",
        ];
        let parsed = parse(document.to_string().as_bytes(), &wanted).unwrap();
        assert_eq!(parsed.cik, 320193);
        assert_eq!(parsed.name, "Apple Inc.");
        assert_eq!(parsed.facts.len(), 2, "{:?}", parsed.facts);
        let net = parsed
            .facts
            .iter()
            .find(|f| f.concept == "NetIncomeLoss")
            .unwrap();
        assert_eq!(net.accn.as_deref(), Some("new"));
        assert_eq!(net.value, 97e9);
        assert_eq!(parse_cik(&json!("0000320193")), Some(320193));
    }
}
