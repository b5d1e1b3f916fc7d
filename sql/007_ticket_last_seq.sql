-- The ticket row carries its latest step's seq, written by record_steps in the transaction that
-- writes the steps. Taking the lease returns it from the row itself: a subquery on steps would
-- read the statement's snapshot, which predates a round committed while the lease statement
-- waited for the ticket's row lock, and a worker would then take its stale cached state as current.

ALTER TABLE supportbot.tickets ADD COLUMN last_seq integer NOT NULL DEFAULT 0;
UPDATE supportbot.tickets t SET last_seq = coalesce((SELECT max(seq) FROM supportbot.steps s WHERE s.ticket_id = t.id), 0);

CREATE OR REPLACE FUNCTION supportbot.record_steps(p_ticket text, p_owner text, p_batch jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM supportbot.assert_lease(p_ticket, p_owner);
    INSERT INTO supportbot.turns (ticket_id, idx, round, role, content, message_id, tokens, created_at)
    SELECT p_ticket, x.idx, x.round, x.role, x.content, x.message_id, x.tokens, x.created_at
    FROM jsonb_to_recordset(p_batch -> 'turns') AS x(idx integer, round integer, role text, content text,
                                                     message_id text, tokens integer, created_at timestamptz);
    INSERT INTO supportbot.tool_calls (ticket_id, idx, round, step, name, args, result, error, duration_ms)
    SELECT p_ticket, x.idx, x.round, x.step, x.name, x.args, x.result, x.error, x.duration_ms
    FROM jsonb_to_recordset(p_batch -> 'tool_calls') AS x(idx integer, round integer, step text, name text,
                                                          args jsonb, result jsonb, error text,
                                                          duration_ms double precision);
    INSERT INTO supportbot.facts (ticket_id, idx, kind, value, key, turn)
    SELECT p_ticket, x.idx, x.kind, x.value, x.key, x.turn
    FROM jsonb_to_recordset(p_batch -> 'facts') AS x(idx integer, kind text, value text, key text, turn integer);
    INSERT INTO supportbot.steps (ticket_id, seq, round, step, next_step, turn_count, tool_call_count, update,
                                  fact_count, created_at)
    SELECT p_ticket, x.seq, x.round, x.step, x.next_step, x.turn_count, x.tool_call_count, x.update,
           x.fact_count, x.created_at
    FROM jsonb_to_recordset(p_batch -> 'steps') AS x(seq integer, round integer, step text, next_step text,
                                                     turn_count integer, tool_call_count integer, update jsonb,
                                                     fact_count integer, created_at timestamptz);
    INSERT INTO supportbot.checkpoints (ticket_id, seq, state)
    SELECT p_ticket, x.seq, x.state FROM jsonb_to_recordset(p_batch -> 'checkpoints') AS x(seq integer, state jsonb);
    -- The agent's turns are appended under the ticket row lock the caller took (lock_turn_count).
    UPDATE supportbot.tickets SET
        turn_count = greatest(turn_count, coalesce(
            (SELECT max((t ->> 'idx')::integer) + 1 FROM jsonb_array_elements(p_batch -> 'turns') AS t), 0)),
        last_seq = greatest(last_seq, coalesce(
            (SELECT max((s ->> 'seq')::integer) FROM jsonb_array_elements(p_batch -> 'steps') AS s), 0)),
        status = coalesce(p_batch ->> 'status', status),
        updated_at = CASE WHEN p_batch ? 'status' OR jsonb_array_length(p_batch -> 'turns') > 0
                          THEN now() ELSE updated_at END
    WHERE id = p_ticket;
    INSERT INTO supportbot.approvals (ticket_id, round, request)
    SELECT p_ticket, x.round, x.request FROM jsonb_to_recordset(p_batch -> 'approvals') AS x(round integer, request jsonb)
    ON CONFLICT (ticket_id, round) DO NOTHING;
END $$;
