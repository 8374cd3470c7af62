"""Egress gate protocol, an allow-all gate, and the canned HTTP responses seen from inside a sandbox."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import urlsplit

from .filesystem import FsError

if TYPE_CHECKING:
    from .steps import Invocation  # the command steps load with the first command, not with the mocks

ResolutionError = Literal["dns_blocked", "nxdomain"]
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


@dataclass(frozen=True)
class Resolution:
    """Outcome of a DNS lookup made from inside the sandbox."""

    addresses: tuple[str, ...] = ()
    error: ResolutionError | None = None

    @property
    def ok(self) -> bool:
        """Return whether the name resolved to at least one address."""
        return self.error is None and bool(self.addresses)


class EgressGate(Protocol):
    """Decide what the sandbox's network policy lets through."""

    def resolve(self, name: str) -> Resolution:
        """Resolve `name` as the sandbox's DNS would."""
        ...

    def connect(self, host: str | None, ip: str, port: int) -> bool:
        """Return True if a connection to `ip:port` (for hostname `host`, if any) is allowed."""
        ...


class OpenGate:
    """Allow every connection and resolve names from a fixed table (unknown names are NXDOMAIN)."""

    def __init__(self, dns: Mapping[str, Sequence[str]] | None = None) -> None:
        self.dns: dict[str, list[str]] = {"localhost": ["127.0.0.1"]}
        for name, addresses in (dns or {}).items():
            self.dns[_host_key(name)] = list(addresses)

    def resolve(self, name: str) -> Resolution:
        """Look `name` up in the table."""
        addresses = self.dns.get(_host_key(name))
        return Resolution(tuple(addresses)) if addresses else Resolution((), "nxdomain")

    def connect(self, host: str | None, ip: str, port: int) -> bool:
        """Allow everything."""
        return True


@dataclass(frozen=True)
class HttpResponse:
    """A canned HTTP response; `delay` is virtual seconds before the response arrives."""

    status: int = 200
    body: bytes = b"ok\n"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


class HttpTable:
    """Map exact URLs, `METHOD URL` keys, `host:port` or bare hosts (host-wide) to canned responses."""

    def __init__(
        self, routes: Mapping[str, HttpResponse] | None = None, *, default: HttpResponse | None = None
    ) -> None:
        self.default = default if default is not None else HttpResponse()
        self._routes: dict[str, HttpResponse] = {}
        for key, response in (routes or {}).items():
            self.add(key, response)

    def add(self, key: str, response: HttpResponse) -> None:
        """Register `response` for `key` (a URL, `METHOD URL`, `host:port` or host)."""
        self._routes[_route_key(key)] = response

    def __setitem__(self, key: str, response: HttpResponse) -> None:
        self.add(key, response)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _route_key(key) in self._routes

    def lookup(self, method: str, url: str) -> HttpResponse:
        """Return the most specific response for a request, or the default."""
        canonical = canonical_url(url)
        parts = urlsplit(canonical)
        host = (parts.hostname or "").lower()
        port = parts.port or default_port(parts.scheme)
        without_query = canonical.split("?", 1)[0]
        for key in (
            f"{method.upper()} {canonical}",
            canonical,
            without_query,
            f"{host}:{port}",
            host,
        ):
            if key in self._routes:
                return self._routes[key]
        return self.default


class NetworkContext(Protocol):
    """Expose the gate and HTTP table probes consult at call time."""

    @property
    def gate(self) -> EgressGate:
        """Return the egress gate."""
        ...

    @property
    def http(self) -> HttpTable:
        """Return the canned HTTP responses."""
        ...


def hosts_file(inv: Invocation, name: str) -> tuple[str, ...]:
    """Return the addresses /etc/hosts gives for `name`."""
    try:
        text = inv.fs.read("/etc/hosts").decode(errors="replace")
    except FsError:
        return ()
    found: list[str] = []
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) > 1 and name.lower() in (f.lower() for f in fields[1:]):
            found.append(fields[0])
    return tuple(found)


def lookup(net: NetworkContext, inv: Invocation, name: str, *, use_hosts: bool = True) -> Resolution:
    """Resolve `name`: IP literals as themselves, then /etc/hosts, then the gate's DNS."""
    bare = name.strip("[]")
    if is_ip(bare):
        return Resolution((bare,))
    local = hosts_file(inv, bare) if use_hosts else ()
    return Resolution(local) if local else net.gate.resolve(bare)


def canonical_url(url: str) -> str:
    """Normalise a URL: default scheme http, lower-case scheme/host, empty path becomes `/`."""
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    path = parts.path or "/"
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}{query}"


def default_port(scheme: str) -> int:
    """Return the default TCP port of a URL scheme."""
    return 443 if scheme.lower() == "https" else 80


def is_ip(name: str) -> bool:
    """Return whether `name` is an IPv4 or IPv6 literal (brackets allowed)."""
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def _host_key(name: str) -> str:
    return name.strip().lower().rstrip(".")


def _route_key(key: str) -> str:
    method, _, rest = key.partition(" ")
    if rest and method.upper() in _METHODS:
        return f"{method.upper()} {canonical_url(rest.strip())}"
    return canonical_url(key) if "://" in key else _host_key(key)
