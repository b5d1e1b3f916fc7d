-- Pinned facts become an append-only log like turns: each fact is stored once, and a step row
-- only counts them. Before this, every step that found a new fact stored the whole ledger again,
-- and every checkpoint carried it, so bytes per round grew with the ticket.

CREATE TABLE supportbot.facts (
    ticket_id text NOT NULL REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    idx       integer NOT NULL,
    kind      text NOT NULL,
    value     text NOT NULL,
    key       text NOT NULL,
    turn      integer NOT NULL,
    PRIMARY KEY (ticket_id, idx)
);

ALTER TABLE supportbot.steps ADD COLUMN fact_count integer NOT NULL DEFAULT 0;

-- Existing tickets: the ledger only ever grew, so each step's count is the length of the last
-- ledger written at or before it, and the last ledger written holds them all.
UPDATE supportbot.steps s SET fact_count = coalesce((
    SELECT jsonb_array_length(p.update -> 'facts') FROM supportbot.steps p
    WHERE p.ticket_id = s.ticket_id AND p.seq <= s.seq AND p.update ? 'facts'
    ORDER BY p.seq DESC LIMIT 1), 0);

INSERT INTO supportbot.facts (ticket_id, idx, kind, value, key, turn)
SELECT last.ticket_id, e.ord - 1, e.f ->> 'kind', e.f ->> 'value', e.f ->> 'key', (e.f ->> 'turn')::integer
FROM (SELECT DISTINCT ON (ticket_id) ticket_id, update -> 'facts' AS facts FROM supportbot.steps
      WHERE update ? 'facts' ORDER BY ticket_id, seq DESC) AS last,
     jsonb_array_elements(last.facts) WITH ORDINALITY AS e(f, ord);

UPDATE supportbot.steps SET update = update - 'facts' WHERE update ? 'facts';
UPDATE supportbot.checkpoints SET state = state - 'facts' WHERE state ? 'facts';
