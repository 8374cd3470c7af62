"""The documented neighbours of a policy entry, enumerated: what every boundary check probes, on every run.

A random draw finds a boundary bug only when it happens to land on the boundary (an engine where
``*.example.com`` also matches ``badexample.com`` passed a default run because no draw did). The boundary checks
of each provider (:mod:`harness.policy.tensorlake.boundaries`, :mod:`harness.policy.opensandbox.boundaries`, the
``boundary_hosts`` check of :mod:`harness.policy.sandbox_network`) therefore probe, for every entry form, the
same fixed neighbours, and take the expected answer from the reference engine (no second copy of the rule):

* names (:func:`name_probes`): the apex, one label deeper, many labels deeper, the same suffix without the dot
  (``badexample.com``), a name below that one, and the entry's name followed by more labels;
* spellings (:func:`spelled_probes`): letter case, a trailing dot, and the punycode / Unicode form of an
  internationalised name (:data:`IDN`);
* addresses (:func:`address_probes`): a CIDR's (or an address's) first and last address, one below the first
  and one above the last (where they exist);
* a ``:port`` suffix (:func:`with_port`), on the entry.

Random generation stays on top: the property checks still draw policies and hosts.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "ADDRESS_ENTRIES",
    "IDN",
    "NAME",
    "PORT",
    "Probe",
    "address_probes",
    "compare",
    "for_port",
    "idn_probes",
    "name_probes",
    "neighbours_named",
    "outcome",
    "spelled_probes",
    "with_port",
]

#: The domain the name entries are built on.
NAME = "example.com"
#: An internationalised domain: its Unicode and punycode (IDNA) spellings.
IDN = ("bücher.example", "xn--bcher-kva.example")
#: The port suffix the port probes add.
PORT = ":443"
#: Address entries: a single address, CIDRs of several sizes, and ranges at either end of the address space.
ADDRESS_ENTRIES = (
    "203.0.113.10",
    "10.0.0.0/8",
    "192.168.4.0/22",
    "198.51.100.128/25",
    "172.16.5.4/31",
    "0.0.0.0/24",
    "255.255.255.0/24",
)


@dataclass(frozen=True)
class Probe:
    """One neighbour of an entry: which neighbour it is, and the destination (a host name or an address)."""

    neighbour: str
    host: str | None = None
    ip: str | None = None

    @property
    def destination(self) -> str:
        """Return the host name or the address probed."""
        return self.host if self.host is not None else str(self.ip)


def name_probes(base: str) -> list[Probe]:
    """Return the name neighbours of entries built on ``base`` (``base`` itself and ``*.base``)."""
    return [
        Probe("apex", base),
        Probe("one label deeper", f"api.{base}"),
        Probe("many labels deeper", f"v1.eu.api.{base}"),
        Probe("same suffix without the dot", f"bad{base}"),
        Probe("one label below the suffix without the dot", f"api.bad{base}"),
        Probe("the name followed by more labels", f"{base}.evil.org"),
    ]


def spelled_probes(base: str) -> list[Probe]:
    """Return the apex and a name one label deeper in other spellings: letter case and a trailing dot."""
    deeper = f"api.{base}"
    return [
        Probe("letter case (apex)", base.upper()),
        Probe("letter case (one label deeper)", f"Api.{base.title()}"),
        Probe("trailing dot (apex)", base + "."),
        Probe("trailing dot (one label deeper)", deeper + "."),
        Probe("letter case and trailing dot", deeper.upper() + "."),
    ]


def idn_probes() -> list[Probe]:
    """Return the internationalised name and a name below it, in both spellings."""
    unicode, puny = IDN
    return [
        Probe("punycode spelling", puny),
        Probe("Unicode spelling", unicode),
        Probe("punycode spelling, one label deeper", f"api.{puny}"),
        Probe("Unicode spelling, one label deeper", f"api.{unicode}"),
        Probe("Unicode spelling, upper case", unicode.upper()),
    ]


def address_probes(entry: str) -> list[Probe]:
    """Return a CIDR's (or an address's) first and last address and the addresses just outside it."""
    network = ipaddress.IPv4Network(entry, strict=False)
    first, last = int(network.network_address), int(network.broadcast_address)
    probes = [Probe("first address", ip=str(ipaddress.IPv4Address(first)))]
    probes.append(Probe("last address", ip=str(ipaddress.IPv4Address(last))))
    if first > 0:
        probes.append(Probe("one below the first address", ip=str(ipaddress.IPv4Address(first - 1))))
    if last < 2**32 - 1:
        probes.append(Probe("one above the last address", ip=str(ipaddress.IPv4Address(last + 1))))
    return probes


def with_port(entry: str) -> str:
    """Return ``entry`` with the :data:`PORT` suffix."""
    return entry + PORT


def for_port(probes: Iterable[Probe], where: str = "entry") -> list[Probe]:
    """Return ``probes`` renamed for a ``:port`` suffix on the entry (``where="entry"``) or, with the suffix added
    to each destination, on the host (``where="host"``)."""
    if where == "host":
        return [Probe(f"port suffix on the host, {p.neighbour}", with_port(p.destination)) for p in probes]
    return [Probe(f"port suffix on the entry, {p.neighbour}", p.host, p.ip) for p in probes]


def outcome(decide: Callable[[], bool]) -> str:
    """Return ``allowed``, ``blocked`` or ``invalid`` (a ``ValueError``) for one decision."""
    try:
        return "allowed" if decide() else "blocked"
    except ValueError:
        return "invalid"


def compare(
    cases: Iterable[tuple[str, object, Probe]],
    engine: Callable[[object, Probe], bool],
    reference: Callable[[object, Probe], bool],
) -> list[str]:
    """Return one line per ``(entry, policy, probe)`` the engine decides unlike the reference, in order."""
    found: list[str] = []
    for entry, policy, probe in cases:
        want = outcome(lambda: reference(policy, probe))  # noqa: B023 (called at once)
        got = outcome(lambda: engine(policy, probe))  # noqa: B023
        if got != want:
            found.append(
                f"{probe.neighbour}: entry {entry!r}, {probe.destination!r} is {got}, the reference: {want} "
                f"(policy {policy!r})"
            )
    return found


def neighbours_named(lines: Sequence[str]) -> list[str]:
    """Return the distinct neighbours named by :func:`compare`'s lines, in order."""
    return list(dict.fromkeys(line.split(":", 1)[0] for line in lines))
