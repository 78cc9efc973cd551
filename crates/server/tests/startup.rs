//! Start-up rules: open mode (no API key in the store) is allowed only on loopback.

#![expect(clippy::expect_used, reason = "test helpers fail loudly")]

use agentd_server::ServerError;
use agentd_server::config::{Config, Flags, RawConfig};

fn config(listen: &str, data_dir: &std::path::Path) -> Config {
    let no_env = |_: &str| None;
    let flags = Flags {
        listen: Some(listen.to_owned()),
        data_dir: Some(data_dir.to_owned()),
        database_url: None,
    };
    Config::resolve(RawConfig::default(), &no_env, &flags).expect("config resolves")
}

#[tokio::test]
async fn open_mode_is_refused_off_loopback_until_a_key_exists() {
    let dir = std::env::temp_dir().join(format!("agentd-startup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // Nothing is bound here: only the start-up decision is checked.
    let refused = agentd_server::build_state(&config("0.0.0.0:0", &dir)).await;
    match refused {
        Err(err @ ServerError::OpenModeNotLoopback(_)) => {
            assert!(err.to_string().contains("agentd keys create"), "{err}");
        }
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => panic!("open mode must be refused on a non-loopback address"),
    }
    assert!(
        agentd_server::build_state(&config("127.0.0.1:0", &dir))
            .await
            .is_ok()
    );
    assert!(
        agentd_server::build_state(&config("[::1]:0", &dir))
            .await
            .is_ok()
    );

    let state = agentd_server::build_state(&config("127.0.0.1:0", &dir))
        .await
        .expect("loopback");
    state.engine.create_key("ops").await.expect("key created");
    assert!(
        agentd_server::build_state(&config("0.0.0.0:0", &dir))
            .await
            .is_ok(),
        "with a key in the store any address is allowed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
