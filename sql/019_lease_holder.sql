-- A ticket's lease names the server process that holds it: the backend of the connection that took
-- or last renewed it (its pid and start time, so a reused pid is not mistaken for the holder). When
-- that process is gone (the client was killed: the server ends a connection whose client went
-- away), the next caller takes the ticket at once instead of waiting for the lease to expire.
-- NULL where the holder cannot be told (behind a pooler in transaction mode, whose server
-- connections outlive their clients): there only the expiry frees the ticket.

ALTER TABLE supportbot.tickets ADD COLUMN lease_pid integer;
ALTER TABLE supportbot.tickets ADD COLUMN lease_backend_start timestamptz;
