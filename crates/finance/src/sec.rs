//! Blocks from SEC data, the same for SEC EDGAR live and the embedded store: statements,
//! ratios and reported earnings from company facts, filing lists from submissions.

use chrono::NaiveDate;

use crate::backend::{BackendError, Block, DataRequest};
use crate::category::{Category, Period};
use crate::facts::CompanyFacts;
use crate::statements::{self, Selection, Statement};
use crate::submissions::{self, Filing, FilingFilter};

/// A filing list (filings or insider forms) as a block.
pub fn filings_block(
    cik: u64,
    name: &str,
    filings: &[Filing],
    request: &DataRequest,
    insiders: bool,
) -> Result<Block, BackendError> {
    let filter = FilingFilter {
        forms: submissions::forms_in(&request.query)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        from: request.from,
        to: request.to,
    };
    let (filter, title) = if insiders {
        (filter.insiders(), "Insider filings (Forms 3, 4, 5)")
    } else {
        (filter, "SEC filings")
    };
    let chosen: Vec<&Filing> = filings
        .iter()
        .filter(|f| {
            if insiders {
                filter.matches_exact(f)
            } else {
                filter.matches(f)
            }
        })
        .take(request.limit)
        .collect();
    if chosen.is_empty() {
        return Err(BackendError::NotFound(format!(
            "no {} in the requested range",
            if insiders {
                "insider filings"
            } else {
                "filings"
            }
        )));
    }
    let mut notes = Vec::new();
    if insiders {
        notes.push(
            "Each filing lists the insider's transactions; open its link for the details."
                .to_owned(),
        );
    }
    Ok(Block {
        title: title.to_owned(),
        name: Some(name.to_owned()),
        as_of: chosen.first().map(|f| f.filing_date.to_string()),
        table: submissions::filings_table(cik, &chosen),
        url: Some(submissions::company_url(cik)),
        notes,
    })
}

/// Statements, ratios or earnings of facts as a block.
pub fn facts_block(
    facts: &CompanyFacts,
    request: &DataRequest,
    price: Option<(NaiveDate, f64)>,
) -> Result<Block, BackendError> {
    let mut selection = Selection {
        period: request.period(),
        limit: request.limit,
        from: request.from,
        to: request.to,
        year: request.fiscal_year,
    };
    let (built, title) = match request.category {
        Category::IncomeStatement => (
            statements::statement(&facts.facts, Statement::Income, &selection),
            "Income statement",
        ),
        Category::BalanceSheet => (
            statements::statement(&facts.facts, Statement::Balance, &selection),
            "Balance sheet",
        ),
        Category::CashFlow => (
            statements::statement(&facts.facts, Statement::CashFlow, &selection),
            "Cash flow statement",
        ),
        Category::Ratios => (
            statements::ratios(&facts.facts, &selection, price),
            "Ratios",
        ),
        Category::Earnings => {
            selection.period = request.period.unwrap_or(Period::Quarter);
            (
                statements::earnings(&facts.facts, &selection),
                "Reported earnings",
            )
        }
        other => {
            return Err(BackendError::NotFound(format!(
                "company facts have no {}",
                other.label()
            )));
        }
    };
    let built = built.ok_or_else(|| {
        BackendError::NotFound(format!(
            "the SEC's facts for {} have no {} values for the requested periods",
            facts.name,
            request.category.label()
        ))
    })?;
    Ok(Block {
        title: format!(
            "{title} ({}, USD, from 10-K/10-Q XBRL)",
            selection.period.name()
        ),
        name: Some(facts.name.clone()),
        table: built.table,
        as_of: Some(built.as_of.to_string()),
        url: built
            .accn
            .as_deref()
            .map(|accn| submissions::accession_url(facts.cik, accn)),
        notes: built.notes,
    })
}
