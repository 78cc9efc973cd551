-- agentd schema, version 15: `responses_status` holds the live responses only (queued or
-- in progress), the ones start-up recovery looks for (ports/maintenance.rs, `ORPHANED`, whose
-- `status IN ('queued', 'in_progress')` is this index's condition, so SQLite uses it). A run
-- written once as it ends (a short foreground run, schema 13's engine) no longer adds an entry,
-- and a run written at start removes its entry at the end instead of moving it: one index leaf
-- fewer per response in the writer's transaction and the WAL. The listing's status filter
-- reads `responses_project_created` as before.
--
-- PostgreSQL keeps its full index (schema 11).
DROP INDEX responses_status;
CREATE INDEX responses_status ON responses (status) WHERE status IN ('queued', 'in_progress');
