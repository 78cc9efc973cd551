//! Black-box tests of the job queue and maintenance ports of both stores (the `matrix!` at the
//! end runs each on SQLite and on PostgreSQL).

mod common;

use std::collections::HashSet;

use common::{TestDb, TestResult, TestStore, events};
use engine::store::{JobRecord, JobState, ResponseRecord, StoreError};
use protocol::response::{Response, ResponseStatus};
use serde_json::json;

fn job(response_id: &str, project_id: &str, created_at_ms: i64) -> JobRecord {
    JobRecord {
        response_id: response_id.to_owned(),
        project_id: project_id.to_owned(),
        payload: format!(r#"{{"run":"{response_id}"}}"#),
        state: JobState::Queued,
        lease_owner: None,
        lease_until_ms: 0,
        created_at_ms,
    }
}

fn response(id: &str, status: &str) -> Result<Response, serde_json::Error> {
    serde_json::from_value(json!({
        "id": id,
        "object": "response",
        "created_at": 1_700_000_000,
        "completed_at": null,
        "status": status,
        "model": "openai/gpt-test",
        "output": [],
        "usage": null,
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": null,
        "max_tool_calls": null,
        "max_steps": null,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "parallel_tool_calls": true,
        "truncation": "disabled",
        "background": true,
        "store": true,
        "service_tier": "default",
        "text": {"format": {"type": "text"}},
        "metadata": {},
        "previous_response_id": null,
        "prompt_cache_key": null,
        "reasoning": null,
        "frequency_penalty": 0.0,
        "presence_penalty": 0.0,
        "top_logprobs": 0
    }))
}

fn record(
    id: &str,
    project_id: &str,
    status: &str,
    created_at: i64,
) -> Result<ResponseRecord, serde_json::Error> {
    Ok(ResponseRecord {
        id: id.to_owned(),
        project_id: project_id.to_owned(),
        created_at,
        visible: true,
        response: response(id, status)?,
        transcript: Vec::new(),
        conversation_id: None,
        items: Vec::new(),
        append_to: None,
        turns: Vec::new(),
        response_json: None,
        transcript_prefix: None,
    })
}

async fn claims_go_oldest_first(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.insert_job(&job("resp_b", "proj_a", 2_000)).await?;
    store.insert_job(&job("resp_c", "proj_b", 3_000)).await?;
    store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;

    let first = store
        .claim_job("worker_1", 10_000, 40_000)
        .await?
        .ok_or("nothing claimed")?;
    assert_eq!(first.previous_state, JobState::Queued);
    assert_eq!(
        first.job,
        JobRecord {
            state: JobState::Running,
            lease_owner: Some("worker_1".to_owned()),
            lease_until_ms: 40_000,
            ..job("resp_a", "proj_a", 1_000)
        }
    );
    let order = [
        first.job.response_id,
        store
            .claim_job("worker_1", 10_000, 40_000)
            .await?
            .ok_or("second not claimed")?
            .job
            .response_id,
        store
            .claim_job("worker_2", 10_000, 40_000)
            .await?
            .ok_or("third not claimed")?
            .job
            .response_id,
    ];
    assert_eq!(order, ["resp_a", "resp_b", "resp_c"]);
    Ok(())
}

async fn claim_is_none_when_nothing_is_claimable(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    assert_eq!(store.claim_job("worker_1", 10_000, 40_000).await?, None);
    store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;
    assert!(store.claim_job("worker_1", 10_000, 40_000).await?.is_some());
    assert_eq!(store.claim_job("worker_2", 10_000, 40_000).await?, None);
    Ok(())
}

async fn only_an_expired_lease_is_reclaimed(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;
    store
        .claim_job("worker_1", 10_000, 40_000)
        .await?
        .ok_or("not claimed")?;

    // The lease holds until 40_000: not claimable before (nor at) that instant.
    assert_eq!(store.claim_job("worker_2", 39_999, 70_000).await?, None);
    assert_eq!(store.claim_job("worker_2", 40_000, 70_000).await?, None);

    let reclaimed = store
        .claim_job("worker_2", 40_001, 70_000)
        .await?
        .ok_or("expired lease not reclaimed")?;
    assert_eq!(reclaimed.previous_state, JobState::Running);
    assert_eq!(reclaimed.job.state, JobState::Running);
    assert_eq!(reclaimed.job.lease_owner.as_deref(), Some("worker_2"));
    assert_eq!(reclaimed.job.lease_until_ms, 70_000);

    // The first worker lost it.
    assert!(!store.renew_lease("resp_a", "worker_1", 100_000).await?);
    assert!(store.renew_lease("resp_a", "worker_2", 100_000).await?);
    assert_eq!(store.claim_job("worker_3", 80_000, 110_000).await?, None);
    Ok(())
}

async fn a_queued_job_goes_before_an_older_live_one(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.insert_job(&job("resp_old", "proj_a", 1_000)).await?;
    store.insert_job(&job("resp_new", "proj_a", 2_000)).await?;
    store
        .claim_job("worker_1", 10_000, 40_000)
        .await?
        .ok_or("not claimed")?;
    let second = store
        .claim_job("worker_2", 20_000, 50_000)
        .await?
        .ok_or("not claimed")?;
    assert_eq!(second.job.response_id, "resp_new");
    assert_eq!(second.previous_state, JobState::Queued);
    Ok(())
}

/// Two tasks draining 50 jobs through one store, and two stores on one database (as two
/// processes, or replicas, would): every job is claimed exactly once.
async fn drain_concurrently(a: TestStore, b: TestStore) -> TestResult {
    for n in 0..50 {
        a.insert_job(&job(&format!("resp_{n:02}"), "proj_a", n))
            .await?;
    }
    let claimer = |store: TestStore, owner: &'static str| {
        tokio::spawn(async move {
            let mut claimed = Vec::new();
            while let Some(c) = store.claim_job(owner, 1_000, 60_000).await? {
                assert_eq!(c.previous_state, JobState::Queued);
                assert_eq!(c.job.lease_owner.as_deref(), Some(owner));
                claimed.push(c.job.response_id);
                tokio::task::yield_now().await;
            }
            Ok::<_, StoreError>(claimed)
        })
    };
    let first = claimer(a.clone(), "worker_1");
    let second = claimer(b, "worker_2");
    let first = first.await??;
    let second = second.await??;

    let all: HashSet<&String> = first.iter().chain(&second).collect();
    assert_eq!(first.len() + second.len(), 50, "{first:?} {second:?}");
    assert_eq!(all.len(), 50, "a job was claimed twice");
    assert_eq!(a.count_all_queued().await?, 0);
    Ok(())
}

async fn concurrent_claims_through_one_store_never_overlap(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    drain_concurrently(store.clone(), store.clone()).await?;
    store.close().await;
    Ok(())
}

async fn concurrent_claims_through_two_stores_never_overlap(db: &TestDb) -> TestResult {
    let a = db.open().await?;
    let b = db.open().await?;
    drain_concurrently(a.clone(), b.clone()).await?;
    a.close().await;
    b.close().await;
    Ok(())
}

async fn claim_queued_job_takes_only_that_queued_job(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;
    store.insert_job(&job("resp_b", "proj_a", 2_000)).await?;

    let claimed = store
        .claim_queued_job("resp_b", "canceller", 30_000)
        .await?
        .ok_or("queued job not claimed")?;
    assert_eq!(
        claimed,
        JobRecord {
            state: JobState::Running,
            lease_owner: Some("canceller".to_owned()),
            lease_until_ms: 30_000,
            ..job("resp_b", "proj_a", 2_000)
        }
    );
    // Already running, even with an expired lease: not claimed again this way.
    assert_eq!(
        store
            .claim_queued_job("resp_b", "canceller", 30_000)
            .await?,
        None
    );
    assert_eq!(
        store
            .claim_queued_job("resp_missing", "canceller", 30_000)
            .await?,
        None
    );
    // The other job is untouched.
    assert_eq!(store.count_all_queued().await?, 1);
    let next = store
        .claim_job("worker_1", 10_000, 40_000)
        .await?
        .ok_or("not claimed")?;
    assert_eq!(next.job.response_id, "resp_a");
    Ok(())
}

async fn renew_lease_needs_the_owner_and_the_row(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;
    // Queued: nobody holds it.
    assert!(!store.renew_lease("resp_a", "worker_1", 50_000).await?);

    store
        .claim_job("worker_1", 10_000, 40_000)
        .await?
        .ok_or("not claimed")?;
    assert!(!store.renew_lease("resp_a", "worker_2", 50_000).await?);
    assert!(store.renew_lease("resp_a", "worker_1", 50_000).await?);
    // The renewed lease holds past the old deadline.
    assert_eq!(store.claim_job("worker_2", 45_000, 80_000).await?, None);

    store.delete_job("resp_a").await?;
    assert!(!store.renew_lease("resp_a", "worker_1", 60_000).await?);
    Ok(())
}

async fn delete_removes_the_job(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;
    store.delete_job("resp_a").await?;
    store.delete_job("resp_a").await?;
    store.delete_job("resp_missing").await?;
    assert_eq!(store.count_all_queued().await?, 0);
    assert_eq!(store.claim_job("worker_1", 10_000, 40_000).await?, None);
    // The id is free again.
    store.insert_job(&job("resp_a", "proj_a", 2_000)).await?;
    assert_eq!(store.count_all_queued().await?, 1);
    Ok(())
}

async fn duplicate_job_is_a_conflict(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;
    let result = store.insert_job(&job("resp_a", "proj_a", 2_000)).await;
    assert!(matches!(result, Err(StoreError::Conflict(_))), "{result:?}");
    Ok(())
}

/// A run that holds a job row starts with its record and its job in one transaction: both are
/// stored, or neither — a job row already there for the id refuses the start, and the
/// record's upsert goes back with it.
async fn a_run_starts_with_its_record_and_its_job_or_with_neither(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store
        .start_run(
            &record("resp_a", "proj_a", "queued", 10)?,
            &job("resp_a", "proj_a", 1_000),
        )
        .await?;
    let stored = store
        .get_response("proj_a", "resp_a")
        .await?
        .ok_or("resp_a's record was not stored")?;
    assert_eq!(stored.response.status, ResponseStatus::Queued);
    assert_eq!(store.count_queued("proj_a").await?, 1);
    let claimed = store
        .claim_job("worker_1", 2_000, 60_000)
        .await?
        .ok_or("resp_a's job was not stored")?;
    assert_eq!(
        claimed.job,
        JobRecord {
            state: JobState::Running,
            lease_owner: Some("worker_1".to_owned()),
            lease_until_ms: 60_000,
            ..job("resp_a", "proj_a", 1_000)
        }
    );

    store.insert_job(&job("resp_b", "proj_a", 3_000)).await?;
    let refused = store
        .start_run(
            &record("resp_b", "proj_a", "queued", 20)?,
            &job("resp_b", "proj_a", 4_000),
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::Conflict(_))),
        "{refused:?}"
    );
    assert!(
        store.get_response("proj_a", "resp_b").await?.is_none(),
        "the record of a refused start was stored"
    );
    // The job row that was there is unchanged.
    assert_eq!(store.count_queued("proj_a").await?, 1);
    Ok(())
}

async fn queued_counts_per_project_and_overall(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    assert_eq!(store.count_all_queued().await?, 0);
    assert_eq!(store.count_queued("proj_a").await?, 0);
    store.insert_job(&job("resp_1", "proj_a", 1_000)).await?;
    store.insert_job(&job("resp_2", "proj_a", 2_000)).await?;
    store.insert_job(&job("resp_3", "proj_a", 3_000)).await?;
    store.insert_job(&job("resp_4", "proj_b", 4_000)).await?;
    assert_eq!(store.count_queued("proj_a").await?, 3);
    assert_eq!(store.count_queued("proj_b").await?, 1);
    assert_eq!(store.count_queued("proj_c").await?, 0);
    assert_eq!(store.count_all_queued().await?, 4);

    // Running jobs are not queued.
    store
        .claim_job("worker_1", 10_000, 40_000)
        .await?
        .ok_or("not claimed")?;
    assert_eq!(store.count_queued("proj_a").await?, 2);
    assert_eq!(store.count_all_queued().await?, 3);
    store.delete_job("resp_4").await?;
    assert_eq!(store.count_queued("proj_b").await?, 0);
    assert_eq!(store.count_all_queued().await?, 2);
    Ok(())
}

async fn orphaned_responses_are_live_ones_without_a_job(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store
        .put_response(&record("resp_running", "proj_a", "in_progress", 10)?)
        .await?;
    store
        .put_response(&record("resp_waiting", "proj_b", "queued", 20)?)
        .await?;
    store
        .put_response(&record("resp_done", "proj_a", "completed", 30)?)
        .await?;
    store
        .put_response(&record("resp_held", "proj_a", "in_progress", 40)?)
        .await?;
    store
        .put_response(&record("resp_queued", "proj_b", "queued", 50)?)
        .await?;
    store.insert_job(&job("resp_held", "proj_a", 1_000)).await?;
    store
        .insert_job(&job("resp_queued", "proj_b", 2_000))
        .await?;
    store
        .claim_job("worker_1", 10_000, 40_000)
        .await?
        .ok_or("not claimed")?;
    // A job row whose response was never written changes nothing.
    store
        .insert_job(&job("resp_ghost", "proj_a", 3_000))
        .await?;

    let orphaned = store.orphaned_responses().await?;
    assert_eq!(
        orphaned,
        vec![
            ("proj_a".to_owned(), "resp_running".to_owned()),
            ("proj_b".to_owned(), "resp_waiting".to_owned()),
        ]
    );
    Ok(())
}

async fn purge_events_deletes_only_old_responses_logs(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    // 40 old responses (more than one purge batch) and two recent ones.
    for n in 0..40 {
        let id = format!("resp_old_{n:02}");
        store
            .put_response(&record(&id, "proj_a", "completed", 1_000 + n)?)
            .await?;
        store.append_events(&id, &events(0..3)).await?;
    }
    store
        .put_response(&record("resp_edge", "proj_a", "completed", 2_000)?)
        .await?;
    store.append_events("resp_edge", &events(0..4)).await?;
    store
        .put_response(&record("resp_new", "proj_b", "in_progress", 3_000)?)
        .await?;
    store.append_events("resp_new", &events(0..5)).await?;
    // Events of a run whose response row does not exist (yet) are not touched.
    store.append_events("resp_unknown", &events(0..2)).await?;

    assert_eq!(store.purge_events(2_000).await?, 120);
    for n in 0..40 {
        let id = format!("resp_old_{n:02}");
        assert_eq!(store.events_after(&id, None).await?, vec![], "{id}");
    }
    assert_eq!(store.events_after("resp_edge", None).await?, events(0..4));
    assert_eq!(store.events_after("resp_new", None).await?, events(0..5));
    assert_eq!(
        store.events_after("resp_unknown", None).await?,
        events(0..2)
    );
    // Responses themselves are kept.
    assert!(store.get_response("proj_a", "resp_old_00").await?.is_some());

    // Nothing left to purge before that time; a later cut takes the rest.
    assert_eq!(store.purge_events(2_000).await?, 0);
    assert_eq!(store.purge_events(i64::MAX).await?, 9);
    assert_eq!(
        store.events_after("resp_unknown", None).await?,
        events(0..2)
    );
    Ok(())
}

async fn jobs_survive_reopen(db: &TestDb) -> TestResult {
    {
        let store = db.open().await?;
        store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;
        store.insert_job(&job("resp_b", "proj_a", 2_000)).await?;
        store
            .claim_job("worker_1", 10_000, 40_000)
            .await?
            .ok_or("not claimed")?;
        store.close().await;
    }
    let store = db.open().await?;
    assert_eq!(store.count_all_queued().await?, 1);
    // After a restart the old worker's lease expires and the job comes back as a lost run.
    let lost = store
        .claim_job("worker_2", 50_000, 80_000)
        .await?
        .ok_or("lost job not reclaimed")?;
    assert_eq!(lost.job.response_id, "resp_a");
    assert_eq!(lost.previous_state, JobState::Running);
    store.close().await;
    Ok(())
}

/// A cancel received by another replica marks the running job; only its holder sees the mark,
/// and a queued job cannot be marked (it is cancelled by taking it out of the queue).
async fn a_cancel_request_reaches_the_holder_of_a_running_job(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.insert_job(&job("resp_a", "proj_a", 1_000)).await?;
    store.insert_job(&job("resp_b", "proj_a", 2_000)).await?;
    assert!(
        !store.request_cancel("resp_a").await?,
        "queued jobs are not marked"
    );
    store
        .claim_job("replica_1", 10_000, 40_000)
        .await?
        .ok_or("not claimed")?;
    store
        .claim_job("replica_2", 10_000, 40_000)
        .await?
        .ok_or("not claimed")?;
    assert_eq!(
        store.cancel_requests("replica_1").await?,
        Vec::<String>::new()
    );

    let other_replica = db.open().await?;
    assert!(other_replica.request_cancel("resp_a").await?);
    assert!(!other_replica.request_cancel("resp_missing").await?);
    assert_eq!(store.cancel_requests("replica_1").await?, vec!["resp_a"]);
    assert_eq!(
        store.cancel_requests("replica_2").await?,
        Vec::<String>::new()
    );
    store.delete_job("resp_a").await?;
    assert_eq!(
        store.cancel_requests("replica_1").await?,
        Vec::<String>::new()
    );
    Ok(())
}

matrix!(
    a_cancel_request_reaches_the_holder_of_a_running_job,
    claims_go_oldest_first,
    claim_is_none_when_nothing_is_claimable,
    only_an_expired_lease_is_reclaimed,
    a_queued_job_goes_before_an_older_live_one,
    concurrent_claims_through_one_store_never_overlap,
    concurrent_claims_through_two_stores_never_overlap,
    claim_queued_job_takes_only_that_queued_job,
    renew_lease_needs_the_owner_and_the_row,
    delete_removes_the_job,
    duplicate_job_is_a_conflict,
    a_run_starts_with_its_record_and_its_job_or_with_neither,
    queued_counts_per_project_and_overall,
    orphaned_responses_are_live_ones_without_a_job,
    purge_events_deletes_only_old_responses_logs,
    jobs_survive_reopen,
);
