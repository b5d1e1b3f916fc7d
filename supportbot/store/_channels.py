"""The NOTIFY channels: a ticket needs a worker; a worker's part of a ticket's round ended
(payload: the ticket id). Their own module, because both the ticket SQL (``repo``) and the work
queue (``queue``, which builds claims from ticket rows) send on them."""

WORK_CHANNEL = "supportbot_work"
DONE_CHANNEL = "supportbot_done"
