-- A batch of step records updates the ticket row once. Before, one call read the row for the
-- lease fence, updated it for the turn count and status, updated it again from the last_seq
-- trigger, and the round's last record freed the lease with a third update: three row versions
-- and a trigger's transition table per round, the largest server-side cost of a round.
--
-- Now the first statement is the fence and the only update: turn count, status, last_seq and,
-- when the batch ends this worker's part of the round ("release": true), the lease. It returns
-- the ticket's turn count, which the caller reads after the commit when it released the lease.
-- The steps trigger goes; fork sets last_seq on the ticket it creates.

DROP TRIGGER steps_last_seq ON supportbot.steps;
DROP FUNCTION supportbot.note_last_seq();
DROP FUNCTION supportbot.record_steps(text, text, jsonb);

CREATE FUNCTION supportbot.record_steps(p_ticket text, p_owner text, p_batch jsonb) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_release boolean := coalesce((p_batch ->> 'release')::boolean, false);
    v_changed boolean := p_batch ? 'status' OR jsonb_array_length(p_batch -> 'turns') > 0;
    v_turn_count integer;
BEGIN
    UPDATE supportbot.tickets SET
        turn_count = greatest(turn_count, coalesce(
            (SELECT max((t ->> 'idx')::integer) + 1 FROM jsonb_array_elements(p_batch -> 'turns') AS t), 0)),
        last_seq = greatest(last_seq, coalesce(
            (SELECT max((s ->> 'seq')::integer) FROM jsonb_array_elements(p_batch -> 'steps') AS s), 0)),
        status = coalesce(p_batch ->> 'status', status),
        updated_at = CASE WHEN v_changed THEN now() ELSE updated_at END,
        lease_owner = CASE WHEN v_release THEN NULL ELSE lease_owner END,
        lease_expires = CASE WHEN v_release THEN NULL ELSE lease_expires END
    WHERE id = p_ticket AND lease_owner = p_owner
    RETURNING turn_count INTO v_turn_count;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ticket % is no longer leased to %', p_ticket, p_owner USING ERRCODE = 'SBL01';
    END IF;
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
    INSERT INTO supportbot.approvals (ticket_id, round, request)
    SELECT p_ticket, x.round, x.request FROM jsonb_to_recordset(p_batch -> 'approvals') AS x(round integer, request jsonb)
    ON CONFLICT (ticket_id, round) DO NOTHING;
    RETURN v_turn_count;
END $$;
