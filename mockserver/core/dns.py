"""The DNS table a mock resolves names from (for egress probes and PATCH host validation)."""

from __future__ import annotations

import hashlib
import ipaddress
import threading
from collections.abc import Mapping
from typing import Literal

DnsDefault = Literal["synthetic", "nxdomain"]
#: Names under these suffixes never resolve, whatever the default (RFC 2606 / RFC 6761).
NEVER_RESOLVES = (".invalid", ".unresolvable.test")


class DnsTable:
    """Resolve names from explicit entries, else synthesise a stable address or fail.

    With ``default="synthetic"`` an unknown name resolves to a stable address in
    198.18.0.0/15 (the benchmarking range), so tests need no setup; names ending in
    ``.invalid`` never resolve. ``default="nxdomain"`` makes unknown names unresolvable.
    """

    def __init__(self, entries: Mapping[str, list[str]] | None = None, default: DnsDefault = "synthetic") -> None:
        if default not in ("synthetic", "nxdomain"):
            raise ValueError("default must be 'synthetic' or 'nxdomain'")
        self._lock = threading.Lock()
        self._entries: dict[str, list[str]] = {}
        self.default: DnsDefault = default
        #: Counts the changes to the table (a durable store rewrites it only when it moved).
        self.version = 0
        if entries:
            self.update(entries)

    def update(self, entries: Mapping[str, list[str]]) -> None:
        """Add or replace entries; an empty address list makes a name unresolvable."""
        clean = {_norm(name): [str(ipaddress.IPv4Address(a)) for a in addrs] for name, addrs in entries.items()}
        with self._lock:
            self._entries.update(clean)
            self.version += 1

    def replace(self, entries: Mapping[str, list[str]], default: DnsDefault | None = None) -> None:
        """Replace every entry (and optionally the default)."""
        if default is not None and default not in ("synthetic", "nxdomain"):
            raise ValueError("default must be 'synthetic' or 'nxdomain'")
        with self._lock:
            self._entries.clear()
            self.version += 1
            if default is not None:
                self.default = default
        self.update(entries)

    def resolve(self, name: str) -> list[str]:
        """Return the addresses of ``name`` (an IPv4 literal resolves to itself); [] if none."""
        try:
            return [str(ipaddress.IPv4Address(name))]
        except ValueError:
            pass
        key = _norm(name)
        with self._lock:
            if key in self._entries:
                return list(self._entries[key])
            default = self.default
        if default == "nxdomain" or not key or key.endswith(NEVER_RESOLVES) or key.startswith("*."):
            return []
        digest = hashlib.sha256(key.encode()).digest()
        return [f"198.{18 + (digest[0] & 1)}.{digest[1]}.{max(1, digest[2])}"]

    def dump(self) -> dict[str, object]:
        """Return the table as JSON."""
        with self._lock:
            return {"default": self.default, "entries": {k: list(v) for k, v in self._entries.items()}}

    def load(self, data: Mapping[str, object]) -> None:
        """Restore the table from :meth:`dump` output."""
        entries = data.get("entries", {})
        default = data.get("default", "synthetic")
        if not isinstance(entries, dict) or default not in ("synthetic", "nxdomain"):
            raise ValueError("invalid DNS table")
        self.replace(entries, default)


def _norm(name: str) -> str:
    return name.strip().rstrip(".").lower()
