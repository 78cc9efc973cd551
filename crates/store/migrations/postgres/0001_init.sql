-- agentd schema, version 1.
--
-- The PostgreSQL twin of migrations/sqlite/0001_init.sql: TEXT and BIGINT columns only, JSON kept as TEXT, times as Unix
-- seconds in BIGINT (the unit of the wire's `created_at`), booleans as BIGINT 0/1.

-- A tenant. Every key, response and event log belongs to exactly one project.
CREATE TABLE projects (
    id         TEXT   PRIMARY KEY,
    name       TEXT   NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

-- API keys, stored only as the lower-case hex SHA-256 of the key.
CREATE TABLE api_keys (
    id         TEXT   PRIMARY KEY,
    project_id TEXT   NOT NULL REFERENCES projects (id),
    key_hash   TEXT   NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE INDEX api_keys_project_id ON api_keys (project_id);

-- Responses with their continuation transcript. `status` duplicates `response_json.status`
-- so that later queries (background jobs, listings) can filter without decoding JSON.
-- No foreign key to projects: the engine may store runs of a project it never registered
-- (open mode), and isolation is enforced by every query filtering on project_id.
CREATE TABLE responses (
    id              TEXT   PRIMARY KEY,
    project_id      TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,
    visible         BIGINT NOT NULL,
    status          TEXT   NOT NULL,
    response_json   TEXT   NOT NULL,
    transcript_json TEXT   NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE INDEX responses_project_created ON responses (project_id, created_at);
CREATE INDEX responses_status ON responses (status);

-- The stream event log of a run, for resume. One row per wire event; rows are written in
-- batches. No foreign key to responses: events are flushed while the run is still live,
-- before its response row exists.
CREATE TABLE events (
    response_id     TEXT   NOT NULL,
    sequence_number BIGINT NOT NULL,
    data            TEXT   NOT NULL,
    PRIMARY KEY (response_id, sequence_number)
);
