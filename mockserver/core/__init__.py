"""The transport-free core every mock shares: virtual clock, ids, DNS, fault rules, journal, errors, state,
due times.

Importing this package loads no web framework: the HTTP layer lives in :mod:`mockserver.asgi`, the admin
service in :mod:`mockserver.admin`.
"""

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
