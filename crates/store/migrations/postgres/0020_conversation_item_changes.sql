-- agentd schema, version 20 (as on SQLite): a conversation counts the changes to its items
-- other than appends. A run with `conversation` reads the conversation's items, and the store
-- keeps what it parsed them to for the next run (crates/store/src/conversation_memo.rs). With
-- the count it need read only the items appended since: every rewrite or removal of an item,
-- and every insertion before an item already stored (an item put back in a gap), by whatever
-- writes it (another replica, an older agentd still running during a rolling upgrade, SQL by
-- hand), adds one in the same transaction; an append (an insertion after the last item) does
-- not. Insertions are looked at BEFORE each row, which sees the rows a multi-row append
-- inserted before it (in the order of its VALUES), so that each of them is the last when it
-- goes in; AFTER ROW triggers would run at the statement's end and see them all. A column
-- with a constant default rewrites no row; the triggers add an UPDATE of the conversation's
-- row per statement that rewrites or removes its items and per item put back, and a look at
-- the conversation's last position per item inserted. (A removal locks the conversation's row after the item's, where an
-- append locks the conversation's first: an append inserts new rows and waits for no item's
-- lock, so the two orders make no cycle.) An agentd of an older version refuses a store
-- migrated to this one.
ALTER TABLE conversations ADD COLUMN item_changes BIGINT NOT NULL DEFAULT 0;

-- Rewrites and removals are counted once per statement and conversation (transition tables):
-- a project's deletion takes all its conversations' items in one statement, which per-row
-- triggers would turn into an UPDATE of a conversation's row per item.
CREATE FUNCTION conversation_items_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET item_changes = item_changes + 1
     WHERE id IN (SELECT conversation_id FROM old_items
                  UNION SELECT conversation_id FROM new_items);
    RETURN NULL;
END
$$;

CREATE TRIGGER conversation_items_updated AFTER UPDATE ON conversation_items
    REFERENCING OLD TABLE AS old_items NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION conversation_items_updated();

CREATE FUNCTION conversation_items_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET item_changes = item_changes + 1
     WHERE id IN (SELECT conversation_id FROM old_items);
    RETURN NULL;
END
$$;

CREATE TRIGGER conversation_items_deleted AFTER DELETE ON conversation_items
    REFERENCING OLD TABLE AS old_items
    FOR EACH STATEMENT EXECUTE FUNCTION conversation_items_deleted();

CREATE FUNCTION conversation_item_put_back() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.position < (SELECT MAX(position) FROM conversation_items
                        WHERE conversation_id = NEW.conversation_id) THEN
        UPDATE conversations SET item_changes = item_changes + 1
         WHERE id = NEW.conversation_id;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER conversation_items_put_back BEFORE INSERT ON conversation_items
    FOR EACH ROW EXECUTE FUNCTION conversation_item_put_back();
