//! `people_search` through agentd: refused (400, naming what to set) with nothing configured;
//! after `agentd people import` (the real binary, while the server runs) the embedded
//! directory answers: items, events, usage and cost, citations, and no sensitive column of
//! the import anywhere (model, response, stream, store files).

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod pg_support;

use pg_support::PgDatabase;

use agentd_server::config::StoreLocation;
use serde_json::{Value, json};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// Columns of the import that must never come out.
const SENSITIVE: &[&str] = &[
    "ada.home@example.com",
    "+44 20 7946 0958",
    "7946",
    "12 Secret Lane",
    "1815-12-10",
    "female",
];

const CSV: &str = "id,name,title,company,department,location,education,skills,profile_url,summary,updated_at,personal_email,phone,street_address,birth_date,gender\n\
e-1,Ada Lovelace,Staff Engineer,Analytical Engines,Platform,Berlin,University of London,rust; compilers,https://intranet.example/people/ada,Builds the engine (call +44 20 7946 0958),2025-03-01,ada.home@example.com,+44 20 7946 0958,12 Secret Lane,1815-12-10,female\n\
e-2,Charles Babbage,Director,Analytical Engines,Leadership,London,Cambridge,management,,,2024-11-02,,,,,\n";

fn body(stream: bool) -> Value {
    json!({"model": MODEL, "input": "Who builds our engine in Berlin?", "stream": stream,
           "tools": [{"type": "people_search"}]})
}

#[tokio::test]
async fn people_search_is_refused_until_a_directory_is_imported_then_answers() {
    let app = TestApp::spawn_with(|config| {
        config.store = StoreLocation::DataDir(config.data_dir.clone());
        let mut prices = (*config.engine.prices).clone();
        prices.tools.insert("search_people".to_owned(), 0.02);
        config.engine.prices = std::sync::Arc::new(prices);
    })
    .await;

    // Nothing configured: 400 naming the tool and what to set; the model is never asked.
    let (status, error) = app.post("/v1/responses", body(false)).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["type"], "invalid_request");
    assert_eq!(error["error"]["param"], "tools[0]");
    let message = error["error"]["message"].as_str().unwrap();
    for named in [
        "people_search",
        "agentd people import",
        "PDL_API_KEY",
        "[tools.people_search.ldap]",
    ] {
        assert!(message.contains(named), "{named} not in {message}");
    }
    assert!(app.fake.requests().is_empty());

    // The operator imports a directory while the server runs.
    let file = app.data_dir.join("staff.csv");
    std::fs::write(&file, CSV).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["people", "import"])
        .arg(&file)
        .arg("--data-dir")
        .arg(&app.data_dir)
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
        stdout.contains("imported 2 people into project \"default\""),
        "{stdout}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(app.data_dir.join("people.sqlite"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "people_search",
        r#"{"queries":["engine builder"],"location":"Berlin"}"#,
    )]));
    let answer = "Ada Lovelace builds it [1].";
    app.fake.push(Reply::text(answer));
    let transcript = app.post_stream("/v1/responses", body(true)).await;
    transcript.assert_invariants();
    let response = transcript.terminal()["response"].clone();
    assert_eq!(response["status"], "completed", "{response}");

    // The model was offered the function and read one numbered person.
    let offered = app.fake.requests()[0]["tools"].to_string();
    assert!(
        offered.contains("\"people_search\"") && offered.contains("maxItems\":5"),
        "{offered}"
    );
    let told: Vec<String> = app.fake.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        told[0].contains("[1] Ada Lovelace — Staff Engineer, Analytical Engines"),
        "{told:?}"
    );
    assert!(
        !told[0].contains("Babbage"),
        "the location hint did not narrow: {told:?}"
    );

    let output = response["output"].as_array().unwrap();
    let item = output
        .iter()
        .find(|item| item["type"] == "people_search_results")
        .unwrap();
    assert_eq!(
        item["queries"],
        json!(["engine builder (location: Berlin)"])
    );
    let result = &item["results"][0];
    assert_eq!(result["id"], 1);
    assert_eq!(result["url"], "https://intranet.example/people/ada");
    assert_eq!(
        result["title"],
        "Ada Lovelace — Staff Engineer, Analytical Engines"
    );
    assert_eq!(result["last_updated"], "2025-03-01");
    assert_eq!(
        result["snippet"],
        "Department: Platform. Location: Berlin. Education: University of London. Skills: rust, compilers. Builds the engine (call). Source: directory"
    );
    let usage = &response["usage"]["tool_calls_details"]["search_people"];
    assert_eq!(usage["invocation"], 1, "{}", response["usage"]);
    assert_eq!(usage["cost_usd"], 0.02, "{}", response["usage"]);
    let message = output
        .iter()
        .find(|item| item["type"] == "message")
        .unwrap();
    let annotation = &message["content"][0]["annotations"][0];
    assert_eq!(annotation["url"], "https://intranet.example/people/ada");

    // No sensitive column anywhere: the model's inputs, the stream, the stored response,
    // and every file in the data directory (the store and the people directory).
    let mut seen = format!(
        "{}\n{}",
        serde_json::to_string(&app.fake.requests()).unwrap(),
        serde_json::to_string(&transcript.events).unwrap()
    );
    let (_, stored) = app
        .get(&format!(
            "/v1/responses/{}",
            response["id"].as_str().unwrap()
        ))
        .await;
    seen.push_str(&stored.to_string());
    for secret in SENSITIVE {
        assert!(!seen.contains(secret), "{secret} leaked");
    }
    for entry in std::fs::read_dir(&app.data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() && path != file {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            for secret in SENSITIVE {
                assert!(
                    !text.contains(secret),
                    "{secret} stored in {}",
                    path.display()
                );
            }
        }
    }
}

/// An answer of agentd, with the key of a project.
async fn post_as(app: &TestApp, key: Option<&str>, path: &str, body: Value) -> (u16, Value) {
    let mut request = app.client.post(app.url(path)).json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Project `name` and a member key of it, made with the owner key.
async fn project_key(app: &TestApp, owner: &str, name: &str) -> String {
    let (status, body) = post_as(
        app,
        Some(owner),
        "/v1/admin/projects",
        json!({"name": name}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = post_as(
        app,
        Some(owner),
        &format!("/v1/admin/keys?project={name}"),
        json!({"role": "member", "name": format!("{name}-member")}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["key"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_directory_imported_for_one_project_does_not_configure_another() {
    let app = TestApp::spawn_with(|config| {
        config.store = StoreLocation::DataDir(config.data_dir.clone());
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
    let alpha = project_key(&app, &owner, "alpha").await;
    let beta = project_key(&app, &owner, "beta").await;

    // The operator imports a directory into project alpha only.
    let file = app.data_dir.join("staff.csv");
    std::fs::write(&file, CSV).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["people", "import"])
        .arg(&file)
        .args(["--project", "alpha", "--data-dir"])
        .arg(&app.data_dir)
        .env_remove("AGENTD_CONFIG")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // Beta has nobody and no remote back end: 400 naming the tool and what to set, and
    // the model is never asked.
    let (status, error) = post_as(&app, Some(&beta), "/v1/responses", body(false)).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["param"], "tools[0]");
    let message = error["error"]["message"].as_str().unwrap();
    for named in [
        "people_search",
        "agentd people import",
        "--project",
        "PDL_API_KEY",
    ] {
        assert!(message.contains(named), "{named} not in {message}");
    }
    assert!(app.fake.requests().is_empty());

    // Alpha's requests search its directory.
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "people_search",
        r#"{"queries":["babbage"]}"#,
    )]));
    app.fake.push(Reply::text("Charles Babbage [1]."));
    let (status, response) = post_as(&app, Some(&alpha), "/v1/responses", body(false)).await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed", "{response}");
    let item = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "people_search_results")
        .unwrap()
        .clone();
    assert_eq!(
        item["results"][0]["title"],
        "Charles Babbage — Director, Analytical Engines"
    );
}

#[tokio::test]
async fn on_postgresql_the_directory_lives_in_the_shared_database() {
    let db = PgDatabase::create("agentd_pf").await;
    let dir = std::env::temp_dir().join(format!("agentd-people-pg-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("staff.csv");
    std::fs::write(&file, CSV).unwrap();
    // `agentd people import` on any machine, given the database URL, writes into it.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["people", "import"])
        .arg(&file)
        .args(["--database-url", &db.url, "--data-dir"])
        .arg(dir.join("importer"))
        .env_remove("AGENTD_CONFIG")
        .env_remove("AGENTD_DATABASE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("imported 2 people into project \"default\""),
        "{stdout}"
    );
    assert_eq!(db.count("agentd_people.people").await, 2);
    assert!(!dir.join("importer/people.sqlite").exists());

    // A server (a replica with a data directory of its own, holding no people) on that
    // database answers from it.
    let url = db.url.clone();
    let app = TestApp::spawn_with(move |config| {
        config.store = StoreLocation::Postgres(url.clone());
        config.people_search.directory_url = Some(url);
    })
    .await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "people_search",
        r#"{"queries":["babbage"]}"#,
    )]));
    app.fake.push(Reply::text("Charles Babbage [1]."));
    let (status, response) = app.post("/v1/responses", body(false)).await;
    assert_eq!(status, 200, "{response}");
    let titles: Vec<&str> = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "people_search_results")
        .flat_map(|item| item["results"].as_array().unwrap())
        .map(|result| result["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Charles Babbage — Director, Analytical Engines"]);
    assert!(!app.data_dir.join("people.sqlite").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `agentd ARGS… --data-dir DIR` or `--database-url URL`; fails the test when it fails.
fn agentd(args: &[&str], place: &[&str]) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(args)
        .args(place)
        .env_remove("AGENTD_CONFIG")
        .env_remove("AGENTD_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "agentd {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Projects alpha and beta made with the owner key; their ids.
async fn two_projects(app: &TestApp, owner: &str) -> (String, String) {
    let mut ids = Vec::new();
    for name in ["alpha", "beta"] {
        let (status, body) = post_as(
            app,
            Some(owner),
            "/v1/admin/projects",
            json!({"name": name}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    (ids[0].clone(), ids[1].clone())
}

/// The owner key made in open mode.
async fn owner_key(app: &TestApp) -> String {
    let (status, owner) = post_as(
        app,
        None,
        "/v1/admin/keys",
        json!({"role": "owner", "name": "root"}),
    )
    .await;
    assert_eq!(status, 201, "{owner}");
    owner["key"].as_str().unwrap().to_owned()
}

async fn delete_project(app: &TestApp, owner: &str, id: &str) {
    let response = app
        .client
        .delete(app.url(&format!("/v1/admin/projects/{id}")))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
}

/// A deleted project's people are gone from the directory; the other project's stay. By the
/// admin API (the server) and by `agentd projects rm` (the command line).
async fn deleting_projects_removes_their_people(
    app: &TestApp,
    place: &[&str],
    settings: &people::PeopleSettings,
) {
    let owner = owner_key(app).await;
    let (alpha, beta) = two_projects(app, &owner).await;
    let file = app.data_dir.join("staff.csv");
    std::fs::write(&file, CSV).unwrap();
    let file = file.to_str().unwrap();
    for project in ["alpha", "beta"] {
        agentd(&["people", "import", file, "--project", project], place);
    }
    let directory = people::open_directory(settings).await.unwrap();
    assert_eq!(directory.count(&alpha).await.unwrap(), 2);
    assert_eq!(directory.count(&beta).await.unwrap(), 2);

    delete_project(app, &owner, &alpha).await;
    assert_eq!(directory.count(&alpha).await.unwrap(), 0);
    assert_eq!(directory.count(&beta).await.unwrap(), 2);

    agentd(&["projects", "rm", "beta"], place);
    assert_eq!(directory.count(&beta).await.unwrap(), 0);
}

#[tokio::test]
async fn deleting_a_project_removes_its_people_from_the_directory_file() {
    let app = TestApp::spawn_with(|config| {
        config.store = StoreLocation::DataDir(config.data_dir.clone());
    })
    .await;
    let data_dir = app.data_dir.to_str().unwrap().to_owned();
    let settings = people::PeopleSettings {
        directory_path: app.data_dir.join("people.sqlite"),
        ..people::PeopleSettings::default()
    };
    deleting_projects_removes_their_people(&app, &["--data-dir", &data_dir], &settings).await;
}

#[tokio::test]
async fn deleting_a_project_removes_its_people_from_postgresql() {
    let db = PgDatabase::create("agentd_pdel").await;
    let url = db.url.clone();
    let app = TestApp::spawn_with(move |config| {
        config.store = StoreLocation::Postgres(url.clone());
        config.people_search.directory_url = Some(url);
    })
    .await;
    let settings = people::PeopleSettings {
        directory_url: Some(db.url.clone()),
        ..people::PeopleSettings::default()
    };
    let data_dir = app.data_dir.to_str().unwrap().to_owned();
    deleting_projects_removes_their_people(
        &app,
        &["--database-url", &db.url, "--data-dir", &data_dir],
        &settings,
    )
    .await;
    assert_eq!(db.count("agentd_people.people").await, 0);
}
