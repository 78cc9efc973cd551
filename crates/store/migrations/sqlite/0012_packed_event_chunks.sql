-- agentd schema, version 12: the `data` of an `event_chunks` row may be a BLOB, the chunk's
-- lines compressed (a format byte, their length, an LZ4 block; crates/store/src/event_pack.rs),
-- when that makes them smaller; a TEXT `data` is the lines as they are, as before. SQLite keeps
-- each value's own storage class (a BLOB in a TEXT column stays a BLOB), so the table and the
-- rows written before stay as they are: nothing to change here. The version is what counts: an
-- agentd of an older version, which would read a packed chunk as text, refuses to open a store
-- migrated to this one (its migrator does not know version 12).
--
-- PostgreSQL stays at version 11 for this: its chunks stay TEXT, which TOAST compresses.
SELECT 1;
