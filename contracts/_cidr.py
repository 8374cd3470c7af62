"""IPv4 parsing and a prefix-length index for IPv4 address and CIDR rules.

Addresses are handled as 32-bit integers. ``CidrIndex`` keeps one dict per prefix length that occurs in the
rule set, mapping the network integer to the rule's position, so a lookup costs at most 33 dict probes no
matter how many rules there are.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CidrIndex", "format_ipv4", "is_ipv4_shaped", "parse_ipv4", "parse_ipv4_network", "prefix_mask"]

_DIGITS = frozenset("0123456789")
_DOTTED = frozenset("0123456789.")


def is_ipv4_shaped(text: str) -> bool:
    """Tell whether ``text`` consists only of digits and dots, i.e. is meant as an IPv4 address."""
    return bool(text) and set(text) <= _DOTTED


_OCTETS = {str(octet): octet for octet in range(256)}


def parse_ipv4(text: str) -> int | None:
    """Return the dotted-quad ``text`` as an integer, or None unless it is a strict IPv4 address.

    Strict means four decimal octets from 0 to 255 in their canonical spelling: no leading zeros
    (``010.0.0.1`` is ambiguous between octal and decimal), signs, spaces or non-ASCII digits.
    """
    parts = text.split(".")
    if len(parts) != 4:
        return None
    octets = _OCTETS
    try:
        return octets[parts[0]] << 24 | octets[parts[1]] << 16 | octets[parts[2]] << 8 | octets[parts[3]]
    except KeyError:
        return None


def format_ipv4(value: int) -> str:
    """Return the dotted-quad form of the 32-bit integer ``value``."""
    return f"{(value >> 24) & 255}.{(value >> 16) & 255}.{(value >> 8) & 255}.{value & 255}"


def prefix_mask(prefix: int) -> int:
    """Return the 32-bit netmask for a prefix length between 0 and 32."""
    return ((1 << prefix) - 1) << (32 - prefix)


def parse_ipv4_network(text: str) -> tuple[int, int]:
    """Return ``(network, prefix)`` for ``a.b.c.d/n``; raise ValueError saying what is wrong otherwise.

    The prefix is a decimal integer from 0 to 32 without leading zeros, and the address must have no bits
    set outside the prefix (``10.0.0.1/8`` is rejected rather than silently widened).
    """
    address, sep, prefix_text = text.partition("/")
    if not sep:
        raise ValueError("missing '/prefix'")
    value = parse_ipv4(address)
    if value is None:
        raise ValueError(f"{address!r} is not an IPv4 address")
    if (
        not prefix_text
        or not set(prefix_text) <= _DIGITS
        or (len(prefix_text) > 1 and prefix_text[0] == "0")
        or int(prefix_text) > 32
    ):
        raise ValueError(f"prefix {prefix_text!r} is not an integer from 0 to 32")
    prefix = int(prefix_text)
    if value & ~prefix_mask(prefix) & 0xFFFFFFFF:
        raise ValueError(f"host bits are set (the network is {format_ipv4(value & prefix_mask(prefix))})")
    return value, prefix


class CidrIndex:
    """Find the first-listed IPv4/CIDR rule covering an address with one dict probe per prefix length."""

    __slots__ = ("_tables",)

    _tables: tuple[tuple[int, dict[int, int]], ...]

    def __init__(self, rules: Iterable[tuple[int, int, int]]) -> None:
        """Index ``(network, prefix, position)`` triples; the lowest position wins for duplicates."""
        by_prefix: dict[int, dict[int, int]] = {}
        for network, prefix, position in rules:
            table = by_prefix.setdefault(prefix, {})
            if network not in table or position < table[network]:
                table[network] = position
        self._tables = self._ordered(by_prefix)

    @staticmethod
    def _ordered(by_prefix: dict[int, dict[int, int]]) -> tuple[tuple[int, dict[int, int]], ...]:
        return tuple((prefix_mask(prefix), by_prefix[prefix]) for prefix in sorted(by_prefix, reverse=True))

    @classmethod
    def from_tables(cls, by_prefix: dict[int, dict[int, int]]) -> CidrIndex:
        """Adopt ready ``prefix -> {network: lowest position}`` tables without copying them."""
        index = cls.__new__(cls)
        index._tables = cls._ordered(by_prefix)
        return index

    def __len__(self) -> int:
        """Return the number of distinct indexed networks."""
        return sum(len(table) for _, table in self._tables)

    def first_match(self, address: int) -> int | None:
        """Return the lowest position of a rule covering ``address``, or None."""
        best: int | None = None
        for mask, table in self._tables:
            position = table.get(address & mask)
            if position is not None and (best is None or position < best):
                best = position
        return best
