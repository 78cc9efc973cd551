-- agentd schema, version 20 (19 is PostgreSQL's alone): a conversation counts the changes
-- to its items other than appends. A run with `conversation` reads the conversation's items,
-- and the store keeps what it parsed them to for the next run
-- (crates/store/src/conversation_memo.rs). With the count it need read only the items
-- appended since: every rewrite or removal of an item, and every insertion before an item
-- already stored (an item put back in a gap), by whatever writes it (another process, SQL by
-- hand), adds one in the same transaction; an append (an insertion after the last item: every
-- row of a multi-row append, which SQLite inserts in order, firing each row's trigger before
-- the next row) does not. The column's default counts the rows already stored as unchanged;
-- the triggers add an UPDATE of the conversation's row per item rewritten, removed or put
-- back, and a look at the conversation's last position per item inserted. An agentd of an
-- older version refuses a store migrated to this one.
ALTER TABLE conversations ADD COLUMN item_changes INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER conversation_items_updated AFTER UPDATE ON conversation_items
BEGIN
    UPDATE conversations SET item_changes = item_changes + 1
     WHERE id IN (OLD.conversation_id, NEW.conversation_id);
END;

CREATE TRIGGER conversation_items_deleted AFTER DELETE ON conversation_items
BEGIN
    UPDATE conversations SET item_changes = item_changes + 1 WHERE id = OLD.conversation_id;
END;

CREATE TRIGGER conversation_items_put_back AFTER INSERT ON conversation_items
WHEN NEW.position < (SELECT MAX(position) FROM conversation_items
                      WHERE conversation_id = NEW.conversation_id)
BEGIN
    UPDATE conversations SET item_changes = item_changes + 1 WHERE id = NEW.conversation_id;
END;
