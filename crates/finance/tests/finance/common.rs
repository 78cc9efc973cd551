//! The harness: fake services on loopback that record what they were asked, a recording
//! event sink, and generators of the SEC's bulk files and a prices CSV in their real shapes
//! (small, made up, written here: nothing is downloaded).

use std::io::Write as _;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use engine::hosted::{CallContext, EventSink, HostedTool, NoFiles, ToolOutcome};
use netguard::Policy;
use protocol::events::EventData;
use serde_json::{Value, json};

/// A policy that lets the tests reach their fake services on 127.0.0.1 (and nothing else
/// private: 127.0.0.2 stays refused).
pub fn loopback() -> Policy {
    Policy::with_allowed(&["127.0.0.1/32".to_owned()]).unwrap()
}

/// One request a fake service received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub query: std::collections::HashMap<String, String>,
    pub headers: HeaderMap,
}

impl Recorded {
    pub fn param(&self, name: &str) -> &str {
        self.query.get(name).map(String::as_str).unwrap_or_default()
    }
}

/// What a fake service answers.
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub headers: Vec<(&'static str, String)>,
}

impl Reply {
    pub fn json(value: Value) -> Reply {
        Reply::status(200, value)
    }
    pub fn status(status: u16, value: Value) -> Reply {
        Reply {
            status,
            body: value.to_string(),
            headers: Vec::new(),
        }
    }
    pub fn text(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.to_owned(),
            headers: Vec::new(),
        }
    }
    pub fn header(mut self, name: &'static str, value: &str) -> Reply {
        self.headers.push((name, value.to_owned()));
        self
    }
}

type Answer = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// A fake service on `bind` (e.g. `127.0.0.1:0`).
pub struct Fake {
    pub base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Fake {
    pub async fn start(answer: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Fake {
        Fake::start_on("127.0.0.1:0", answer).await
    }

    pub async fn start_on(
        bind: &str,
        answer: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> Fake {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorder = requests.clone();
        let answer: Answer = Arc::new(answer);
        let app = Router::new().fallback(move |request: axum::extract::Request| {
            let recorder = recorder.clone();
            let answer = answer.clone();
            async move {
                let (parts, _body) = request.into_parts();
                let recorded = Recorded {
                    path: parts.uri.path().to_owned(),
                    query: url::form_urlencoded::parse(
                        parts.uri.query().unwrap_or_default().as_bytes(),
                    )
                    .into_owned()
                    .collect(),
                    headers: parts.headers,
                };
                recorder.lock().unwrap().push(recorded.clone());
                let reply = answer(&recorded);
                let mut headers = HeaderMap::new();
                headers.insert("content-type", HeaderValue::from_static("application/json"));
                for (name, value) in reply.headers {
                    headers.insert(name, HeaderValue::from_str(&value).unwrap());
                }
                (
                    StatusCode::from_u16(reply.status).unwrap(),
                    headers,
                    reply.body,
                )
                    .into_response()
            }
        });
        let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fake {
            base: format!("http://{addr}"),
            requests,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    pub fn paths(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.path).collect()
    }

    pub fn hits(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// Records the events a tool emits.
#[derive(Default)]
pub struct Events(pub Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

/// Calls a hosted tool with `arguments`, numbering sources from `next_source`.
pub async fn call(tool: &dyn HostedTool, arguments: Value, next_source: u64) -> ToolOutcome {
    let events = Events::default();
    tool.call(
        &arguments.to_string(),
        CallContext {
            events: &events,
            next_source,
            call_id: "call_1",
            conversation: "resp_1",
            project_id: "proj_1",
            files: &NoFiles,
        },
    )
    .await
}

/// The `finance_results` item of an outcome, as JSON.
pub fn results(outcome: &ToolOutcome) -> Value {
    assert_eq!(outcome.items.len(), 1, "{outcome:?}");
    let item = serde_json::to_value(&outcome.items[0]).unwrap();
    assert_eq!(item["type"], "finance_results", "{item}");
    item
}

// ---------------------------------------------------------------------------------------
// The SEC's bulk files, generated.

/// A made-up filer.
pub struct Company {
    pub cik: u64,
    pub ticker: &'static str,
    pub name: &'static str,
    pub sic: &'static str,
    pub industry: &'static str,
    /// Scales every amount, so companies differ.
    pub scale: f64,
}

pub const ACME: Company = Company {
    cik: 1_234_567,
    ticker: "ACME",
    name: "Acme Robotics Inc.",
    sic: "3569",
    industry: "General Industrial Machinery & Equipment, NEC",
    scale: 1.0,
};

pub const BETA: Company = Company {
    cik: 7_654_321,
    ticker: "BWID",
    name: "Beta Widgets Corp",
    sic: "3569",
    industry: "General Industrial Machinery & Equipment, NEC",
    scale: 2.0,
};

pub const GAMMA: Company = Company {
    cik: 5_550_001,
    ticker: "GMFD",
    name: "Gamma Foods Holdings",
    sic: "2000",
    industry: "Food and Kindred Products",
    scale: 0.5,
};

/// `company_tickers.json`: `{"0": {"cik_str", "ticker", "title"}, …}`.
pub fn company_tickers(companies: &[&Company]) -> Value {
    let mut object = serde_json::Map::new();
    for (i, c) in companies.iter().enumerate() {
        object.insert(
            i.to_string(),
            json!({"cik_str": c.cik, "ticker": c.ticker, "title": c.name}),
        );
    }
    Value::Object(object)
}

/// (fy, fp, form, filed, accn) of the filing that reported a value.
type Filed<'a> = (i32, &'a str, &'a str, &'a str, &'a str);

fn fact(start: Option<&str>, end: &str, val: f64, filed: Filed<'_>) -> Value {
    let (fy, fp, form, filed, accn) = filed;
    let mut fact = json!({"end": end, "val": val, "accn": accn, "fy": fy, "fp": fp, "form": form, "filed": filed});
    if let Some(start) = start {
        fact["start"] = json!(start);
        if form == "10-K" {
            fact["frame"] = json!(format!("CY{}", &end[..4]));
        }
    }
    fact
}

/// The accession number of a company's 10-K for a fiscal year.
pub fn ten_k(company: &Company, year: i32) -> String {
    format!("{:010}-{}-000010", company.cik, year - 1999)
}

/// `companyfacts/CIK##########.json`: two fiscal years (calendar years 2023 and 2024), the
/// revenue concept changing between them, 2024's quarters reported year to date, balance
/// sheets at the year ends, and concepts the import must leave out.
pub fn companyfacts(company: &Company) -> Value {
    let s = company.scale;
    let k23 = ten_k(company, 2023);
    let k24 = ten_k(company, 2024);
    let q24 = format!("{:010}-24-000005", company.cik);
    let durations = |concept_2023: f64, concept_2024: f64| {
        vec![
            fact(
                Some("2023-01-01"),
                "2023-12-31",
                concept_2023 * s,
                (2023, "FY", "10-K", "2024-02-15", &k23),
            ),
            // The same year restated in the next 10-K: the later filing wins.
            fact(
                Some("2023-01-01"),
                "2023-12-31",
                concept_2023 * s,
                (2024, "FY", "10-K", "2025-02-14", &k24),
            ),
            fact(
                Some("2024-01-01"),
                "2024-12-31",
                concept_2024 * s,
                (2024, "FY", "10-K", "2025-02-14", &k24),
            ),
        ]
    };
    let mut net_income = durations(100e6, 150e6);
    for (end, ytd) in [
        ("2024-03-31", 30e6),
        ("2024-06-30", 70e6),
        ("2024-09-30", 110e6),
    ] {
        net_income.push(fact(
            Some("2024-01-01"),
            end,
            ytd * s,
            (2024, "Q", "10-Q", "2024-11-01", &q24),
        ));
    }
    let instant = |v23: f64, v24: f64| {
        vec![
            fact(
                None,
                "2023-12-31",
                v23 * s,
                (2023, "FY", "10-K", "2024-02-15", &k23),
            ),
            fact(
                None,
                "2024-12-31",
                v24 * s,
                (2024, "FY", "10-K", "2025-02-14", &k24),
            ),
            fact(
                None,
                "2024-06-30",
                (v23 + v24) / 2.0 * s,
                (2024, "Q2", "10-Q", "2024-08-01", &q24),
            ),
        ]
    };
    let usd =
        |facts: Vec<Value>| json!({"label": "x", "description": "y", "units": {"USD": facts}});
    let eps = json!({"label": "EPS", "units": {"USD/shares": [
        fact(Some("2023-01-01"), "2023-12-31", 1.0, (2023, "FY", "10-K", "2024-02-15", &k23)),
        fact(Some("2024-01-01"), "2024-12-31", 1.5, (2024, "FY", "10-K", "2025-02-14", &k24)),
        fact(Some("2024-01-01"), "2024-03-31", 0.3, (2024, "Q1", "10-Q", "2024-05-01", &q24)),
    ]}});
    json!({
        "cik": company.cik,
        "entityName": company.name,
        "facts": {
            "dei": {
                "EntityCommonStockSharesOutstanding": {"label": "Shares", "units": {"shares": [
                    fact(None, "2025-02-01", 100e6 * s, (2024, "FY", "10-K", "2025-02-14", &k24))
                ]}},
                "EntityPublicFloat": {"label": "Float", "units": {"USD": [
                    fact(None, "2024-06-30", 5e9, (2024, "FY", "10-K", "2025-02-14", &k24))
                ]}}
            },
            "us-gaap": {
                "Revenues": usd(vec![fact(Some("2023-01-01"), "2023-12-31", 1000e6 * s, (2023, "FY", "10-K", "2024-02-15", &k23))]),
                "RevenueFromContractWithCustomerExcludingAssessedTax": usd(vec![
                    fact(Some("2024-01-01"), "2024-12-31", 1200e6 * s, (2024, "FY", "10-K", "2025-02-14", &k24))
                ]),
                "GrossProfit": usd(durations(400e6, 500e6)),
                "OperatingIncomeLoss": usd(durations(150e6, 210e6)),
                "NetIncomeLoss": usd(net_income),
                "EarningsPerShareDiluted": eps,
                "Assets": usd(instant(2000e6, 2400e6)),
                "Liabilities": usd(instant(1200e6, 1400e6)),
                "StockholdersEquity": usd(instant(800e6, 1000e6)),
                "AssetsCurrent": usd(instant(600e6, 700e6)),
                "LiabilitiesCurrent": usd(instant(300e6, 350e6)),
                "NetCashProvidedByUsedInOperatingActivities": usd(durations(180e6, 260e6)),
                "PaymentsToAcquirePropertyPlantAndEquipment": usd(durations(50e6, 60e6)),
                "AccumulatedOtherComprehensiveIncomeLossNetOfTax": usd(vec![
                    fact(None, "2024-12-31", -7e6, (2024, "FY", "10-K", "2025-02-14", &k24))
                ])
            }
        }
    })
}

/// One filing of a submissions file.
pub struct FilingRow {
    pub accession: String,
    pub date: &'static str,
    pub report: &'static str,
    pub form: &'static str,
    pub document: &'static str,
    pub description: &'static str,
}

/// The filings of a company: two 10-Ks, a 10-Q, an 8-K and a Form 4.
pub fn filings(company: &Company) -> Vec<FilingRow> {
    let acc = |n: u32| format!("{:010}-25-{n:06}", company.cik);
    vec![
        FilingRow {
            accession: ten_k(company, 2024),
            date: "2025-02-14",
            report: "2024-12-31",
            form: "10-K",
            document: "acme-20241231.htm",
            description: "10-K",
        },
        FilingRow {
            accession: acc(3),
            date: "2025-01-28",
            report: "",
            form: "4",
            document: "xslF345X05/form4.xml",
            description: "FORM 4",
        },
        FilingRow {
            accession: acc(2),
            date: "2025-01-20",
            report: "2025-01-20",
            form: "8-K",
            document: "acme-8k.htm",
            description: "8-K",
        },
        FilingRow {
            accession: format!("{:010}-24-000005", company.cik),
            date: "2024-11-01",
            report: "2024-09-30",
            form: "10-Q",
            document: "acme-20240930.htm",
            description: "10-Q",
        },
        FilingRow {
            accession: ten_k(company, 2023),
            date: "2024-02-15",
            report: "2023-12-31",
            form: "10-K",
            document: "acme-20231231.htm",
            description: "10-K",
        },
    ]
}

/// `submissions/CIK##########.json`: the profile and `filings.recent` as parallel arrays,
/// with `filings.files` naming `older` pages.
pub fn submissions(company: &Company, rows: &[FilingRow], older: &[(&str, &str, &str)]) -> Value {
    let column = |f: &dyn Fn(&FilingRow) -> String| rows.iter().map(f).collect::<Vec<_>>();
    json!({
        "cik": format!("{:010}", company.cik),
        "entityType": "operating",
        "sic": company.sic,
        "sicDescription": company.industry,
        "insiderTransactionForOwnerExists": 0,
        "name": company.name,
        "tickers": [company.ticker],
        "exchanges": ["Nasdaq"],
        "ein": "123456789",
        "category": "Large accelerated filer",
        "fiscalYearEnd": "1231",
        "stateOfIncorporation": "DE",
        "phone": "555-0100",
        "filings": {
            "recent": {
                "accessionNumber": column(&|r| r.accession.clone()),
                "filingDate": column(&|r| r.date.to_owned()),
                "reportDate": column(&|r| r.report.to_owned()),
                "acceptanceDateTime": column(&|r| format!("{}T16:05:00.000Z", r.date)),
                "form": column(&|r| r.form.to_owned()),
                "items": column(&|r| if r.form == "8-K" { "2.02,9.01".to_owned() } else { String::new() }),
                "size": column(&|_| "12345".to_owned()),
                "isXBRL": column(&|_| "1".to_owned()),
                "primaryDocument": column(&|r| r.document.to_owned()),
                "primaryDocDescription": column(&|r| r.description.to_owned())
            },
            "files": older.iter().map(|(name, from, to)| json!({
                "name": name, "filingCount": 1, "filingFrom": from, "filingTo": to
            })).collect::<Vec<_>>()
        }
    })
}

/// An older-filings page (`CIK##########-submissions-001.json`): parallel arrays at the top.
pub fn submissions_page(company: &Company) -> Value {
    json!({
        "accessionNumber": [format!("{:010}-15-000001", company.cik)],
        "filingDate": ["2015-03-02"],
        "reportDate": ["2014-12-31"],
        "form": ["10-K"],
        "items": [""],
        "primaryDocument": ["acme-20141231.htm"],
        "primaryDocDescription": ["10-K"]
    })
}

/// `symbol,date,open,high,low,close,volume` rows: `days` weekdays of January 2025 per
/// company, the close climbing by `scale` a day.
pub fn prices_csv(companies: &[&Company], days: u32) -> String {
    let mut csv = String::from("symbol,date,open,high,low,close,volume\n");
    for company in companies {
        let mut day = 0;
        let mut date = chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        while day < days {
            use chrono::Datelike as _;
            if date.weekday().number_from_monday() <= 5 {
                let close = 30.0 + f64::from(day) * company.scale;
                csv.push_str(&format!(
                    "{},{date},{:.2},{:.2},{:.2},{close:.2},{}\n",
                    company.ticker,
                    close - 0.5,
                    close + 1.0,
                    close - 1.0,
                    1000 * (day + 1)
                ));
                day += 1;
            }
            date = date.succ_opt().unwrap();
        }
    }
    csv
}

/// A zip of (name, bytes) entries, deflated as the SEC's are.
pub fn zip(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        writer.start_file(name.as_str(), options).unwrap();
        writer.write_all(bytes).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// A fresh directory under the system temp dir.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "agentd-finance-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
