-- Ownership in the console: a ticket is assigned to an operator, a team, or both (a team's ticket
-- an operator of it has picked up). One row per ticket, replaced on each hand-over; who handed it
-- to whom is in the audit log (action 'assign'), which is append-only. Operators' teams are in the
-- console's users file. A change wakes open inboxes (sql/021_console_live.sql).

CREATE TABLE supportbot.console_assignments (
    ticket_id   text PRIMARY KEY REFERENCES supportbot.tickets (id) ON DELETE CASCADE,
    operator    text CHECK (operator IS NULL OR length(operator) BETWEEN 1 AND 200),
    team        text CHECK (team IS NULL OR length(team) BETWEEN 1 AND 200),
    assigned_by text NOT NULL CHECK (length(assigned_by) BETWEEN 1 AND 200),
    assigned_at timestamptz NOT NULL DEFAULT now(),
    CHECK (operator IS NOT NULL OR team IS NOT NULL)
);

CREATE INDEX console_assignments_operator ON supportbot.console_assignments (operator);
CREATE INDEX console_assignments_team ON supportbot.console_assignments (team);

CREATE TRIGGER console_assignments_inbox_changed AFTER INSERT OR UPDATE OR DELETE ON supportbot.console_assignments
    FOR EACH STATEMENT EXECUTE FUNCTION supportbot.inbox_changed();

ALTER TABLE supportbot.audit DROP CONSTRAINT audit_action_check;
ALTER TABLE supportbot.audit ADD CONSTRAINT audit_action_check CHECK (action IN (
    'approve', 'reject', 'respond', 'take_over', 'human_reply', 'hand_back', 'fork', 'forget_customer',
    'correct_fact', 'correct_profile', 'assign'));
