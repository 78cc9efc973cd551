-- agentd schema, version 6: several replicas on one database. (Version 5 belongs to another
-- change.)

-- A cancel received by a replica other than the one executing the run: the holder of the
-- job row (`lease_owner`) polls for this mark and stops the run. 0 or 1.
ALTER TABLE jobs ADD COLUMN cancel_requested BIGINT NOT NULL DEFAULT 0;

-- A replica's own rows: its cancel poll, and the renewal of its leases.
CREATE INDEX jobs_owner ON jobs (lease_owner);
