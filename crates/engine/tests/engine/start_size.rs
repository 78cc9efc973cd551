//! The size of `Engine::start`'s future: a server boxes its request handler's future (axum
//! does), which holds this one inline, so every byte of it is copied once per request.

use crate::common::{Harness, PROJECT, request};

/// The future holds the boxed request and the lookups' futures, not the request, the plan,
/// the response and the record side by side (it was ~10 KB, copied whole by the handler's box).
#[test]
fn the_start_future_is_small() {
    let h = Harness::new();
    let start = h.engine.start(
        PROJECT,
        request(serde_json::json!({"model": "fake/m", "input": "x"})),
    );
    let size = std::mem::size_of_val(&start);
    drop(start);
    assert!(size <= 2048, "Engine::start's future is {size} bytes");
}
