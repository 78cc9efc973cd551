//! `image_search` through agentd on its offline default: pages added with `agentd index add`
//! (the real binary) keep their images with alt text, and the local index answers: the
//! `image_search_results` item as the SDK types it, the reasoning events, usage, citations.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::response::Html;
use axum::routing::get;
use serde_json::json;
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// A PNG header of that size.
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

#[tokio::test]
async fn the_local_index_answers_image_search() {
    let fetched = Arc::new(AtomicUsize::new(0));
    let counter = fetched.clone();
    let router = axum::Router::new()
        .route(
            "/lighthouses",
            get(|| async {
                Html(
                    r#"<html><head><title>Lighthouses of Brittany</title></head><body>
                    <p>The lighthouses of the Breton coast.</p>
                    <img src="/img/phare.png" alt="Phare du Créac'h at dusk">
                    <img src="/img/other.png" alt="A harbour" width="10" height="10">
                    </body></html>"#,
                )
            }),
        )
        .route(
            "/img/phare.png",
            get(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async { ([("content-type", "image/png")], png(400, 600)) }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });

    let app = TestApp::spawn_with(|config| {
        config.allow_private = vec!["127.0.0.0/8".to_owned()];
    })
    .await;
    // The page server runs on this test's runtime: the CLI waits on a blocking thread.
    let data_dir = app.data_dir.clone();
    let page = format!("{site}/lighthouses");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(["index", "add", "--data-dir"])
            .arg(&data_dir)
            .arg(page)
            .env("AGENTD_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8")
            .env_remove("AGENTD_SEARXNG_URL")
            .env_remove("BRAVE_API_KEY")
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    app.fake.push(Reply::tool_calls(vec![(
        "call_img",
        "image_search",
        r#"{"queries":["lighthouse dusk"]}"#,
    )]));
    app.fake
        .push(Reply::text("The Créac'h lighthouse at dusk [1]."));
    let transcript = app
        .post_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "Show me a lighthouse", "stream": true,
                   "tools": [{"type": "image_search", "max_results": 3}]}),
        )
        .await;
    transcript.assert_invariants();
    let response = transcript.terminal()["response"].clone();
    assert_eq!(response["status"], "completed", "{response}");
    let item = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "image_search_results")
        .unwrap()
        .clone();
    assert_eq!(
        item,
        json!({"type": "image_search_results", "queries": ["lighthouse dusk"], "results": [
            {"image_url": format!("{site}/img/phare.png"), "origin_url": format!("{site}/lighthouses"),
             "title": "Phare du Créac'h at dusk", "width": 400, "height": 600}
        ]})
    );
    // Measured once, through the guard (the operator allowed loopback).
    assert_eq!(fetched.load(Ordering::SeqCst), 1);
    assert_eq!(
        response["usage"]["tool_calls_details"]["image_search"]["invocation"],
        1
    );
    let types = transcript.types();
    assert!(types.contains(&"response.reasoning.image_search_queries".to_owned()));
    assert!(types.contains(&"response.reasoning.image_search_results".to_owned()));
    let message = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "message")
        .unwrap();
    assert_eq!(
        message["content"][0]["annotations"][0]["url"],
        format!("{site}/lighthouses")
    );
}
