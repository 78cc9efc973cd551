-- agentd schema, version 19 (PostgreSQL only): a response's transcript of 16 KiB or more
-- stored packed (crates/store/src/transcript_pack.rs, format 4) and, once the response its
-- conversation went on from is stored for good, linked to that response's transcript: only
-- what it adds (transcript_link.rs, format 5; `transcript_base`, added by version 18, names
-- the base). SQLite stores them so since its versions 17 and 18, in `transcript_json` itself;
-- PostgreSQL kept every transcript whole as TEXT, so that a long conversation's store grew
-- with the square of its turns (TOAST compresses each value, but each alone).
--
-- The packed value goes to a column of its own, `transcript_packed`, and `transcript_json`
-- then holds '' (a transcript is never empty JSON); a row whose `transcript_json` is not ''
-- holds its transcript there, as TEXT (rows written before, transcripts under 16 KiB), and
-- `transcript_packed` is not read. A new nullable column without a default changes no row (no
-- table rewrite, no long lock), and a replica of an older version still running during a
-- rolling upgrade goes on writing TEXT transcripts, which the new ones read (even over a
-- packed one, when it finishes a run a new replica started); what it cannot read is a packed
-- transcript a new replica wrote (a corrupt-store error for that continuation or lookup)
-- until it is replaced.
--
-- A foreign key keeps a linked transcript's base stored: a deletion rewrites the transcripts
-- linked to a response before it deletes it (crates/store/src/ports/linked_transcripts.rs),
-- and one that does not (a replica of an older version, a DELETE by hand) fails instead of
-- leaving them unreadable. NOT VALID: the rows before this version link to nothing, so
-- nothing is scanned now; every row written from now on is checked.
--
-- STORAGE EXTERNAL: out of line without TOAST's own compression, which a value packed with
-- LZ4 already would only try and give up on.
ALTER TABLE responses ADD COLUMN transcript_packed BYTEA;
ALTER TABLE responses ALTER COLUMN transcript_packed SET STORAGE EXTERNAL;
ALTER TABLE responses ADD CONSTRAINT responses_transcript_base_fkey
    FOREIGN KEY (transcript_base) REFERENCES responses (id) NOT VALID;
