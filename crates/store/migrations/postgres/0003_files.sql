-- agentd schema, version 3: conversations and shared files.

-- The first response of a previous_response_id chain; state kept for a conversation (the
-- sandbox workspace) is keyed by it. NULL for rows written before version 3 (the response's
-- own id is then its conversation).
ALTER TABLE responses ADD COLUMN conversation_id TEXT;

-- Files a response shared with the caller (the sandbox's share_file). The bytes live in the
-- row: files are capped in size and read whole. Isolation: every query filters on project_id.
CREATE TABLE files (
    response_id  TEXT   NOT NULL,
    id           TEXT   NOT NULL,
    project_id   TEXT   NOT NULL,
    filename     TEXT   NOT NULL,
    content_type TEXT   NOT NULL,
    bytes        BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    data         BYTEA  NOT NULL,
    PRIMARY KEY (response_id, id)
);

CREATE INDEX files_project ON files (project_id, response_id);
CREATE INDEX files_created ON files (created_at);
