-- The trigger function that keeps supportbot.audit append-only: it refuses UPDATE, DELETE and
-- TRUNCATE, except the one update forget_customer makes (erasing the customer's address, notes and
-- ids from rows about them), and the retention sweep's deletion of rows older than the declared
-- period (run/_retention.py sets supportbot.audit_retention_days in its transaction; a row younger
-- than that is refused whatever the setting). The triggers are created by 012_human_and_audit.sql.
-- A repeatable file: the migrator runs it again whenever its text changes (store/_migrate.py).

CREATE OR REPLACE FUNCTION supportbot.audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF TG_OP = 'DELETE' AND coalesce(current_setting('supportbot.audit_retention_days', true), '') ~ '^[1-9][0-9]{0,5}$'
       AND OLD.at < now() - make_interval(days => current_setting('supportbot.audit_retention_days')::integer) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'supportbot.audit is append-only: % refused', TG_OP USING ERRCODE = 'SBA01';
END $$;
