-- An operator corrects what is remembered. In a ticket, a correction is a pinned fact like any
-- other (supportbot.facts, role 'operator'), recorded as a step between rounds and superseding the
-- fact it corrects; a retraction is such a fact with an empty value. Across tickets, the
-- customer's profile is derived from the business system's records, which are not ours to edit:
-- a correction is a row here, applied by the profile builder on top of what the records say.
-- Both are append-only (the latest row for an entry wins) and audited; forgetting the customer
-- deletes their rows with the cached profile.

CREATE TABLE supportbot.profile_corrections (
    customer_id text NOT NULL,
    idx         integer NOT NULL CHECK (idx >= 0),
    entry       text NOT NULL CHECK (entry IN ('issue', 'request', 'promise', 'contact')),
    key         text NOT NULL CHECK (length(key) BETWEEN 1 AND 2000),
    value       text CHECK (value IS NULL OR length(value) BETWEEN 1 AND 2000),  -- NULL: retracted
    reason      text NOT NULL CHECK (length(reason) BETWEEN 1 AND 2000),
    actor       text NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, idx)
);

CREATE FUNCTION supportbot.profile_corrections_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'profile corrections are append-only: add a newer correction instead'
        USING ERRCODE = 'SBA01';
END $$;

CREATE TRIGGER profile_corrections_append_only BEFORE UPDATE ON supportbot.profile_corrections
    FOR EACH ROW EXECUTE FUNCTION supportbot.profile_corrections_append_only();

ALTER TABLE supportbot.audit DROP CONSTRAINT audit_action_check;
ALTER TABLE supportbot.audit ADD CONSTRAINT audit_action_check CHECK (action IN (
    'approve', 'reject', 'respond', 'take_over', 'human_reply', 'hand_back', 'fork', 'forget_customer',
    'correct_fact', 'correct_profile'));
