-- Saved replies for people writing to customers in the console: per team ('' for everyone), with
-- placeholders ({name}, {ticket}, {amount}, {invoice}, {date}) the console fills from the ticket.
-- They are the console's own rows: no customer data, so forgetting a customer leaves them alone.

CREATE TABLE supportbot.console_saved_replies (
    team        text NOT NULL DEFAULT '' CHECK (length(team) <= 200),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    body        text NOT NULL CHECK (length(body) BETWEEN 1 AND 4000),
    created_by  text NOT NULL CHECK (length(created_by) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, name)
);
