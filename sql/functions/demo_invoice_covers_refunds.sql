-- The demo's invariant on invoices: an invoice's amount never drops below what was refunded of it.
-- A repeatable file of the demo business system: run again whenever its text changes.

CREATE OR REPLACE FUNCTION demo.invoice_covers_refunds() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT coalesce(sum(amount), 0) FROM demo.refunds WHERE invoice_id = NEW.id AND status = 'approved')
            > NEW.amount THEN
        RAISE EXCEPTION 'an invoice must not pay less than was refunded of it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'refunds_within_paid';
    END IF;
    RETURN NEW;
END $$;
