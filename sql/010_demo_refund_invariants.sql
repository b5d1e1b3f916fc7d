-- Money invariants of the demo business system, enforced by the database for every writer.
--
-- A refund is requested in one ticket and decided later by a person, while another ticket of
-- the same customer may ask for, and get, a refund of the same invoice. A balance checked in
-- application code when a request is filed does not stop two approvals from adding up past what
-- was paid. So, besides the CHECK (amount > 0) of the table (with numeric(12, 2), at least 0.01):
--   * a refund is never more than its invoice paid, and in the invoice's currency;
--   * the approved refunds of one invoice never add up past what was paid. The trigger locks the
--     invoice row (FOR UPDATE) before it sums them, so transactions approving refunds of one
--     invoice take turns, and the later one sees the earlier one's approval (READ COMMITTED: each
--     statement of the function reads what was committed before it ran);
--   * an invoice's amount cannot drop below what was refunded of it.
-- The errors name no invoice, amount or customer: they reach the server log.
--
-- decision_note keeps why a refund was decided as it was, e.g. an approval the backend turned
-- into a rejection because nothing was left to refund.

ALTER TABLE demo.refunds ADD COLUMN decision_note text NOT NULL DEFAULT '';

CREATE FUNCTION demo.refund_within_invoice() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    paid numeric;
    paid_currency text;
    approved numeric;
BEGIN
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

CREATE TRIGGER refund_within_invoice
    BEFORE INSERT OR UPDATE OF amount, currency, status, invoice_id ON demo.refunds
    FOR EACH ROW EXECUTE FUNCTION demo.refund_within_invoice();

CREATE FUNCTION demo.invoice_covers_refunds() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT coalesce(sum(amount), 0) FROM demo.refunds WHERE invoice_id = NEW.id AND status = 'approved')
            > NEW.amount THEN
        RAISE EXCEPTION 'an invoice must not pay less than was refunded of it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'refunds_within_paid';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER invoice_covers_refunds
    AFTER UPDATE OF amount ON demo.invoices
    FOR EACH ROW WHEN (NEW.amount < OLD.amount) EXECUTE FUNCTION demo.invoice_covers_refunds();

CREATE INDEX refunds_invoice ON demo.refunds (invoice_id);
