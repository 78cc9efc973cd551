-- agentd schema, version 11: the stream event log in chunks, one row per flushed batch
-- (`append_events`, and the rest of the log in `end_run`) instead of one row per wire event.
-- A chunk holds the contiguous sequence numbers first_sequence..=last_sequence of one run;
-- `data` is their events' JSON lines joined by '\n' (an event whose line holds a '\n' is a
-- chunk of its own, stored as it is). last_sequence is part of the key: a flush retried after
-- a failure that had in fact committed starts at the same number and may reach further; both
-- rows are kept, and readers take each sequence number once (ports/events.rs). No foreign key
-- to responses, for the same reason as `events`.
--
-- `events` stays: rows written before this version are read (and deleted) with the chunks, and
-- a replica of an older version still writing there during a rolling upgrade loses nothing.
-- This version writes only chunks.
CREATE TABLE event_chunks (
    response_id    TEXT   NOT NULL,
    first_sequence BIGINT NOT NULL,
    last_sequence  BIGINT NOT NULL,
    data           TEXT   NOT NULL,
    PRIMARY KEY (response_id, first_sequence, last_sequence)
);
