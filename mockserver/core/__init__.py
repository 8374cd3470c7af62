"""Shared mock machinery: virtual clock, faults, request journal, ids, DNS, admin API, server."""

from .admin_client import AdminClient, AdminError
from .base import MockCore
from .clock import VirtualClock
from .dns import DnsTable
from .faults import FaultError, FaultRule, FaultSet
from .http import ApiError, json_object, read_body, read_json
from .ids import IdFactory
from .journal import Journal, JournalAssertionError, JournalEntry, RequestNotes
from .middleware import abort_connection, notes
from .server import MockServer

__all__ = [
    "AdminClient",
    "AdminError",
    "ApiError",
    "DnsTable",
    "FaultError",
    "FaultRule",
    "FaultSet",
    "IdFactory",
    "Journal",
    "JournalAssertionError",
    "JournalEntry",
    "MockCore",
    "MockServer",
    "RequestNotes",
    "VirtualClock",
    "abort_connection",
    "json_object",
    "notes",
    "read_body",
    "read_json",
]
