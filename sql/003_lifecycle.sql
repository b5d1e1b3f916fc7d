-- Data lifecycle (supportbot/lifecycle.py). prune() removes step records and checkpoints that a
-- closed ticket's current state no longer needs; this log says what went, so `history` can show
-- that earlier steps existed and `state_at` of one can say it was pruned rather than never there.
-- Insert-only: one row per ticket per prune that removed something.

CREATE TABLE supportbot.prunes (
    ticket_id   text NOT NULL REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    kept_from   integer NOT NULL,  -- step records before this seq are gone
    steps       integer NOT NULL,  -- step records deleted by this prune
    checkpoints integer NOT NULL,  -- checkpoints deleted by this prune
    bytes       bigint NOT NULL,   -- sum of pg_column_size of the deleted rows
    pruned_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (ticket_id, kept_from)
);
