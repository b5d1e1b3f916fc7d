# Generated from _profiles_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""The SQL of the customer-profile cache (``supportbot.profiles``): one row per customer, keyed by
the fingerprint of the profile's inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from ._rows import ProfileCorrection


@dataclass(frozen=True, slots=True)
class StoredProfile:
    fingerprint: str
    profile: Any  # the Profile as JSON


def stored_profile(conn: psycopg.Connection, customer_id: str) -> StoredProfile | None:
    return (
        conn.cursor(row_factory=class_row(StoredProfile)).execute(
            "SELECT fingerprint, profile FROM supportbot.customer_profiles WHERE customer_id = %s",
            (customer_id,),
        )
    ).fetchone()


def save_profile(
    conn: psycopg.Connection, customer_id: str, fingerprint: str, profile: Any, text: str
) -> None:
    """Store the customer's profile (JSON) and its text under ``fingerprint``, replacing any other."""
    conn.execute(
        "INSERT INTO supportbot.customer_profiles (customer_id, fingerprint, profile, text)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT (customer_id) DO UPDATE SET fingerprint = "
        "EXCLUDED.fingerprint,"
        " profile = EXCLUDED.profile, text = EXCLUDED.text, built_at = now()",
        (customer_id, fingerprint, Jsonb(profile), text),
    )


def profile_corrections(conn: psycopg.Connection, customer_id: str) -> list[ProfileCorrection]:
    """The customer's profile corrections, oldest first: (entry, key, value or None)."""
    rows = (
        conn.execute(
            "SELECT entry, key, value FROM supportbot.profile_corrections WHERE customer_id = %s"
            " ORDER BY idx",
            (customer_id,),
        )
    ).fetchall()
    return [ProfileCorrection(str(e), str(k), v) for e, k, v in rows]


def correction_positions(conn: psycopg.Connection) -> dict[str, int]:
    """Each corrected customer's latest correction position (a small table: corrections are rare)."""
    rows = conn.execute(
        "SELECT customer_id, max(idx) FROM supportbot.profile_corrections GROUP BY customer_id"
    )
    return {str(customer): int(idx) for customer, idx in rows.fetchall()}


def add_profile_correction(
    conn: psycopg.Connection,
    customer_id: str,
    *,
    entry: str,
    key: str,
    value: str | None,
    reason: str,
    actor: str,
) -> int:
    """Append a correction (the next position for the customer, under a lock of their rows); its idx."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtext('supportbot.profile_corrections:' || %s))", (customer_id,)
    )
    row = (
        conn.execute(
            "INSERT INTO supportbot.profile_corrections (customer_id, idx, entry, key, value, reason, actor)"
            " SELECT %(c)s, coalesce(max(idx) + 1, 0), %(e)s, %(k)s, %(v)s, %(r)s, %(a)s"
            " FROM supportbot.profile_corrections WHERE customer_id = %(c)s RETURNING idx",
            {"c": customer_id, "e": entry, "k": key, "v": value, "r": reason, "a": actor},
        )
    ).fetchone()
    assert row is not None
    return int(row[0])


class ProfileStatements:
    """Stored profiles and operators' corrections to them (``store.profiles``): the statements code
    outside the store runs, each on the transaction or connection it passes."""

    add_profile_correction = staticmethod(add_profile_correction)
    correction_positions = staticmethod(correction_positions)
    profile_corrections = staticmethod(profile_corrections)
    save_profile = staticmethod(save_profile)
    stored_profile = staticmethod(stored_profile)
