//! `finance_search` through agentd with its embedded offline default: the SEC's bulk-file
//! shapes and a prices CSV, generated here, imported with `agentd finance import`, then a run
//! in which the scripted model calls the tool: the `finance_results` item, what the model
//! read, the usage key and its price, and citations of SEC pages.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod pg_support;

use pg_support::PgDatabase;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// One filer, its facts for two fiscal years and its filings, in the SEC's shapes.
fn write_sec_files(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let write =
        |name: &str, value: Value| std::fs::write(dir.join(name), value.to_string()).unwrap();
    write(
        "company_tickers.json",
        json!({"0": {"cik_str": 1234567, "ticker": "ACME", "title": "Acme Robotics Inc."}}),
    );
    let k24 = "0001234567-25-000010";
    let k23 = "0001234567-24-000010";
    let year = |start: &str, end: &str, val: f64, accn: &str, filed: &str| json!({"start": start, "end": end, "val": val, "accn": accn, "fy": 2024, "fp": "FY", "form": "10-K", "filed": filed});
    write(
        "CIK0001234567.json",
        json!({"cik": 1234567, "entityName": "Acme Robotics Inc.", "facts": {"us-gaap": {
            "Revenues": {"label": "Revenues", "units": {"USD": [
                year("2023-01-01", "2023-12-31", 1.0e9, k23, "2024-02-15"),
                year("2024-01-01", "2024-12-31", 1.2e9, k24, "2025-02-14")
            ]}},
            "NetIncomeLoss": {"label": "Net income", "units": {"USD": [
                year("2023-01-01", "2023-12-31", 1.0e8, k23, "2024-02-15"),
                year("2024-01-01", "2024-12-31", 1.5e8, k24, "2025-02-14")
            ]}}
        }}}),
    );
    write(
        "submissions-acme.json",
        json!({"cik": "0001234567", "name": "Acme Robotics Inc.", "sic": "3569",
               "sicDescription": "General Industrial Machinery", "tickers": ["ACME"], "exchanges": ["Nasdaq"],
               "fiscalYearEnd": "1231", "filings": {"recent": {
                   "accessionNumber": [k24, k23], "filingDate": ["2025-02-14", "2024-02-15"],
                   "reportDate": ["2024-12-31", "2023-12-31"], "form": ["10-K", "10-K"], "items": ["", ""],
                   "primaryDocument": ["acme-20241231.htm", "acme-20231231.htm"],
                   "primaryDocDescription": ["10-K", "10-K"]}, "files": []}}),
    );
}

fn items<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

#[tokio::test]
async fn finance_search_answers_offline_from_imported_sec_files() {
    let dir = std::env::temp_dir().join(format!("agentd-finance-server-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_sec_files(&dir.join("sec"));
    std::fs::write(
        dir.join("prices.csv"),
        "symbol,date,open,high,low,close,volume\nACME,2025-01-30,29,31,28,30,1000\nACME,2025-01-31,30,33,29,32.5,1500\n",
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["finance", "import", "--data-dir"])
        .arg(dir.join("data"))
        .arg(dir.join("sec"))
        .arg("--prices")
        .arg(dir.join("prices.csv"))
        .env_remove("AGENTD_CONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("imported 1 tickers, 1 companyfacts files, 1 submissions files, 0 older-filing pages, 2 price rows"),
        "{stdout}"
    );
    let store = dir.join("data/finance.sqlite");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the store is private to its owner");
    }

    let app = TestApp::spawn_with(|config| {
        config.finance_search.store_path = store.clone();
        let mut prices = (*config.engine.prices).clone();
        prices.tools.insert("finance_search".to_owned(), 0.02);
        config.engine.prices = Arc::new(prices);
    })
    .await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "finance_search",
        r#"{"query": "Acme revenue, latest 10-K and the last call", "symbols": ["Acme Robotics"], "categories": ["income_statement", "filings", "transcript"]}"#,
    )]));
    let answer = "Revenue grew to $1.2B [1]; the 10-K is filed [2].";
    app.fake.push(Reply::text(answer));
    let transcript = app
        .post_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "How did Acme do?", "stream": true,
                   "tools": [{"type": "finance_search"}]}),
        )
        .await;
    let response = transcript.terminal()["response"].clone();
    assert_eq!(response["status"], "completed", "{response}");

    // The model was offered the tool and read compact tables, and the missing transcript.
    let offered = app.fake.requests()[0]["tools"].to_string();
    assert!(offered.contains("\"finance_search\""), "{offered}");
    let told: Vec<String> = app.fake.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    let told = &told[0];
    assert!(told.contains("[1] ACME: Income statement"), "{told}");
    assert!(told.contains("| Revenue | 1.2B | 1B |"), "{told}");
    assert!(
        told.contains("Not available: ACME transcript: earnings call transcript is not available from the configured sources (local)"),
        "{told}"
    );

    let finance = items(&response, "finance_results")[0];
    assert_eq!(
        finance["queries"],
        json!(["Acme revenue, latest 10-K and the last call"])
    );
    let results = finance["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["id"], 1);
    assert_eq!(results[0]["category"], "income_statement");
    assert_eq!(results[0]["symbol"], "ACME");
    assert_eq!(results[0]["name"], "Acme Robotics Inc.");
    assert_eq!(results[0]["source"], "local");
    assert_eq!(results[0]["as_of"], "2024-12-31");
    assert_eq!(results[1]["category"], "filings");
    assert!(finance.get("url").is_none(), "finance_results has no url");

    let usage = &response["usage"]["tool_calls_details"]["finance_search"];
    assert_eq!(usage["invocation"], 1, "{response}");
    assert_eq!(usage["cost_usd"], 0.02, "{response}");

    // The [n] markers cite the SEC pages of the two results.
    let message = items(&response, "message")[0];
    let annotations = message["content"][0]["annotations"].as_array().unwrap();
    let cited: Vec<&str> = annotations
        .iter()
        .map(|a| a["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        cited,
        [
            "https://www.sec.gov/Archives/edgar/data/1234567/000123456725000010/",
            "https://www.sec.gov/cgi-bin/browse-edgar?action=getcompany&CIK=0001234567"
        ]
    );
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn on_postgresql_the_imports_live_in_the_shared_database() {
    let db = PgDatabase::create("agentd_pf").await;
    let dir = std::env::temp_dir().join(format!("agentd-finance-pg-{}", uuid::Uuid::new_v4()));
    write_sec_files(&dir.join("sec"));
    std::fs::write(
        dir.join("prices.csv"),
        "symbol,date,open,high,low,close,volume\nACME,2025-01-30,29,31,28,30,1000\nACME,2025-01-31,30,33,29,32.5,1500\n",
    )
    .unwrap();
    // `agentd finance import` on any machine, given the database URL, writes into it.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["finance", "import", "--database-url", &db.url, "--data-dir"])
        .arg(dir.join("importer"))
        .arg(dir.join("sec"))
        .arg("--prices")
        .arg(dir.join("prices.csv"))
        .env_remove("AGENTD_CONFIG")
        .env_remove("AGENTD_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(db.count("agentd_finance.prices").await, 2);
    assert_eq!(db.count("agentd_finance.tickers").await, 1);
    assert!(!dir.join("importer/finance.sqlite").exists());

    // A server (a replica with a data directory of its own, holding no import) on that
    // database answers from it.
    let url = db.url.clone();
    let app = TestApp::spawn_with(move |config| {
        config.store = agentd_server::config::StoreLocation::Postgres(url.clone());
        config.finance_search.store_url = Some(url);
    })
    .await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "finance_search",
        r#"{"query": "Acme last close and revenue", "symbols": ["Acme Robotics"], "categories": ["quote", "income_statement"]}"#,
    )]));
    app.fake.push(Reply::text("It closed at 32.5 [1]."));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "How did Acme do?",
                   "tools": [{"type": "finance_search"}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let finance = items(&response, "finance_results")[0];
    let results = finance["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{finance}");
    assert_eq!(results[0]["category"], "quote");
    assert_eq!(results[0]["source"], "local");
    assert_eq!(results[0]["as_of"], "2025-01-31");
    assert_eq!(results[1]["as_of"], "2024-12-31");
    assert!(!app.data_dir.join("finance.sqlite").exists());
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An answer of agentd, with a key.
async fn post_as(app: &TestApp, key: Option<&str>, path: &str, body: Value) -> (u16, Value) {
    let mut request = app.client.post(app.url(path)).json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// What the model read from the tool in the run's second model request.
fn tool_text(app: &TestApp, request: usize) -> String {
    app.fake.requests()[request]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_saved_connector_of_the_callers_project_is_a_finance_source() {
    use testkit::mcp::{McpFixture, Transport};
    const TOKEN: &str = "tok-finance-connector-5be1";
    let fixture = McpFixture::start_with_token("auth", Transport::StreamableHttp, TOKEN).await;
    let app = TestApp::spawn_with(|config| {
        config.allow_private = vec!["127.0.0.0/8".to_owned()];
        config.store = agentd_server::config::StoreLocation::DataDir(config.data_dir.clone());
        // `[[tools.finance_search.mcp]] label = "market", connector = "connector_market"`:
        // the fixture's echo tool answers quotes with the ticker it is given.
        let mut tools = std::collections::BTreeMap::new();
        tools.insert(finance::Category::Quote, "echo".to_owned());
        config.finance_search.mcp = vec![finance::McpSource {
            label: "market".to_owned(),
            server: engine::mcp::McpServer {
                label: "market".to_owned(),
                url: String::new(),
                authorization: None,
                headers: std::collections::BTreeMap::new(),
            },
            connector: Some(finance::SavedConnector {
                id: "connector_market".to_owned(),
                project: None,
            }),
            tools,
            symbol_argument: "text".to_owned(),
        }];
        // `label = "shared", connector = "connector_market", project = "alpha"`: alpha's
        // connector answers profiles for every project.
        let mut shared = config.finance_search.mcp[0].clone();
        shared.label = "shared".to_owned();
        shared.connector = Some(finance::SavedConnector {
            id: "connector_market".to_owned(),
            project: Some("alpha".to_owned()),
        });
        shared.tools =
            std::collections::BTreeMap::from([(finance::Category::Profile, "echo".to_owned())]);
        config.finance_search.mcp.push(shared);
    })
    .await;
    let (status, owner) = post_as(
        &app,
        None,
        "/v1/admin/keys",
        json!({"role": "owner", "name": "root"}),
    )
    .await;
    assert_eq!(status, 201, "{owner}");
    let owner = owner["key"].as_str().unwrap().to_owned();
    let mut keys = Vec::new();
    for project in ["alpha", "beta"] {
        let (status, body) = post_as(
            &app,
            Some(&owner),
            "/v1/admin/projects",
            json!({"name": project}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let (status, body) = post_as(
            &app,
            Some(&owner),
            &format!("/v1/admin/keys?project={project}"),
            json!({"role": "admin", "name": project}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        keys.push(body["key"].as_str().unwrap().to_owned());
    }
    // Alpha saves the connector, its token sealed; beta saves none.
    let (status, created) = post_as(
        &app,
        Some(&keys[0]),
        "/v1/admin/connectors",
        json!({"id": "connector_market", "server_label": "market", "server_url": fixture.url,
               "authorization": TOKEN}),
    )
    .await;
    assert_eq!(status, 201, "{created}");

    let ask = json!({"model": MODEL, "input": "Quote ACME",
                     "tools": [{"type": "finance_search"}]});
    let call = r#"{"query": "ACME quote", "symbols": ["ACME"], "categories": ["quote"]}"#;

    // Alpha: the quote comes from its connector (the fixture refuses calls without the token).
    app.fake
        .push(Reply::tool_calls(vec![("call_1", "finance_search", call)]));
    app.fake.push(Reply::text("ACME [1]."));
    let (status, response) = post_as(&app, Some(&keys[0]), "/v1/responses", ask.clone()).await;
    assert_eq!(status, 200, "{response}");
    let finance = items(&response, "finance_results")[0];
    let result = &finance["results"][0];
    assert_eq!(result["source"], "mcp:market", "{finance}");
    assert!(result["data"].to_string().contains("ACME"), "{result}");
    assert!(
        tool_text(&app, 1).contains("[1] ACME: quote (MCP tool echo) · source: mcp:market"),
        "{}",
        tool_text(&app, 1)
    );

    // Beta: no such connector in its project, so no quote, said in words; never alpha's
    // (but the profile, from the connector the operator shared from alpha).
    let call =
        r#"{"query": "ACME quote", "symbols": ["ACME"], "categories": ["quote", "profile"]}"#;
    app.fake
        .push(Reply::tool_calls(vec![("call_1", "finance_search", call)]));
    app.fake.push(Reply::text("No quote."));
    let (status, response) = post_as(&app, Some(&keys[1]), "/v1/responses", ask).await;
    assert_eq!(status, 200, "{response}");
    let told = tool_text(&app, 3);
    assert!(
        told.contains(
            "the connector \"connector_market\" is not saved (or is disabled) in this project"
        ),
        "{told}"
    );
    let finance = items(&response, "finance_results")[0];
    let results = finance["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{finance}");
    assert_eq!(results[0]["category"], "profile");
    assert_eq!(results[0]["source"], "mcp:shared");
    assert!(!response.to_string().contains(TOKEN));
}

/// Runs the real `agentd` with `args`; its stdout, the test failing on an error.
fn agentd(args: &[&std::ffi::OsStr]) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(args)
        .env_remove("AGENTD_CONFIG")
        .env_remove("AGENTD_DATABASE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn store_copy_moves_the_people_directory_and_the_finance_store_to_postgresql() {
    let db = PgDatabase::create("agentd_pf").await;
    let dir = std::env::temp_dir().join(format!("agentd-copy-pf-{}", uuid::Uuid::new_v4()));
    let data = dir.join("data");
    write_sec_files(&dir.join("sec"));
    std::fs::write(
        dir.join("prices.csv"),
        "symbol,date,open,high,low,close,volume\nACME,2025-01-30,29,31,28,30,1000\nACME,2025-01-31,30,33,29,32.5,1500\n",
    )
    .unwrap();
    // A SQLite deployment: people of two projects, and the offline finance data.
    std::fs::write(
        dir.join("staff.csv"),
        "id,name,title,company,location,skills\n\
         e-1,Ada Lovelace,Staff Engineer,Analytical Engines,Berlin,rust\n\
         e-3,Grace Hopper,Engine Engineer,Analytical Engines,Berlin,compilers\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("other.csv"),
        "id,name,title,company,location\ne-2,Charles Babbage,Director,Analytical Engines,London\n",
    )
    .unwrap();
    let data_arg = data.as_os_str();
    let staff = dir.join("staff.csv");
    let other = dir.join("other.csv");
    agentd(&[
        "people".as_ref(),
        "import".as_ref(),
        staff.as_os_str(),
        "--data-dir".as_ref(),
        data_arg,
    ]);
    agentd(&[
        "people".as_ref(),
        "import".as_ref(),
        other.as_os_str(),
        "--project".as_ref(),
        "other".as_ref(),
        "--data-dir".as_ref(),
        data_arg,
    ]);
    let sec = dir.join("sec");
    let prices = dir.join("prices.csv");
    agentd(&[
        "finance".as_ref(),
        "import".as_ref(),
        "--data-dir".as_ref(),
        data_arg,
        sec.as_os_str(),
        "--prices".as_ref(),
        prices.as_os_str(),
    ]);
    assert!(data.join("people.sqlite").is_file() && data.join("finance.sqlite").is_file());

    let from = format!("sqlite://{}", data.join("agentd.db").display());
    let copied = agentd(&[
        "store".as_ref(),
        "copy".as_ref(),
        "--from".as_ref(),
        from.as_ref(),
        "--to".as_ref(),
        db.url.as_ref(),
    ]);
    assert!(
        copied.contains("people (agentd_people): 3 people copied"),
        "{copied}"
    );
    assert!(
        copied.contains("finance (agentd_finance): 1 tickers, 1 companies, 4 facts, 2 filings, 2 price rows copied"),
        "{copied}"
    );
    assert_eq!(db.count("agentd_people.people").await, 3);
    assert_eq!(db.count("agentd_finance.prices").await, 2);
    // Run again (an interrupted copy): nothing doubles.
    agentd(&[
        "store".as_ref(),
        "copy".as_ref(),
        "--from".as_ref(),
        from.as_ref(),
        "--to".as_ref(),
        db.url.as_ref(),
    ]);
    assert_eq!(db.count("agentd_people.people").await, 3);
    assert_eq!(db.count("agentd_finance.facts").await, 4);

    // A replica on PostgreSQL (a data directory of its own, empty) answers from the copy.
    let url = db.url.clone();
    let app = TestApp::spawn_with(move |config| {
        config.store = agentd_server::config::StoreLocation::Postgres(url.clone());
        config.finance_search.store_url = Some(url.clone());
        config.people_search.directory_url = Some(url);
    })
    .await;
    assert!(!app.data_dir.join("people.sqlite").exists());
    assert!(!app.data_dir.join("finance.sqlite").exists());

    // People: full-text search, ranked (a name match first), in the project only (the
    // default project's key; Babbage was imported into "other").
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "people_search",
        r#"{"queries":["engines grace"]}"#,
    )]));
    app.fake.push(Reply::text("Grace Hopper [1]."));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "Who builds engines?",
                   "tools": [{"type": "people_search"}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let titles: Vec<&str> = items(&response, "people_search_results")
        .into_iter()
        .flat_map(|item| item["results"].as_array().unwrap())
        .map(|result| result["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Grace Hopper — Engine Engineer, Analytical Engines",
            "Ada Lovelace — Staff Engineer, Analytical Engines"
        ]
    );

    // Finance: the quote from the copied prices, the income statement from the copied facts.
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "finance_search",
        r#"{"query": "Acme last close and revenue", "symbols": ["Acme Robotics"], "categories": ["quote", "income_statement"]}"#,
    )]));
    app.fake.push(Reply::text("It closed at 32.5 [1]."));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "How did Acme do?",
                   "tools": [{"type": "finance_search"}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let finance = items(&response, "finance_results")[0];
    let results = finance["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{finance}");
    assert_eq!(results[0]["category"], "quote");
    assert_eq!(results[0]["as_of"], "2025-01-31");
    assert_eq!(results[1]["as_of"], "2024-12-31");
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}
