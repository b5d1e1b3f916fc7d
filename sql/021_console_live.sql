-- The console's live inbox: a notification on `supportbot_inbox` whenever what the inbox shows may
-- have changed, so an open page updates within a second instead of on a timer.
--
-- The inbox shows tickets waiting for a decision, handed off, or owned by a person, and who is
-- reviewing each approval. A ticket row's update notifies when the ticket enters, leaves or
-- changes inside those statuses (a customer message on a ticket a person owns moves its
-- updated_at); the WHEN clause is evaluated without calling the function, so the ordinary round
-- of a ticket the bot answers pays nothing. Claims notify once per statement. The payload is
-- empty: a notification is a hint to read the inbox again (never the truth), and equal
-- notifications of one transaction are delivered once.

CREATE FUNCTION supportbot.inbox_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('supportbot_inbox', '');
    RETURN NULL;
END $$;

CREATE TRIGGER tickets_inbox_changed AFTER UPDATE ON supportbot.tickets
    FOR EACH ROW
    WHEN (OLD.status IN ('waiting_approval', 'escalated', 'with_human')
          OR NEW.status IN ('waiting_approval', 'escalated', 'with_human'))
    EXECUTE FUNCTION supportbot.inbox_changed();

CREATE TRIGGER console_claims_inbox_changed AFTER INSERT OR UPDATE OR DELETE ON supportbot.console_claims
    FOR EACH STATEMENT EXECUTE FUNCTION supportbot.inbox_changed();
