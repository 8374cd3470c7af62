"""The transport-free core every mock shares: virtual clock, ids, DNS, fault rules, journal, errors, state,
due times.

Importing this package loads no web framework: the HTTP layer lives in :mod:`mockserver.asgi`, the admin
service in :mod:`mockserver.admin`. Its public names load on first use (:mod:`.lazy`), so importing a
package that uses the lazy helper (``import mockserver.tensorlake``) loads nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .lazy import lazy_dir, lazy_name

if TYPE_CHECKING:
    from .clock import VirtualClock
    from .dns import DnsTable
    from .errors import ApiError, json_object
    from .faults import FaultError, FaultRule, FaultSet
    from .ids import IdFactory
    from .journal import Journal, JournalAssertionError, JournalEntry, RequestNotes
    from .mock import MockCore
    from .schedule import DueTimes

__all__ = [
    "ApiError",
    "DnsTable",
    "DueTimes",
    "FaultError",
    "FaultRule",
    "FaultSet",
    "IdFactory",
    "Journal",
    "JournalAssertionError",
    "JournalEntry",
    "MockCore",
    "RequestNotes",
    "VirtualClock",
    "json_object",
]

_HOMES = {
    "ApiError": "mockserver.core.errors",
    "DnsTable": "mockserver.core.dns",
    "DueTimes": "mockserver.core.schedule",
    "FaultError": "mockserver.core.faults",
    "FaultRule": "mockserver.core.faults",
    "FaultSet": "mockserver.core.faults",
    "IdFactory": "mockserver.core.ids",
    "Journal": "mockserver.core.journal",
    "JournalAssertionError": "mockserver.core.journal",
    "JournalEntry": "mockserver.core.journal",
    "MockCore": "mockserver.core.mock",
    "RequestNotes": "mockserver.core.journal",
    "VirtualClock": "mockserver.core.clock",
    "json_object": "mockserver.core.errors",
}


def __getattr__(name: str) -> Any:
    """Import a public name from the module that defines it, on first use."""
    return lazy_name(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return lazy_dir(__name__, __all__)
