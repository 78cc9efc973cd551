//! The response listing port (`engine::listing_store`) on both back ends: project scoping,
//! hidden responses, status, time, chain, the newest-first order and the page cursor.

mod common;

use common::{TestDb, TestResult, TestStore};
use engine::listing_store::{ResponseFilter, ResponseListStore};
use engine::store::{ResponseRecord, ResponseStore};
use serde_json::json;

fn record(
    id: &str,
    project: &str,
    created_at: i64,
    status: &str,
    visible: bool,
    chain: Option<&str>,
) -> Result<ResponseRecord, serde_json::Error> {
    let response = serde_json::from_value(json!({
        "id": id, "object": "response", "created_at": created_at, "completed_at": null,
        "status": status, "model": "openai/gpt-test", "output": [], "usage": null, "error": null,
        "incomplete_details": null, "instructions": null, "max_output_tokens": null,
        "max_tool_calls": null, "max_steps": null, "temperature": 1.0, "top_p": 1.0,
        "tool_choice": "auto", "tools": [], "parallel_tool_calls": true, "truncation": "disabled",
        "background": false, "store": visible, "service_tier": "default",
        "text": {"format": {"type": "text"}}, "metadata": {}, "previous_response_id": null,
        "prompt_cache_key": null, "reasoning": null, "frequency_penalty": 0.0,
        "presence_penalty": 0.0, "top_logprobs": 0
    }))?;
    Ok(ResponseRecord {
        id: id.to_owned(),
        project_id: project.to_owned(),
        created_at,
        visible,
        response,
        transcript: Vec::new(),
        conversation_id: chain.map(str::to_owned),
        items: Vec::new(),
        append_to: None,
        turns: Vec::new(),
        response_json: None,
        transcript_prefix: None,
    })
}

async fn listing_filters_orders_and_pages(db: &TestDb) -> TestResult {
    match db.open().await? {
        TestStore::Sqlite(store) => listing_on(&store).await,
        TestStore::Postgres(store) => listing_on(&store).await,
    }
}

async fn listing_on(store: &(impl ResponseStore + ResponseListStore)) -> TestResult {
    for record in [
        record("resp_a", "proj_1", 100, "completed", true, None)?,
        record("resp_b", "proj_1", 200, "failed", true, Some("resp_a"))?,
        record("resp_c", "proj_1", 200, "completed", true, Some("resp_a"))?,
        record("resp_d", "proj_1", 300, "completed", false, Some("resp_a"))?,
        record("resp_e", "proj_1", 400, "in_progress", true, None)?,
        record("resp_x", "proj_2", 250, "completed", true, None)?,
    ] {
        store.put_response(&record).await?;
    }
    let list = |filter: ResponseFilter| async move {
        let listed = store.list_responses("proj_1", &filter).await?;
        Ok::<_, Box<dyn std::error::Error>>(
            listed
                .into_iter()
                .map(|l| (l.response.id, l.chain))
                .collect::<Vec<_>>(),
        )
    };
    let ids =
        |pairs: Vec<(String, String)>| pairs.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
    let all = ResponseFilter {
        limit: 10,
        ..ResponseFilter::default()
    };
    // Newest first (id breaks ties), visible only, this project only; chains resolved.
    let listed = list(all.clone()).await?;
    assert_eq!(
        listed,
        vec![
            ("resp_e".to_owned(), "resp_e".to_owned()),
            ("resp_c".to_owned(), "resp_a".to_owned()),
            ("resp_b".to_owned(), "resp_a".to_owned()),
            ("resp_a".to_owned(), "resp_a".to_owned()),
        ]
    );
    let hidden_too = ResponseFilter {
        include_hidden: true,
        ..all.clone()
    };
    assert_eq!(
        ids(list(hidden_too).await?),
        ["resp_e", "resp_d", "resp_c", "resp_b", "resp_a"]
    );
    let completed = ResponseFilter {
        status: Some("completed".into()),
        ..all.clone()
    };
    assert_eq!(ids(list(completed).await?), ["resp_c", "resp_a"]);
    let window = ResponseFilter {
        created_after: Some(200),
        created_before: Some(400),
        ..all.clone()
    };
    assert_eq!(ids(list(window).await?), ["resp_c", "resp_b"]);
    let chain = ResponseFilter {
        chain: Some("resp_a".into()),
        include_hidden: true,
        ..all.clone()
    };
    assert_eq!(
        ids(list(chain).await?),
        ["resp_d", "resp_c", "resp_b", "resp_a"]
    );
    // Pages: `before` the last row seen, ties at the same second included once.
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = list(ResponseFilter {
            limit: 1,
            before: before.clone(),
            ..ResponseFilter::default()
        })
        .await?;
        let Some((id, _)) = page.into_iter().next() else {
            break;
        };
        let created_at = match id.as_str() {
            "resp_e" => 400,
            "resp_a" => 100,
            _ => 200,
        };
        before = Some((created_at, id.clone()));
        seen.push(id);
    }
    assert_eq!(seen, ["resp_e", "resp_c", "resp_b", "resp_a"]);
    assert_eq!(
        ids(store
            .list_responses("proj_2", &all)
            .await?
            .into_iter()
            .map(|l| (l.response.id, l.chain))
            .collect()),
        ["resp_x"]
    );
    Ok(())
}

matrix!(listing_filters_orders_and_pages);
