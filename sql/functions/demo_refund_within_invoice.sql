-- The demo's refund invariants (see 010_demo_refund_invariants.sql for why they live in the
-- database): a refund never exceeds what its invoice paid, in the invoice's currency, and the
-- approved refunds of an invoice never add up past it; the invoice row is locked first, so
-- approvals of one invoice take turns. The errors name no invoice, amount or customer. A new
-- request's requested amount (sql/018) is its amount unless the writer gives it.
-- A repeatable file of the demo business system: run again whenever its text changes.

CREATE OR REPLACE FUNCTION demo.refund_within_invoice() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    paid numeric;
    paid_currency text;
    approved numeric;
BEGIN
    IF TG_OP = 'INSERT' AND NEW.requested IS NULL THEN
        NEW.requested := NEW.amount;  -- a writer that files a request names one amount: the one asked
    END IF;
    SELECT amount, currency INTO paid, paid_currency FROM demo.invoices WHERE id = NEW.invoice_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NEW;  -- the foreign key reports it
    END IF;
    IF NEW.amount > paid OR NEW.currency <> paid_currency THEN
        RAISE EXCEPTION 'a refund must not exceed what its invoice paid, in the invoice''s currency'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'refund_within_paid';
    END IF;
    IF NEW.status = 'approved' THEN
        SELECT coalesce(sum(amount), 0) INTO approved FROM demo.refunds
        WHERE invoice_id = NEW.invoice_id AND status = 'approved' AND id <> NEW.id;
        IF approved + NEW.amount > paid THEN
            RAISE EXCEPTION 'the approved refunds of an invoice must not add up past what it paid'
                USING ERRCODE = 'check_violation', CONSTRAINT = 'refunds_within_paid';
        END IF;
    END IF;
    RETURN NEW;
END $$;
