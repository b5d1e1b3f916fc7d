-- What only the operator console (supportbot[console]) keeps: review claims and private notes.
--
-- A claim says which reviewer is deciding a ticket's pending refund, so two people never work
-- on one approval at once; it lapses at expires_at, so a reviewer who walks away does not block
-- the ticket. One row per ticket (the primary key): claiming is one INSERT ... ON CONFLICT that
-- only takes the row over when it has lapsed or belongs to the same reviewer, which keeps claims
-- exclusive between concurrent reviewers without any lock held across requests.
--
-- Notes are what operators tell each other about a ticket. They are never shown to the model or
-- the customer, which is why they live here and not among the turns. Append-only, numbered per
-- ticket like turns. Both tables carry ticket_id, so forgetting a customer deletes them too.

CREATE TABLE supportbot.console_claims (
    ticket_id  text PRIMARY KEY REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    round      integer NOT NULL,
    reviewer   text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);

CREATE TABLE supportbot.console_notes (
    ticket_id  text NOT NULL REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    idx        integer NOT NULL,
    author     text NOT NULL,
    body       text NOT NULL CHECK (length(body) BETWEEN 1 AND 4000),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (ticket_id, idx)
);
