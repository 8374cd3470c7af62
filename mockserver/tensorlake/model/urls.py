"""Where a sandbox is reached: its ``sandbox_url`` and the ``ingress_endpoint``, seen from the client's side.

A lifecycle answer names two URLs, computed from the :class:`Origin` the request came in on (its scheme and
``Host`` header) and the mock's ingress domain:

* ``ingress_endpoint`` is ``<scheme>://<domain>[:<port>]``; user ports live at ``<port>-<id>.<domain>``.
* ``sandbox_url`` is the management API's base URL: the origin itself when the client reached the mock by
  ``localhost`` or an IP literal (the SDK then routes with ``Host: <id>.local``), else
  ``<scheme>://<id>.<domain>[:<port>]``.
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass

__all__ = ["DEFAULT_INGRESS_DOMAIN", "LOOPBACK_NAMES", "Origin", "endpoints", "is_loopback_host"]

#: The ingress domain of a mock given none.
DEFAULT_INGRESS_DOMAIN = "sandbox.localhost"
LOOPBACK_NAMES = frozenset({"localhost"})


@functools.lru_cache(maxsize=256)
def is_loopback_host(hostname: str) -> bool:
    """Tell whether ``hostname`` is ``localhost`` or an IP literal the SDK talks to directly."""
    if hostname in LOOPBACK_NAMES:
        return True
    try:
        ipaddress.ip_address(hostname.strip("[]"))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Origin:
    """How a client reached the mock: the request's scheme and its ``Host`` header (``host[:port]``)."""

    scheme: str
    host: str

    def split(self) -> tuple[str, str]:
        """Return ``(hostname, port)`` of the Host header; the port is ``""`` when it names none.

        A bracketed IPv6 literal keeps its brackets (``[::1]:8911`` is ``("[::1]", "8911")``).
        """
        if self.host.startswith("["):
            hostname, _, rest = self.host.partition("]")
            return hostname + "]", rest.removeprefix(":")
        if self.host.count(":") == 1:
            hostname, _, port = self.host.rpartition(":")
            return hostname, port
        return self.host, ""


def endpoints(origin: Origin, sandbox_id: str, domain: str) -> tuple[str, str]:
    """Return ``(sandbox_url, ingress_endpoint)`` of a sandbox for a client that came in on ``origin``."""
    hostname, port = origin.split()
    suffix = f":{port}" if port else ""
    ingress = f"{origin.scheme}://{domain}{suffix}"
    if is_loopback_host(hostname):
        return f"{origin.scheme}://{origin.host}", ingress
    return f"{origin.scheme}://{sandbox_id}.{domain}{suffix}", ingress
