-- agentd schema, version 8: sandbox workspaces shared between replicas. (Version 7 belongs
-- to another change.)

-- The last saved files of a conversation's sandbox workspace, so a continuation that lands on
-- another replica finds them (written only when several replicas share the store). One row per
-- workspace: `generation` grows by one with every save, and a replica whose copy is of an
-- older generation restores `data` before its next sandbox step. `data` is a gzip-compressed
-- tar of the workspace; it is empty, with `note` saying why, when the packed files were over
-- the size limit (tools.sandbox.snapshot_max_mb). Rows unused for the workspace idle expiry
-- are deleted. Isolation: every query filters on project_id.
CREATE TABLE workspace_snapshots (
    project_id   TEXT   NOT NULL,
    workspace_id TEXT   NOT NULL,
    generation   BIGINT NOT NULL,
    bytes        BIGINT NOT NULL,
    data         BYTEA  NOT NULL,
    note         TEXT,
    updated_at   BIGINT NOT NULL,
    used_at      BIGINT NOT NULL,
    PRIMARY KEY (project_id, workspace_id)
);

CREATE INDEX workspace_snapshots_used ON workspace_snapshots (used_at);
