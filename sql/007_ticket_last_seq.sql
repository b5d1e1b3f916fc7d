-- The ticket row carries its latest step's seq, kept by a trigger in the transaction that inserts
-- the steps (record_steps, fork). Taking the lease returns it from the row itself: a subquery on
-- steps would read the statement's snapshot, which predates a round committed while the lease
-- statement waited for the ticket's row lock, and a worker would then take its stale cached
-- state as current.

ALTER TABLE supportbot.tickets ADD COLUMN last_seq integer NOT NULL DEFAULT 0;
UPDATE supportbot.tickets t SET last_seq = coalesce((SELECT max(seq) FROM supportbot.steps s WHERE s.ticket_id = t.id), 0);

CREATE FUNCTION supportbot.note_last_seq() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE supportbot.tickets t SET last_seq = greatest(t.last_seq, added.seq)
    FROM (SELECT ticket_id, max(seq) AS seq FROM new_steps GROUP BY ticket_id) AS added
    WHERE t.id = added.ticket_id;
    RETURN NULL;
END $$;

CREATE TRIGGER steps_last_seq AFTER INSERT ON supportbot.steps
    REFERENCING NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION supportbot.note_last_seq();
