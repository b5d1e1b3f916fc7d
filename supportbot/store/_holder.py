"""Who holds a ticket's lease, in SQL: recorded by every statement that takes or renews one, and
read by every statement that may take one (the lease itself, a stored message, a worker's claim).
"""

from __future__ import annotations

# Who holds a lease (sql/019_lease_holder.sql): the server process of the connection that took or
# renewed it, when ``%(track)s`` (a direct connection); NULL behind a pooler in transaction mode,
# whose server connections pass from client to client and outlive them.
HOLDER_PID = "CASE WHEN %(track)s THEN pg_backend_pid() END"
HOLDER_START = (
    "CASE WHEN %(track)s THEN (SELECT backend_start FROM pg_stat_get_activity(pg_backend_pid())) END"
)


def takeable(alias: str = "") -> str:
    """The condition under which a lease may be taken: free, expired, or held by a server process
    that is gone. A killed client's connection ends at once (the server reads EOF), so its lease is
    taken at the next call instead of after ``lease_seconds``. A process still there whose start
    time cannot be read (another role's, without pg_read_all_stats) counts as alive.

    A live round can look dead in one case: its process's pool closed the connection that last
    renewed the lease (psycopg_pool's max_lifetime, an hour by default) while a model answered.
    The round then loses the lease (LeaseLost): its records are fenced by the owner, and effects
    are keyed by ticket, round and step, so nothing is written twice; only the model's work is lost.
    """
    p = f"{alias}." if alias else ""
    return (
        f"({p}lease_owner IS NULL OR {p}lease_expires < now() OR ({p}lease_pid IS NOT NULL AND NOT EXISTS"
        f" (SELECT 1 FROM pg_stat_get_activity({p}lease_pid) a"
        f"  WHERE a.backend_start IS NULL OR a.backend_start = {p}lease_backend_start)))"
    )
