-- A reviewer may approve less than was asked (an edited approval) or answer the agent without
-- deciding (a response). approvals.amount is the amount a person approved when it differs from the
-- request's (NULL: as asked, or not approved); the audit log gains the action 'respond'.

ALTER TABLE supportbot.approvals ADD COLUMN amount numeric(12, 2);
ALTER TABLE supportbot.approvals ADD CONSTRAINT approvals_amount_check CHECK (amount IS NULL OR (approved AND amount > 0));

ALTER TABLE supportbot.audit DROP CONSTRAINT audit_action_check;
ALTER TABLE supportbot.audit ADD CONSTRAINT audit_action_check CHECK (action IN (
    'approve', 'reject', 'respond', 'take_over', 'human_reply', 'hand_back', 'fork', 'forget_customer'));
