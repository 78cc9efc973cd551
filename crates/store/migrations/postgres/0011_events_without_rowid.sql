-- agentd schema, version 11: on SQLite, `events` becomes a WITHOUT ROWID table (one B-tree
-- instead of the rows plus an index on the key). PostgreSQL tables have no rowid B-tree (a heap
-- plus the primary key's index), so there is nothing to change; the version keeps both folders
-- numbered alike.
SELECT 1;
