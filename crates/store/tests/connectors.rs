//! Projects, key roles, connectors, their audit events and OAuth grants through the
//! administration ports.

mod common;

use std::collections::BTreeMap;

use common::{TestDb, TestResult, TestStore};
use engine::admin_store::{
    ConnectorEvent, ConnectorRecord, ConnectorStore, KeyInfo, NewKey, OAuthGrantRecord,
    ProjectRecord, ProjectStore, Role, SealedTokens,
};
use engine::store::{KeyStore, StoreError};
use serde_json::json;

fn connector(project: &str, id: &str) -> ConnectorRecord {
    ConnectorRecord {
        project_id: project.into(),
        id: id.into(),
        server_label: "docs".into(),
        server_url: "https://mcp.example.com/mcp".into(),
        transport: "auto".into(),
        description: Some("Docs".into()),
        auth_kind: "bearer".into(),
        authorization: Some("v1:k:sealed-token".into()),
        headers: BTreeMap::from([("X-Key".to_owned(), "v1:k:sealed-header".to_owned())]),
        allowed_tools: Some(vec!["echo".into()]),
        require_approval: Some(json!("always")),
        defer_loading: true,
        timeout_ms: Some(5000),
        enabled: true,
        sandbox_env: BTreeMap::from([("GH_TOKEN".to_owned(), "authorization".to_owned())]),
        secret_version: 1,
        status: "untested".into(),
        last_checked_at: None,
        last_error: None,
        created_at: 10,
        updated_at: 10,
    }
}

/// What these tests need of a store.
trait Admin: ProjectStore + ConnectorStore + KeyStore {}
impl<T: ProjectStore + ConnectorStore + KeyStore> Admin for T {}

async fn project(store: &impl Admin, id: &str, name: &str) -> TestResult {
    store
        .create_project(&ProjectRecord {
            id: id.into(),
            name: name.into(),
            created_at: 1,
        })
        .await?;
    Ok(())
}

async fn connectors_round_trip_and_stay_in_their_project(db: &TestDb) -> TestResult {
    match db.open().await? {
        TestStore::Sqlite(store) => {
            connectors_round_trip_and_stay_in_their_project_on(&store).await
        }
        TestStore::Postgres(store) => {
            connectors_round_trip_and_stay_in_their_project_on(&store).await
        }
    }
}

async fn connectors_round_trip_and_stay_in_their_project_on(store: &impl Admin) -> TestResult {
    project(store, "proj_a", "a").await?;
    project(store, "proj_b", "b").await?;
    let record = connector("proj_a", "connector_docs");
    store.insert_connector(&record).await?;
    assert!(matches!(
        store.insert_connector(&record).await,
        Err(StoreError::Conflict(_))
    ));
    // The same id in another project is another connector.
    store
        .insert_connector(&connector("proj_b", "connector_docs"))
        .await?;
    assert_eq!(
        store.get_connector("proj_a", "connector_docs").await?,
        Some(record.clone())
    );
    let mut changed = record.clone();
    changed.enabled = false;
    changed.headers.clear();
    assert!(store.update_connector(&changed).await?);
    assert_eq!(store.list_connectors("proj_a").await?, vec![changed]);
    store
        .set_connector_status("proj_a", "connector_docs", "error", 20, Some("refused"))
        .await?;
    let got = store
        .get_connector("proj_a", "connector_docs")
        .await?
        .ok_or("missing")?;
    assert_eq!(
        (
            got.status.as_str(),
            got.last_checked_at,
            got.last_error.as_deref()
        ),
        ("error", Some(20), Some("refused"))
    );
    assert!(store.delete_connector("proj_a", "connector_docs").await?);
    assert!(!store.delete_connector("proj_a", "connector_docs").await?);
    assert_eq!(store.list_connectors("proj_b").await?.len(), 1);
    Ok(())
}

async fn deleting_a_project_deletes_what_it_owns(db: &TestDb) -> TestResult {
    match db.open().await? {
        TestStore::Sqlite(store) => deleting_a_project_deletes_what_it_owns_on(&store).await,
        TestStore::Postgres(store) => deleting_a_project_deletes_what_it_owns_on(&store).await,
    }
}

async fn deleting_a_project_deletes_what_it_owns_on(store: &impl Admin) -> TestResult {
    project(store, "proj_a", "a").await?;
    project(store, "proj_b", "b").await?;
    for (project, id, role) in [
        ("proj_a", "key_1", Role::Admin),
        ("proj_b", "key_2", Role::Member),
    ] {
        store
            .insert_key_info(&NewKey {
                info: KeyInfo {
                    id: id.into(),
                    project_id: project.into(),
                    name: Some("ci".into()),
                    prefix: Some("agd_1234".into()),
                    role,
                    created_at: 5,
                    last_used_at: None,
                },
                key_hash: format!("hash-{id}"),
            })
            .await?;
        store
            .insert_connector(&connector(project, "connector_x"))
            .await?;
        store
            .add_connector_event(&ConnectorEvent {
                id: format!("cev_{project}"),
                project_id: project.into(),
                connector_id: "connector_x".into(),
                kind: "created".into(),
                key_id: Some(id.into()),
                detail: json!({"fields": ["authorization"]}),
                created_at: 6,
            })
            .await?;
    }
    store.touch_key("key_2", 99).await?;
    let member = store.key_by_hash("hash-key_2").await?.ok_or("missing")?;
    assert_eq!((member.role, member.last_used_at), (Role::Member, Some(99)));
    assert!(store.delete_project("proj_a").await?);
    assert!(store.get_project("proj_a").await?.is_none());
    assert!(store.find_key("hash-key_1").await?.is_none());
    assert!(store.list_connectors("proj_a").await?.is_empty());
    assert!(
        store
            .connector_events("proj_a", "connector_x")
            .await?
            .is_empty()
    );
    assert_eq!(store.list_keys("proj_b").await?.len(), 1);
    assert_eq!(
        store.connector_events("proj_b", "connector_x").await?.len(),
        1
    );
    assert!(store.revoke_key("proj_b", "key_2").await?);
    assert!(store.list_keys("proj_b").await?.is_empty());
    assert!(store.rename_project("proj_b", "renamed").await?);
    assert_eq!(
        store.project_by_name("renamed").await?.map(|p| p.id),
        Some("proj_b".to_owned())
    );
    Ok(())
}

async fn reseal_is_all_or_nothing(db: &TestDb) -> TestResult {
    match db.open().await? {
        TestStore::Sqlite(store) => reseal_is_all_or_nothing_on(&store).await,
        TestStore::Postgres(store) => reseal_is_all_or_nothing_on(&store).await,
    }
}

async fn reseal_is_all_or_nothing_on(store: &impl Admin) -> TestResult {
    project(store, "proj_a", "a").await?;
    store
        .insert_connector(&connector("proj_a", "connector_1"))
        .await?;
    store
        .put_oauth_grant(&OAuthGrantRecord {
            project_id: "proj_a".into(),
            connector_id: "connector_1".into(),
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/token".into(),
            resource: "https://mcp.example.com/mcp".into(),
            client_id: "client".into(),
            auth_method: "none".into(),
            kind: "dynamic".into(),
            redirect_uri: "http://127.0.0.1/cb".into(),
            scope: None,
            client_secret: None,
            refresh_token: Some("v1:k:sealed-refresh".into()),
            created_at: 1,
            updated_at: 1,
            access_token: None,
            access_expires_at: None,
        })
        .await?;
    // A refresh keeps the access token and its expiry; no new refresh token keeps the old.
    let kept = store
        .set_oauth_tokens(
            "proj_a",
            "connector_1",
            &SealedTokens {
                refresh_token: None,
                access_token: "v1:k:sealed-access".into(),
                access_expires_at: Some(1234),
            },
            2,
        )
        .await?;
    assert!(kept);
    let grant = store
        .get_oauth_grant("proj_a", "connector_1")
        .await?
        .ok_or("missing")?;
    assert_eq!(grant.access_token.as_deref(), Some("v1:k:sealed-access"));
    assert_eq!(grant.access_expires_at, Some(1234));
    assert_eq!(grant.refresh_token.as_deref(), Some("v1:k:sealed-refresh"));
    assert!(
        !store
            .set_oauth_tokens(
                "proj_a",
                "connector_none",
                &SealedTokens {
                    refresh_token: None,
                    access_token: "x".into(),
                    access_expires_at: None,
                },
                2,
            )
            .await?
    );
    // A failure half-way leaves every value as it was.
    let failed = store
        .reseal_all(&|field| {
            if field.field == "oauth.refresh_token" {
                Err("cannot open".to_owned())
            } else {
                Ok(Some(format!("new:{}", field.field)))
            }
        })
        .await;
    assert!(failed.is_err());
    let kept = store
        .get_connector("proj_a", "connector_1")
        .await?
        .ok_or("missing")?;
    assert_eq!(kept.authorization.as_deref(), Some("v1:k:sealed-token"));
    let changed = store
        .reseal_all(&|field| Ok(Some(format!("new:{}", field.field))))
        .await?;
    assert_eq!(changed, 4);
    let now = store
        .get_connector("proj_a", "connector_1")
        .await?
        .ok_or("missing")?;
    assert_eq!(now.authorization.as_deref(), Some("new:authorization"));
    assert_eq!(now.headers["X-Key"], "new:headers.X-Key");
    let grant = store
        .get_oauth_grant("proj_a", "connector_1")
        .await?
        .ok_or("missing")?;
    assert_eq!(
        grant.refresh_token.as_deref(),
        Some("new:oauth.refresh_token")
    );
    assert_eq!(
        grant.access_token.as_deref(),
        Some("new:oauth.access_token")
    );
    Ok(())
}

matrix!(
    connectors_round_trip_and_stay_in_their_project,
    deleting_a_project_deletes_what_it_owns,
    reseal_is_all_or_nothing,
);
