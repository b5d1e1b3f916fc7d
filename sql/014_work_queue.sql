-- The work queue: which tickets need a worker, since when, and how often their rounds failed.
--
-- A ticket needs work while `work_due` is set: a customer message was stored (the oldest such
-- message's time, so workers serve the longest wait first), or a human decision was recorded and
-- its round not finished. Storing the message or the decision sets it; the record that ends a
-- worker's part of a round (record_steps with "release") or the release that follows a round
-- clears it, unless a message arrived meanwhile. A round whose worker died keeps it set, so
-- another worker finishes that round once the lease expires. A failed round counts an attempt and
-- waits until `work_retry_at` (backoff); after the last attempt the ticket goes to a human, with
-- `work_error` saying why. Workers find due tickets through a partial index that holds only them.
--
-- record_steps() (as 012 left it, storing each turn's author) is redefined to clear `work_due` in
-- the update it already makes, and to notify `supportbot_done` when a worker's part of a round
-- ends (waiters on the answer wake up).
--
-- `workers` holds one heartbeat row per running worker process, with its counters, for `stats`.
--
-- `effects` is keyed by (ticket_id, key) instead of key alone: every per-ticket table carries its
-- ticket in the primary key, so a distributed PostgreSQL can place all of a ticket's rows together
-- (docs/scaling.md). The key already starts with the ticket id, so no row changes.

ALTER TABLE supportbot.tickets
    ADD COLUMN work_due timestamptz,
    ADD COLUMN work_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN work_retry_at timestamptz,
    ADD COLUMN work_error text;

CREATE INDEX tickets_work_due ON supportbot.tickets (work_due, id) WHERE work_due IS NOT NULL;
CREATE INDEX tickets_handed_off ON supportbot.tickets (updated_at) WHERE work_due IS NULL AND work_error IS NOT NULL;

-- Tickets stored before this migration that wait for work: a round left mid-way, or a customer
-- message after the latest round's start that no round took up.
UPDATE supportbot.tickets t SET work_due = t.updated_at
WHERE t.status = 'in_progress'
   OR (t.status NOT IN ('waiting_approval', 'with_human') AND EXISTS (
        SELECT 1 FROM supportbot.turns u WHERE u.ticket_id = t.id AND u.role = 'customer'
           AND u.idx >= coalesce((SELECT (s.update ->> 'handled_upto')::integer FROM supportbot.steps s
                                  WHERE s.ticket_id = t.id AND s.step = 'start_round'
                                  ORDER BY s.seq DESC LIMIT 1), 0)));

ALTER TABLE supportbot.effects DROP CONSTRAINT effects_pkey;
ALTER TABLE supportbot.effects ADD CONSTRAINT effects_pkey PRIMARY KEY (ticket_id, key);

CREATE TABLE supportbot.workers (
    id          text PRIMARY KEY,
    host        text NOT NULL,
    pid         integer NOT NULL,
    threads     integer NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    heartbeat   timestamptz NOT NULL DEFAULT now(),
    rounds      bigint NOT NULL DEFAULT 0,
    failures    bigint NOT NULL DEFAULT 0,
    running     integer NOT NULL DEFAULT 0
);

DROP FUNCTION supportbot.record_steps(text, text, jsonb);

-- The batch may carry "known": how many turns the worker's state holds when it releases. A ticket
-- whose turn count is past it got a message meanwhile and stays due.
CREATE FUNCTION supportbot.record_steps(p_ticket text, p_owner text, p_batch jsonb) RETURNS integer
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
    INSERT INTO supportbot.approvals (ticket_id, round, request)
    SELECT p_ticket, x.round, x.request FROM jsonb_to_recordset(p_batch -> 'approvals') AS x(round integer, request jsonb)
    ON CONFLICT (ticket_id, round) DO NOTHING;
    RETURN v_turn_count;
END $$;
