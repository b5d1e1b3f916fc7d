-- supportbot.assert_lease(ticket, owner) checked a ticket's lease from a statement of its own.
-- The lease is now fenced inside supportbot.record_steps, by the same UPDATE that records a
-- batch of steps, and nothing calls assert_lease any more: drop it, so the live schema holds only
-- what the code uses.

DROP FUNCTION IF EXISTS supportbot.assert_lease(text, text);
