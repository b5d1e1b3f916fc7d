-- record_steps(ticket, owner, batch): a batch of step records and everything they carry (new turns,
-- tool calls, facts, checkpoints, effects, an approval request, the ticket's status), in one
-- statement, fenced by the lease: a worker that lost the ticket writes nothing (SQLSTATE SBL01).
-- With "release" it also frees the lease, takes the ticket out of the work queue once everything
-- it had was answered ("known": the turns the worker saw) and wakes whoever waits (NOTIFY).
-- Returns the ticket's turn count. jsonb_to_recordset ignores keys it does not list, so every field
-- a record gains must be added here too (tests/test_schema.py checks it).
--
-- A repeatable file: the migrator runs it again whenever its text changes (store/_migrate.py).
-- CREATE OR REPLACE keeps the signature; changing the arguments or the result type needs a
-- numbered migration that drops the old function first.

CREATE OR REPLACE FUNCTION supportbot.record_steps(p_ticket text, p_owner text, p_batch jsonb) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_release boolean := coalesce((p_batch ->> 'release')::boolean, false);
    v_known integer := (p_batch ->> 'known')::integer;
    v_changed boolean := p_batch ? 'status' OR jsonb_array_length(p_batch -> 'turns') > 0;
    v_new_turns integer := coalesce(
        (SELECT max((t ->> 'idx')::integer) + 1 FROM jsonb_array_elements(p_batch -> 'turns') AS t), 0);
    v_turn_count integer;
BEGIN
    UPDATE supportbot.tickets SET
        turn_count = greatest(turn_count, v_new_turns),
        last_seq = greatest(last_seq, coalesce(
            (SELECT max((s ->> 'seq')::integer) FROM jsonb_array_elements(p_batch -> 'steps') AS s), 0)),
        status = coalesce(p_batch ->> 'status', status),
        updated_at = CASE WHEN v_changed THEN now() ELSE updated_at END,
        lease_owner = CASE WHEN v_release THEN NULL ELSE lease_owner END,
        lease_expires = CASE WHEN v_release THEN NULL ELSE lease_expires END,
        work_due = CASE WHEN v_release AND v_known IS NOT NULL
                         AND (coalesce(p_batch ->> 'status', status) = 'waiting_approval'
                              OR greatest(turn_count, v_new_turns) <= v_known)
                        THEN NULL ELSE work_due END,
        work_attempts = CASE WHEN v_release AND v_known IS NOT NULL THEN 0 ELSE work_attempts END,
        work_retry_at = CASE WHEN v_release AND v_known IS NOT NULL THEN NULL ELSE work_retry_at END,
        work_error = CASE WHEN v_release AND v_known IS NOT NULL THEN NULL ELSE work_error END
    WHERE id = p_ticket AND lease_owner = p_owner
    RETURNING turn_count INTO v_turn_count;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ticket % is no longer leased to %', p_ticket, p_owner USING ERRCODE = 'SBL01';
    END IF;
    IF v_release THEN
        PERFORM pg_notify('supportbot_done', p_ticket);
    END IF;
    INSERT INTO supportbot.turns (ticket_id, idx, round, role, content, message_id, tokens, created_at, author)
    SELECT p_ticket, x.idx, x.round, x.role, x.content, x.message_id, x.tokens, x.created_at, x.author
    FROM jsonb_to_recordset(p_batch -> 'turns') AS x(idx integer, round integer, role text, content text,
                                                     message_id text, tokens integer, created_at timestamptz,
                                                     author text);
    INSERT INTO supportbot.tool_calls (ticket_id, idx, round, step, name, args, result, error, duration_ms)
    SELECT p_ticket, x.idx, x.round, x.step, x.name, x.args, x.result, x.error, x.duration_ms
    FROM jsonb_to_recordset(p_batch -> 'tool_calls') AS x(idx integer, round integer, step text, name text,
                                                          args jsonb, result jsonb, error text,
                                                          duration_ms double precision);
    INSERT INTO supportbot.facts (ticket_id, idx, kind, value, key, turn, subject, role, supersedes)
    SELECT p_ticket, x.idx, x.kind, x.value, x.key, x.turn, coalesce(x.subject, ''), coalesce(x.role, ''), x.supersedes
    FROM jsonb_to_recordset(p_batch -> 'facts') AS x(idx integer, kind text, value text, key text, turn integer,
                                                     subject text, role text, supersedes integer);
    INSERT INTO supportbot.steps (ticket_id, seq, round, step, next_step, turn_count, tool_call_count, update,
                                  fact_count, created_at)
    SELECT p_ticket, x.seq, x.round, x.step, x.next_step, x.turn_count, x.tool_call_count, x.update,
           x.fact_count, x.created_at
    FROM jsonb_to_recordset(p_batch -> 'steps') AS x(seq integer, round integer, step text, next_step text,
                                                     turn_count integer, tool_call_count integer, update jsonb,
                                                     fact_count integer, created_at timestamptz);
    INSERT INTO supportbot.checkpoints (ticket_id, seq, state)
    SELECT p_ticket, x.seq, x.state FROM jsonb_to_recordset(p_batch -> 'checkpoints') AS x(seq integer, state jsonb);
    INSERT INTO supportbot.effects (key, ticket_id, round, step, kind, result)
    SELECT x.key, p_ticket, x.round, x.step, x.kind, x.result
    FROM jsonb_to_recordset(coalesce(p_batch -> 'effects', '[]')) AS x(key text, round integer, step text, kind text,
                                                                    result jsonb);
    INSERT INTO supportbot.approvals (ticket_id, round, request)
    SELECT p_ticket, x.round, x.request FROM jsonb_to_recordset(p_batch -> 'approvals') AS x(round integer, request jsonb)
    ON CONFLICT (ticket_id, round) DO NOTHING;
    RETURN v_turn_count;
END $$;
