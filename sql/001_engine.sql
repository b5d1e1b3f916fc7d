-- The engine's own tables. Turns and tool calls are stored once; step records hold only what a
-- step changed; checkpoints hold a whole state without turns once per round.

CREATE SEQUENCE supportbot.ticket_numbers;

CREATE TABLE supportbot.tickets (
    id             text PRIMARY KEY,
    customer_email text NOT NULL,
    subject        text NOT NULL,
    body           text NOT NULL,
    status         text NOT NULL DEFAULT 'open',
    turn_count     integer NOT NULL DEFAULT 0,
    lease_owner    text,
    lease_expires  timestamptz,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tickets_customer ON supportbot.tickets (customer_email);
CREATE INDEX tickets_status ON supportbot.tickets (status);

CREATE TABLE supportbot.turns (
    ticket_id  text NOT NULL REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    idx        integer NOT NULL,
    round      integer NOT NULL,
    role       text NOT NULL CHECK (role IN ('customer', 'agent')),
    content    text NOT NULL,
    message_id text,
    tokens     integer,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (ticket_id, idx)
);
CREATE UNIQUE INDEX turns_message_id ON supportbot.turns (ticket_id, message_id) WHERE message_id IS NOT NULL;

CREATE TABLE supportbot.tool_calls (
    ticket_id   text NOT NULL REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    idx         integer NOT NULL,
    round       integer NOT NULL,
    step        text NOT NULL,
    name        text NOT NULL,
    args        jsonb NOT NULL,
    result      jsonb,
    error       text,
    duration_ms double precision NOT NULL,
    PRIMARY KEY (ticket_id, idx)
);

-- One row per executed step: the step's own update (no turns, no tool calls: those are counted).
CREATE TABLE supportbot.steps (
    ticket_id       text NOT NULL REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    seq             integer NOT NULL,
    round           integer NOT NULL,
    step            text NOT NULL,
    next_step       text,
    turn_count      integer NOT NULL,
    tool_call_count integer NOT NULL,
    update          jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (ticket_id, seq)
);

-- A whole state without turns and tool calls, as it stood after step `seq`.
CREATE TABLE supportbot.checkpoints (
    ticket_id text NOT NULL,
    seq       integer NOT NULL,
    state     jsonb NOT NULL,
    PRIMARY KEY (ticket_id, seq),
    FOREIGN KEY (ticket_id, seq) REFERENCES supportbot.steps (ticket_id, seq) ON DELETE CASCADE
);

CREATE TABLE supportbot.approvals (
    ticket_id    text NOT NULL REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    round        integer NOT NULL,
    request      jsonb NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now(),
    approved     boolean,
    approver     text,
    note         text,
    decided_at   timestamptz,
    PRIMARY KEY (ticket_id, round)
);
CREATE INDEX approvals_pending ON supportbot.approvals (requested_at) WHERE decided_at IS NULL;

-- Side effects on the business system, keyed by ticket, round and step, so a re-run after a
-- crash finds the first result instead of acting twice.
CREATE TABLE supportbot.effects (
    key        text PRIMARY KEY,
    ticket_id  text NOT NULL REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    round      integer NOT NULL,
    step       text NOT NULL,
    kind       text NOT NULL,
    result     jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX effects_ticket ON supportbot.effects (ticket_id);

CREATE TABLE supportbot.customer_profiles (
    customer_id text PRIMARY KEY,
    fingerprint text NOT NULL,
    profile     jsonb NOT NULL,
    text        text NOT NULL,
    built_at    timestamptz NOT NULL DEFAULT now()
);

-- Raised inside a step's transaction when the worker no longer holds the ticket, so a worker
-- whose lease ran out can never write a step over the one that took over.
CREATE FUNCTION supportbot.assert_lease(p_ticket text, p_owner text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM supportbot.tickets WHERE id = p_ticket AND lease_owner = p_owner;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ticket % is no longer leased to %', p_ticket, p_owner USING ERRCODE = 'SBL01';
    END IF;
END $$;
