"""The DNS table a mock resolves names from (for egress probes and PATCH host validation).

Synthetic addresses (the default for names the table does not list) are allocated, not just hashed: each
name gets one address of 198.18.0.0/15 that no other name holds, for the table's lifetime. The first choice
is the name's hash, so a name keeps the same address from run to run unless an earlier name took it; on a
collision the next free address is taken. Enforcement keyed on addresses (the linux runtime's nft sets)
can then never let two names a policy tells apart share one address. An explicit entry that lands on an
address already given to a synthetic name takes it over, and that name gets a fresh address when next
resolved. When the range is used up, unknown names stop resolving (NXDOMAIN) rather than share.
"""

from __future__ import annotations

import hashlib
import ipaddress
import threading
from collections.abc import Mapping
from typing import Literal

DnsDefault = Literal["synthetic", "nxdomain"]
#: The resolver every sandbox's ``/etc/resolv.conf`` names, on both runtimes (the linux runtime's world answers
#: on it), so one egress policy gets one DNS verdict: it lies in 100.64.0.0/10, outside the private ranges a
#: policy commonly denies (``deny_out: ["10.0.0.0/8"]`` must not cut a sandbox off its own resolver).
SANDBOX_RESOLVER = "100.64.0.53"
#: Names under these suffixes never resolve, whatever the default (RFC 2606 / RFC 6761).
NEVER_RESOLVES = (".invalid", ".unresolvable.test")
#: Where synthetic addresses come from (RFC 2544's benchmarking range).
SYNTHETIC_NET = ipaddress.IPv4Network("198.18.0.0/15")
_SYNTHETIC_BASE = int(SYNTHETIC_NET.network_address)
_SYNTHETIC_SIZE = SYNTHETIC_NET.num_addresses
#: How many names can hold a synthetic address at once (every address of the range but those ending in .0).
SYNTHETIC_CAPACITY = _SYNTHETIC_SIZE - _SYNTHETIC_SIZE // 256


class DnsTable:
    """Resolve names from explicit entries, else synthesise a stable address or fail.

    With ``default="synthetic"`` an unknown name resolves to an address of its own in 198.18.0.0/15 (the
    benchmarking range, see the module docstring), so tests need no setup; names ending in ``.invalid``
    never resolve. ``default="nxdomain"`` makes unknown names unresolvable.
    """

    def __init__(self, entries: Mapping[str, list[str]] | None = None, default: DnsDefault = "synthetic") -> None:
        if default not in ("synthetic", "nxdomain"):
            raise ValueError("default must be 'synthetic' or 'nxdomain'")
        self._lock = threading.Lock()
        self._entries: dict[str, list[str]] = {}
        #: Synthetic allocations: name -> address offset in the range, and the reverse.
        self._synthetic: dict[str, int] = {}
        self._holders: dict[int, str] = {}
        #: Offsets in the range that explicit entries use (synthetic names never get them).
        self._listed: set[int] = set()
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
            self._relist()
            self.version += 1

    def replace(self, entries: Mapping[str, list[str]], default: DnsDefault | None = None) -> None:
        """Replace every entry (and optionally the default)."""
        if default is not None and default not in ("synthetic", "nxdomain"):
            raise ValueError("default must be 'synthetic' or 'nxdomain'")
        with self._lock:
            self._entries.clear()
            self._listed.clear()
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
            offset = self._allocate(key)
        return [] if offset is None else [str(ipaddress.IPv4Address(_SYNTHETIC_BASE + offset))]

    def holder(self, address: str) -> str | None:
        """Return the name a synthetic ``address`` was given to (None: none holds it)."""
        try:
            offset = int(ipaddress.IPv4Address(address)) - _SYNTHETIC_BASE
        except ValueError:
            return None
        with self._lock:
            return self._holders.get(offset)

    def _allocate(self, key: str) -> int | None:
        """Return ``key``'s synthetic offset, giving it the first free one from its hash on (lock held)."""
        held = self._synthetic.get(key)
        if held is not None:
            return held
        if len(self._holders) + len(self._listed) >= SYNTHETIC_CAPACITY:
            return None
        digest = hashlib.sha256(key.encode()).digest()
        # The first choice is the address the table always hashed a name to: 198.{18|19}.{d1}.{max(1, d2)}.
        offset = ((digest[0] & 1) << 16) | (digest[1] << 8) | max(1, digest[2])
        while offset & 0xFF == 0 or offset in self._holders or offset in self._listed:
            offset = (offset + 1) % _SYNTHETIC_SIZE
        self._synthetic[key] = offset
        self._holders[offset] = key
        return offset

    def _relist(self) -> None:
        """Recompute the offsets explicit entries use; a synthetic name on one of them loses it (lock held)."""
        listed: set[int] = set()
        for addresses in self._entries.values():
            for address in addresses:
                offset = int(ipaddress.IPv4Address(address)) - _SYNTHETIC_BASE
                if 0 <= offset < _SYNTHETIC_SIZE:
                    listed.add(offset)
        for offset in listed & self._holders.keys():
            del self._synthetic[self._holders.pop(offset)]
        self._listed = listed

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
