-- agentd schema, version 18: the `transcript_base` column of SQLite's version 18, so that both
-- back ends run the same statements. PostgreSQL stores every transcript whole, as TEXT (TOAST
-- compresses it), so the column stays NULL and the index empty.
ALTER TABLE responses ADD COLUMN transcript_base TEXT;
CREATE INDEX responses_transcript_base ON responses (transcript_base)
    WHERE transcript_base IS NOT NULL;
