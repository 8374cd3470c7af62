"""Cassettes: the format lives in :mod:`mockserver.core.cassette` (the mocks export their journal as one); the
recording tools import it from here."""

from __future__ import annotations

from mockserver.core.cassette import (
    BODY_LIMIT,
    CASSETTE_VERSION,
    BodyText,
    Cassette,
    CassetteError,
    CassetteHeader,
    CassetteWriter,
    Exchange,
    Message,
    decode_body,
    read_cassette,
)

__all__ = [
    "BODY_LIMIT",
    "CASSETTE_VERSION",
    "BodyText",
    "Cassette",
    "CassetteError",
    "CassetteHeader",
    "CassetteWriter",
    "Exchange",
    "Message",
    "decode_body",
    "read_cassette",
]
