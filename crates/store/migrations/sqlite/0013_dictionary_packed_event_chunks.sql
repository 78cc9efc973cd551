-- agentd schema, version 13: a packed `event_chunks.data` (a BLOB, version 12) may also be an
-- LZ4 block compressed against a fixed dictionary of event lines (format byte 2;
-- crates/store/src/event_pack.rs), which makes a run's chunk small enough for two to share a
-- page. Blocks of version 12 (format byte 1) and TEXT chunks still read; no table changes. As
-- for version 12, the version is what counts: an agentd of version 12, which would take such a
-- chunk for a corrupt one, refuses to open a store migrated to this one.
--
-- PostgreSQL stays at version 11: its chunks stay TEXT, which TOAST compresses.
SELECT 1;
