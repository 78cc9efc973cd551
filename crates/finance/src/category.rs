//! The words of a request: data categories, statement periods and bar intervals.

/// One kind of financial data the model may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Quote,
    PriceHistory,
    Profile,
    Peers,
    IncomeStatement,
    BalanceSheet,
    CashFlow,
    Ratios,
    Earnings,
    Transcript,
    Segments,
    AnalystEstimates,
    MarketMovers,
    InsiderTrading,
    EtfHoldings,
    CorporateActions,
    Filings,
}

impl Category {
    /// Every category, in the order the tool's schema lists them.
    pub const ALL: [Category; 17] = [
        Category::Quote,
        Category::PriceHistory,
        Category::Profile,
        Category::Peers,
        Category::IncomeStatement,
        Category::BalanceSheet,
        Category::CashFlow,
        Category::Ratios,
        Category::Earnings,
        Category::Transcript,
        Category::Segments,
        Category::AnalystEstimates,
        Category::MarketMovers,
        Category::InsiderTrading,
        Category::EtfHoldings,
        Category::CorporateActions,
        Category::Filings,
    ];

    /// The wire name (`finance_results.results[].category`, the schema's enum).
    pub fn name(self) -> &'static str {
        match self {
            Category::Quote => "quote",
            Category::PriceHistory => "price_history",
            Category::Profile => "profile",
            Category::Peers => "peers",
            Category::IncomeStatement => "income_statement",
            Category::BalanceSheet => "balance_sheet",
            Category::CashFlow => "cash_flow",
            Category::Ratios => "ratios",
            Category::Earnings => "earnings",
            Category::Transcript => "transcript",
            Category::Segments => "segments",
            Category::AnalystEstimates => "analyst_estimates",
            Category::MarketMovers => "market_movers",
            Category::InsiderTrading => "insider_trading",
            Category::EtfHoldings => "etf_holdings",
            Category::CorporateActions => "corporate_actions",
            Category::Filings => "filings",
        }
    }

    /// Words for titles ("income statement").
    pub fn label(self) -> &'static str {
        match self {
            Category::Quote => "quote",
            Category::PriceHistory => "price history",
            Category::Profile => "profile",
            Category::Peers => "peers",
            Category::IncomeStatement => "income statement",
            Category::BalanceSheet => "balance sheet",
            Category::CashFlow => "cash flow statement",
            Category::Ratios => "ratios",
            Category::Earnings => "earnings",
            Category::Transcript => "earnings call transcript",
            Category::Segments => "revenue segments",
            Category::AnalystEstimates => "analyst estimates",
            Category::MarketMovers => "market movers",
            Category::InsiderTrading => "insider trading",
            Category::EtfHoldings => "ETF holdings",
            Category::CorporateActions => "corporate actions",
            Category::Filings => "filings",
        }
    }

    /// A category from the model's spelling: the wire name, or the same words with spaces
    /// or hyphens, in any case, and a few common synonyms.
    pub fn parse(text: &str) -> Option<Category> {
        let key: String = text
            .trim()
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c == ' ' || c == '-' { '_' } else { c })
            .collect();
        if let Some(found) = Category::ALL.into_iter().find(|c| c.name() == key) {
            return Some(found);
        }
        Some(match key.as_str() {
            "price" | "prices" | "historical_prices" | "history" | "ohlcv" | "chart" => {
                Category::PriceHistory
            }
            "income" | "income_statements" | "financials" => Category::IncomeStatement,
            "balance" | "balance_sheets" => Category::BalanceSheet,
            "cashflow" | "cash_flows" | "cash_flow_statement" => Category::CashFlow,
            "key_metrics" | "metrics" | "valuation" => Category::Ratios,
            "eps" => Category::Earnings,
            "transcripts" | "earnings_call" | "earnings_transcript" => Category::Transcript,
            "segment" | "kpis" => Category::Segments,
            "estimates" | "analysts" | "price_targets" => Category::AnalystEstimates,
            "movers" | "gainers" | "losers" | "most_active" => Category::MarketMovers,
            "insiders" | "insider" | "insider_trades" => Category::InsiderTrading,
            "etf" | "holdings" | "constituents" => Category::EtfHoldings,
            "splits" | "dividends" | "corporate_action" => Category::CorporateActions,
            "filing" | "sec_filings" => Category::Filings,
            "company" | "overview" => Category::Profile,
            _ => return None,
        })
    }

    /// Whether the category is about one security (all but market movers).
    pub fn needs_symbol(self) -> bool {
        self != Category::MarketMovers
    }
}

/// Which statements: fiscal years, fiscal quarters, or the trailing twelve months.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Period {
    #[default]
    Annual,
    Quarter,
    Ttm,
}

impl Period {
    pub fn name(self) -> &'static str {
        match self {
            Period::Annual => "annual",
            Period::Quarter => "quarter",
            Period::Ttm => "ttm",
        }
    }

    pub fn parse(text: &str) -> Option<Period> {
        match text.trim().to_ascii_lowercase().as_str() {
            "annual" | "annually" | "year" | "yearly" | "fy" => Some(Period::Annual),
            "quarter" | "quarterly" | "q" => Some(Period::Quarter),
            "ttm" | "trailing" | "ltm" => Some(Period::Ttm),
            _ => None,
        }
    }
}

/// The bar length of a price history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Interval {
    Min1,
    Min5,
    Min15,
    Min30,
    Hour1,
    Hour4,
    #[default]
    Day1,
    Week1,
    Month1,
}

impl Interval {
    pub const ALL: [Interval; 9] = [
        Interval::Min1,
        Interval::Min5,
        Interval::Min15,
        Interval::Min30,
        Interval::Hour1,
        Interval::Hour4,
        Interval::Day1,
        Interval::Week1,
        Interval::Month1,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Interval::Min1 => "1min",
            Interval::Min5 => "5min",
            Interval::Min15 => "15min",
            Interval::Min30 => "30min",
            Interval::Hour1 => "1hour",
            Interval::Hour4 => "4hour",
            Interval::Day1 => "1day",
            Interval::Week1 => "1week",
            Interval::Month1 => "1month",
        }
    }

    pub fn parse(text: &str) -> Option<Interval> {
        let key = text.trim().to_ascii_lowercase().replace([' ', '_'], "");
        if let Some(found) = Interval::ALL.into_iter().find(|i| i.name() == key) {
            return Some(found);
        }
        Some(match key.as_str() {
            "1m" | "minute" => Interval::Min1,
            "5m" => Interval::Min5,
            "15m" => Interval::Min15,
            "30m" => Interval::Min30,
            "1h" | "60min" | "hour" | "hourly" => Interval::Hour1,
            "4h" => Interval::Hour4,
            "1d" | "day" | "daily" => Interval::Day1,
            "1w" | "week" | "weekly" => Interval::Week1,
            "1mo" | "month" | "monthly" => Interval::Month1,
            _ => return None,
        })
    }

    /// Bars shorter than a day.
    pub fn is_intraday(self) -> bool {
        !matches!(self, Interval::Day1 | Interval::Week1 | Interval::Month1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_synonyms_parse() {
        for category in Category::ALL {
            assert_eq!(Category::parse(category.name()), Some(category));
            assert_eq!(
                Category::parse(&category.name().replace('_', " ").to_uppercase()),
                Some(category)
            );
        }
        assert_eq!(Category::parse("cash-flow"), Some(Category::CashFlow));
        assert_eq!(Category::parse("gainers"), Some(Category::MarketMovers));
        assert_eq!(Category::parse("weather"), None);
        for interval in Interval::ALL {
            assert_eq!(Interval::parse(interval.name()), Some(interval));
        }
        assert_eq!(Interval::parse("daily"), Some(Interval::Day1));
        assert_eq!(Period::parse("Quarterly"), Some(Period::Quarter));
        assert!(Interval::Hour4.is_intraday() && !Interval::Week1.is_intraday());
    }
}
