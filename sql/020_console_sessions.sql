-- Operator console sessions, so a restart signs nobody out and two console processes on one
-- database serve the same operators.
--
-- The cookie carries a random id; only its SHA-256 is stored, so a read of this table (a backup,
-- a replica) signs nobody in. The CSRF token is derived from the id, never stored. A session
-- names its operator, the role they signed in with and a fingerprint of their credentials at
-- sign-in: a changed password or role no longer matches it, which ends the session, and the CLI
-- deletes the operator's rows when it changes them. Sessions end after an idle time and a
-- lifetime (the console's settings); expired rows are deleted by the console as it signs people
-- in. Nothing here refers to a ticket or a customer, so forgetting a customer leaves it alone.

CREATE TABLE supportbot.console_sessions (
    id_hash     bytea PRIMARY KEY CHECK (length(id_hash) = 32),
    operator    text NOT NULL CHECK (length(operator) BETWEEN 1 AND 200),
    role        text NOT NULL,
    credential  text NOT NULL,
    started_at  timestamptz NOT NULL,
    seen_at     timestamptz NOT NULL
);

CREATE INDEX console_sessions_operator ON supportbot.console_sessions (operator);
CREATE INDEX console_sessions_seen ON supportbot.console_sessions (seen_at);
