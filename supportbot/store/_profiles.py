"""The SQL of the customer-profile cache (``supportbot.profiles``): one row per customer, keyed by
the fingerprint of the profile's inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb


@dataclass(frozen=True, slots=True)
class StoredProfile:
    fingerprint: str
    profile: Any  # the Profile as JSON


def stored_profile(conn: psycopg.Connection, customer_id: str) -> StoredProfile | None:
    return (
        conn.cursor(row_factory=class_row(StoredProfile))
        .execute(
            "SELECT fingerprint, profile FROM supportbot.customer_profiles WHERE customer_id = %s",
            (customer_id,),
        )
        .fetchone()
    )


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
