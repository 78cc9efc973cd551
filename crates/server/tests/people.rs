//! `people_search` through agentd: refused (400, naming what to set) with nothing configured;
//! after `agentd people import` (the real binary, while the server runs) the embedded
//! directory answers: items, events, usage and cost, citations, and no sensitive column of
//! the import anywhere (model, response, stream, store files).

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
