-- Human takeover and the audit log.
--
-- A person can take a ticket over from the bot, answer the customer and hand it back. Their
-- replies are agent turns with an author (NULL: the bot), so everything that reads agent turns
-- (the facts ledger's promises, compression, the profile) reads theirs too. The ticket row names
-- the person who owns it (human_agent, NULL while the bot does): rounds are not started for a
-- ticket a person owns, by send(), resume() or any worker, and the lease statements below check it.
--
-- supportbot.audit records who did what to which ticket, when and from where: decisions on
-- refunds, takeovers, human replies, hand-backs, forks and forgetting a customer. It is
-- append-only (a trigger refuses UPDATE, DELETE and TRUNCATE) with one exception: forgetting a
-- customer erases their address, any free text (note) and the business system's ids of their
-- invoice and refund from the rows about them, marks them redacted, and changes nothing else. It
-- has no foreign key to tickets, so it outlives the tickets it speaks of.

ALTER TABLE supportbot.turns ADD COLUMN author text;
ALTER TABLE supportbot.turns ADD CONSTRAINT turns_author_check CHECK (author IS NULL OR role = 'agent');
ALTER TABLE supportbot.tickets ADD COLUMN human_agent text;

CREATE TABLE supportbot.audit (
    id bigint GENERATED ALWAYS AS IDENTITY,
    at timestamp with time zone NOT NULL DEFAULT now(),
    actor text NOT NULL,
    action text NOT NULL,
    ticket_id text,
    customer_email text,
    source text NOT NULL,
    detail jsonb NOT NULL DEFAULT '{}'::jsonb,
    CONSTRAINT audit_pkey PRIMARY KEY (id),
    CONSTRAINT audit_action_check CHECK (action IN (
        'approve', 'reject', 'take_over', 'human_reply', 'hand_back', 'fork', 'forget_customer'))
);
CREATE INDEX audit_ticket ON supportbot.audit (ticket_id, id);
CREATE INDEX audit_at ON supportbot.audit (at);
CREATE INDEX audit_customer ON supportbot.audit (lower(customer_email)) WHERE customer_email IS NOT NULL;

CREATE FUNCTION supportbot.audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        -- The one change allowed: forget_customer erasing the customer's address, notes and ids.
        IF NEW.id = OLD.id AND NEW.at = OLD.at AND NEW.actor = OLD.actor AND NEW.action = OLD.action
           AND NEW.ticket_id IS NOT DISTINCT FROM OLD.ticket_id AND NEW.source = OLD.source
           AND NEW.customer_email IS NULL
           AND NEW.detail = (OLD.detail - '{note,invoice,refund}'::text[]) || '{"redacted": true}'::jsonb THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'supportbot.audit is append-only: % refused', TG_OP USING ERRCODE = 'SBA01';
END $$;

CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON supportbot.audit
    FOR EACH ROW EXECUTE FUNCTION supportbot.audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON supportbot.audit
    FOR EACH STATEMENT EXECUTE FUNCTION supportbot.audit_append_only();

-- record_steps() as in 008, storing each turn's author too.
CREATE OR REPLACE FUNCTION supportbot.record_steps(p_ticket text, p_owner text, p_batch jsonb)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
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
END $function$;
