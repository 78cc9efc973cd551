-- agentd schema, version 4: stored items (for `item_reference` and `input_items`) and OpenAI
-- conversations.

-- The items of a response in their wire form: the request's input items (`kind` 'input', ids
-- assigned where the caller gave none) and the response's output items ('output'). An id may
-- stand in several responses (a replayed item keeps its id); a lookup takes the latest.
-- `seq` orders rows written in the same second (SQLite uses its rowid for this); a replaced
-- row takes a new number, as SQLite's INSERT OR REPLACE gives it a new rowid.
CREATE SEQUENCE response_items_order;

CREATE TABLE response_items (
    response_id TEXT   NOT NULL,
    kind        TEXT   NOT NULL,
    position    BIGINT NOT NULL,
    project_id  TEXT   NOT NULL,
    item_id     TEXT   NOT NULL,
    item_json   TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    seq         BIGINT NOT NULL DEFAULT nextval('response_items_order'),
    PRIMARY KEY (response_id, kind, position)
);

CREATE INDEX response_items_item ON response_items (project_id, item_id, created_at, seq);

-- An OpenAI conversation (`conv_…`) of a project.
CREATE TABLE conversations (
    id            TEXT   PRIMARY KEY,
    project_id    TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    metadata_json TEXT   NOT NULL
);

CREATE INDEX conversations_project ON conversations (project_id, created_at);

-- A conversation's items, in order.
CREATE TABLE conversation_items (
    conversation_id TEXT   NOT NULL,
    position        BIGINT NOT NULL,
    item_id         TEXT   NOT NULL,
    item_json       TEXT   NOT NULL,
    PRIMARY KEY (conversation_id, position)
);

CREATE INDEX conversation_items_item ON conversation_items (conversation_id, item_id);
