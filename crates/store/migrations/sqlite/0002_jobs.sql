-- agentd schema, version 2: the background job queue.
--
-- Times here are epoch milliseconds (leases are short), unlike the Unix seconds of version 1.

-- A background run waiting for a worker (`state` 'queued', no owner, lease 0) or held by one
-- (`state` 'running', `lease_owner` set, `lease_until_ms` in the future while the worker lives).
-- The row is deleted when the run ends. `payload` is the engine's own JSON, opaque here.
-- No foreign key to responses, for the same reason as `events`.
CREATE TABLE jobs (
    response_id    TEXT   PRIMARY KEY,
    project_id     TEXT   NOT NULL,
    payload        TEXT   NOT NULL,
    state          TEXT   NOT NULL,
    lease_owner    TEXT,
    lease_until_ms BIGINT NOT NULL,
    created_at_ms  BIGINT NOT NULL
);

-- Claims: the oldest queued job, or the oldest running one whose lease expired.
CREATE INDEX jobs_claim ON jobs (state, lease_until_ms, created_at_ms);
-- Per-project queue depth.
CREATE INDEX jobs_project_state ON jobs (project_id, state);

-- Event purges walk responses by creation time (`responses_status`, used to find orphaned
-- runs, already exists since version 1).
CREATE INDEX responses_created_id ON responses (created_at, id);
