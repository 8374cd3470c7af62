"""Domain-name normalisation and a suffix index for exact and leading-wildcard domain rules.

Names are compared in their canonical ASCII form: lowercase, one trailing dot dropped, non-ASCII names
converted to IDNA (UTS #46 mapping, IDNA 2008, non-transitional, as the ``idna`` package does it).

``DomainIndex`` keys exact rules by the whole name and wildcard rules (``*.example.com``) by the name below
the wildcard label (``example.com``). A label sequence has exactly one canonical dotted spelling, so these
string keys stand for the reversed-label paths of a trie: a lookup walks the query host's proper suffixes
(``v1.api.example.com`` -> ``api.example.com`` -> ``example.com`` -> ``com``), one dict probe each, and its
cost depends on the host's label count, never on the number of rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["DomainIndex", "normalize_domain", "normalize_query_host"]

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_NAME = 253


def _to_ascii(name: str) -> str:
    """Return ``name`` lowercased and IDNA-encoded when it is not ASCII; raise ValueError when impossible."""
    if name.isascii():
        return name.lower()
    import idna  # only a non-ASCII name needs it: loaded on first use, not with the policy

    try:
        return idna.encode(name, uts46=True, transitional=False).decode("ascii")
    except idna.IDNAError as exc:
        raise ValueError(f"cannot convert to IDNA: {exc}") from None


def normalize_domain(name: str) -> str:
    """Return the canonical form of the domain ``name``; raise ValueError naming the defect otherwise.

    Labels are 1-63 characters of ``[a-z0-9_-]`` without a leading or trailing hyphen, the whole name is at
    most 253 characters, and the last label is not all digits (so ``1.2.3.999`` is never taken for a name).
    """
    if name.endswith("."):
        name = name[:-1]
    if not name:
        raise ValueError("empty domain name")
    name = _to_ascii(name)
    if len(name) > _MAX_NAME:
        raise ValueError(f"longer than {_MAX_NAME} characters")
    labels = name.split(".")
    for label in labels:
        if not label:
            raise ValueError("empty label")
        if not _LABEL.fullmatch(label):
            raise ValueError(f"invalid label {label!r}")
    if labels[-1].isdigit():
        raise ValueError("the last label is numeric")
    return name


def normalize_query_host(host: str) -> str | None:
    """Return the canonical form of a queried host name, or None when it cannot name any domain rule."""
    if host.endswith("."):
        host = host[:-1]
    if host.isascii():
        host = host.lower()
    else:
        import idna  # as in _to_ascii

        try:
            host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        except idna.IDNAError:
            return None
    if not host or host.startswith(".") or ".." in host:
        return None
    return host


class DomainIndex:
    """Find the first-listed exact or wildcard domain rule matching a canonical host name."""

    __slots__ = ("_exact", "_wildcard")

    def __init__(self, exact: Iterable[tuple[str, int]], wildcard: Iterable[tuple[str, int]]) -> None:
        """Index ``(name, position)`` pairs; wildcard names are given without the leading ``*.``."""
        self._exact: dict[str, int] = {}
        self._wildcard: dict[str, int] = {}
        for table, items in ((self._exact, exact), (self._wildcard, wildcard)):
            for name, position in items:
                if name not in table or position < table[name]:
                    table[name] = position

    @classmethod
    def from_tables(cls, exact: dict[str, int], wildcard: dict[str, int]) -> DomainIndex:
        """Adopt ready ``name -> lowest position`` tables (wildcard names without ``*.``) without copying them."""
        index = cls.__new__(cls)
        index._exact = exact
        index._wildcard = wildcard
        return index

    def __len__(self) -> int:
        """Return the number of indexed names."""
        return len(self._exact) + len(self._wildcard)

    def first_match(self, host: str) -> int | None:
        """Return the lowest position of a rule matching the canonical ``host``, or None."""
        best = self._exact.get(host)
        wildcard = self._wildcard
        if wildcard:
            dot = host.find(".")
            while dot != -1:
                position = wildcard.get(host[dot + 1 :])
                if position is not None and (best is None or position < best):
                    best = position
                dot = host.find(".", dot + 1)
        return best
