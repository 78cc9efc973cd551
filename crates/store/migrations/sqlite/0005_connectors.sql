-- agentd schema, version 5: key roles, saved MCP connectors with sealed credentials, their
-- audit events, and OAuth grants.
--
-- Portable to PostgreSQL (TEXT and BIGINT columns, JSON as TEXT, Unix seconds, 0/1 booleans).
-- Sealed values are `v1:<key id>:<base64url>` strings from the secrets crate; the associated
-- data of each binds it to `connector|<project id>|<connector id>|<field>`, so a value copied
-- to another row or field does not open. No column holds a credential in clear text.

-- A key's role: 'admin' (uses and manages its project), 'member' (uses it) or 'owner' (a
-- server-owner key: acts on every project). Existing keys stay admins, as they could do
-- everything before. `name` is the operator's label; `prefix` the first characters of the key
-- (shown in listings to tell keys apart, never enough to use one).
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE api_keys ADD COLUMN name TEXT;
ALTER TABLE api_keys ADD COLUMN prefix TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;

-- A saved MCP server of a project. `auth_kind` is 'none', 'bearer', 'headers' or 'oauth';
-- `authorization_sealed` the bearer token, `headers_json` a JSON object of header name ->
-- sealed value. `allowed_tools_json`, `require_approval_json`, `sandbox_env_json` are the
-- wire values as JSON (NULL: not set). `status` is 'untested', 'ok' or 'error' after the last
-- test (`last_checked_at`, `last_error`).
CREATE TABLE connectors (
    project_id            TEXT   NOT NULL,
    id                    TEXT   NOT NULL,
    server_label          TEXT   NOT NULL,
    server_url            TEXT   NOT NULL,
    transport             TEXT   NOT NULL,
    description           TEXT,
    auth_kind             TEXT   NOT NULL,
    authorization_sealed  TEXT,
    headers_json          TEXT   NOT NULL,
    allowed_tools_json    TEXT,
    require_approval_json TEXT,
    defer_loading         BIGINT NOT NULL,
    timeout_ms            BIGINT,
    enabled               BIGINT NOT NULL,
    sandbox_env_json      TEXT   NOT NULL,
    secret_version        BIGINT NOT NULL,
    status                TEXT   NOT NULL,
    last_checked_at       BIGINT,
    last_error            TEXT,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL,
    PRIMARY KEY (project_id, id)
);

-- What was done to a connector, by which key, when. `detail_json` names fields, never values.
CREATE TABLE connector_events (
    id           TEXT   PRIMARY KEY,
    project_id   TEXT   NOT NULL,
    connector_id TEXT   NOT NULL,
    kind         TEXT   NOT NULL,
    key_id       TEXT,
    detail_json  TEXT   NOT NULL,
    created_at   BIGINT NOT NULL
);

CREATE INDEX connector_events_connector ON connector_events (project_id, connector_id, created_at);

-- The OAuth grant of an 'oauth' connector: where its tokens come from (plain) and the client
-- secret and refresh token (sealed, fields 'oauth.client_secret' and 'oauth.refresh_token').
CREATE TABLE oauth_grants (
    project_id            TEXT   NOT NULL,
    connector_id          TEXT   NOT NULL,
    issuer                TEXT   NOT NULL,
    token_endpoint        TEXT   NOT NULL,
    resource              TEXT   NOT NULL,
    client_id             TEXT   NOT NULL,
    auth_method           TEXT   NOT NULL,
    kind                  TEXT   NOT NULL,
    redirect_uri          TEXT   NOT NULL,
    scope                 TEXT,
    client_secret_sealed  TEXT,
    refresh_token_sealed  TEXT,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL,
    PRIMARY KEY (project_id, connector_id)
);
