-- agentd schema, version 11: `events` as a WITHOUT ROWID table. A rowid table with a composite
-- primary key keeps two B-trees (the rows by rowid, and an index on the key), so every event
-- insert wrote both; clustered on (response_id, sequence_number) it writes one, and a resume's
-- range read walks it in order. The rows are copied over unchanged.
ALTER TABLE events RENAME TO events_v10;

CREATE TABLE events (
    response_id     TEXT   NOT NULL,
    sequence_number BIGINT NOT NULL,
    data            TEXT   NOT NULL,
    PRIMARY KEY (response_id, sequence_number)
) WITHOUT ROWID;

INSERT INTO events (response_id, sequence_number, data)
SELECT response_id, sequence_number, data FROM events_v10;

DROP TABLE events_v10;
