-- agentd schema, version 18: a long conversation's transcript may be stored linked to an
-- earlier response's (format byte 5; crates/store/src/transcript_link.rs): only the pieces of
-- its own, the rest read from the response named by the new `transcript_base` column, so a
-- conversation's store grows with its length, not with its square. A response others link to
-- is deleted by first rewriting their transcripts on its own base; the index finds them (only
-- linked rows are in it: a short run's row does not touch it). An agentd of version 17, which
-- would not read a linked transcript, refuses to open a store migrated to this one.
ALTER TABLE responses ADD COLUMN transcript_base TEXT;
CREATE INDEX responses_transcript_base ON responses (transcript_base)
    WHERE transcript_base IS NOT NULL;
