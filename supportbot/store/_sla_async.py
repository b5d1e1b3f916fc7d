"""The SQL of the service-level clocks (run/_sla.py): for every ticket that waits on a person, the
moments its clock reads from."""

from __future__ import annotations

import psycopg
from psycopg.rows import class_row

from ._rows import Waiting


async def waiting(conn: psycopg.AsyncConnection) -> list[Waiting]:
    """Tickets waiting for a refund decision, handed off, or owned by a person."""
    return await (
        await conn.cursor(row_factory=class_row(Waiting)).execute(
            "SELECT t.id AS ticket_id, t.customer_email, t.subject, t.status, t.human_agent, t.updated_at,"
            # The customer's message that asked (the turns' clock, which the bot's clock also reads),
            # else the request's own time.
            " (SELECT coalesce((SELECT max(c.created_at) FROM supportbot.turns c WHERE c.ticket_id = t.id"
            "   AND c.role = 'customer' AND c.round = a.round), a.requested_at)"
            "  FROM supportbot.approvals a WHERE a.ticket_id = t.id AND a.decided_at IS NULL"
            "  ORDER BY a.round DESC LIMIT 1) AS requested_at,"
            " last_bot.created_at AS handed_off_at,"
            " EXISTS (SELECT 1 FROM supportbot.turns h WHERE h.ticket_id = t.id AND h.role = 'agent'"
            "  AND h.author IS NOT NULL AND h.idx > coalesce(last_bot.idx, -1)) AS human_replied,"
            " (SELECT min(c.created_at) FROM supportbot.turns c WHERE c.ticket_id = t.id"
            "  AND c.role = 'customer' AND c.idx > coalesce((SELECT max(r.idx) FROM supportbot.turns r"
            "   WHERE r.ticket_id = t.id AND r.role = 'agent'), -1)) AS unanswered_since"
            " FROM supportbot.tickets t"
            " LEFT JOIN LATERAL (SELECT b.idx, b.created_at FROM supportbot.turns b WHERE b.ticket_id = t.id"
            "  AND b.role = 'agent' AND b.author IS NULL ORDER BY b.idx DESC LIMIT 1) last_bot ON true"
            " WHERE t.status IN ('waiting_approval', 'escalated', 'with_human')"
            " ORDER BY t.id"
        )
    ).fetchall()


class AsyncSlaStatements:
    """Tickets waiting for an answer (``store.sla``): the statements code outside the store runs, each on
    the transaction or connection it passes."""

    waiting = staticmethod(waiting)
