-- The demo's refunds keep the amount the customer's request asked for beside the amount decided:
-- a reviewer may approve less (an edited approval), never more. The database holds the rule for
-- every writer: the amount only ever goes down from what was requested, and only while the
-- refund is decided (a pending request's amount is what was asked).

ALTER TABLE demo.refunds ADD COLUMN requested numeric(12, 2);
UPDATE demo.refunds SET requested = amount;
ALTER TABLE demo.refunds ALTER COLUMN requested SET NOT NULL;
ALTER TABLE demo.refunds ADD CONSTRAINT refunds_within_requested
    CHECK (amount <= requested AND (status <> 'pending' OR amount = requested));
