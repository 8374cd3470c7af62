"""The fast way in for a long TensorLake rule list that is already canonical: whole-list checks, then its indexes.

``NetworkConfig`` validates and normalises its entries one by one (``classify_entry``), about 5 µs each. A
large policy read back from JSON is usually already canonical (``to_json`` wrote it): every entry is a
lowercase ASCII domain, a ``*.`` wildcard, a dotted-quad address or a CIDR with its host bits clear, with no
port, no trailing dot and no ``/32``. ``canonical_entries`` recognises that case with checks run over the
whole list at once (one joined byte string, C-level scans and conversions) and builds the decision indexes
from the same pass.

It decides nothing on its own: it answers None whenever a list is short, or holds anything the per-entry
path would change or reject (a duplicate is the one change it makes itself, keeping the first occurrence),
and the caller then takes the per-entry path, which also names the first offending entry. So the rule stays
in one place (``classify_entry``), and this module only has to accept no entry that rule would not keep as
it is; ``tests/contracts/test_tensorlake.py`` checks both paths agree on the same lists.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from typing import cast

from contracts._cidr import CidrIndex, prefix_mask
from contracts._domains import DomainIndex

__all__ = ["BULK_MIN", "canonical_entries"]

#: Lists shorter than this take the per-entry path (the whole-list checks cost more than they save).
BULK_MIN = 256

_LABEL_BYTES = b"abcdefghijklmnopqrstuvwxyz0123456789_"
_ALLOWED = {
    "allow_out": _LABEL_BYTES + b"-./*\n",
    "deny_out": _LABEL_BYTES + b"-./\n",  # a wildcard in deny_out is an error: the per-entry path reports it
}
#: Label characters become ``a`` and the entry separator a dot, so ``..`` finds every empty label or entry.
_SHAPE = bytes.maketrans(_LABEL_BYTES + b"\n", b"a" * len(_LABEL_BYTES) + b".")
#: A label of at most 63 characters and a name of at most 253 follow from a name of at most 63.
_LONGEST = 63
_DIGITS = "0123456789"
_DIGIT_BYTES = _DIGITS.encode("ascii")
_OCTETS = {str(octet): octet for octet in range(256)}
_PREFIXES = {str(prefix): prefix for prefix in range(32)}
_U32 = next(code for code in "IL" if array(code).itemsize == 4)
_HOST_BITS = [~prefix_mask(prefix) & 0xFFFFFFFF for prefix in range(33)]


def _pack(octet_texts: list[str]) -> list[int] | None:
    """Return the 32-bit integers of consecutive groups of four octets, or None unless each is canonical."""
    try:
        packed = bytes(map(_OCTETS.__getitem__, octet_texts))  # only 0-255 spelled without leading zeros
    except KeyError:
        return None
    values = array(_U32, packed)
    if sys.byteorder == "little":
        values.byteswap()
    return values.tolist()


def _addresses(texts: list[str]) -> list[int] | None:
    """Return the integers of dotted quads, or None unless each text is a canonical one."""
    joined = "\n".join(texts)
    if joined.encode("ascii").translate(None, _DIGIT_BYTES) != (b"...\n" * len(texts))[:-1]:
        return None  # each text is four runs of digits between three dots, nothing else
    return _pack(joined.replace("\n", ".").split("."))


def _networks(cidrs: list[str]) -> tuple[list[int], list[int]] | None:
    """Return the networks and prefixes of canonical CIDRs below /32 with no host bits set, or None."""
    joined = "\n".join(cidrs)
    if joined.encode("ascii").translate(None, _DIGIT_BYTES) != (b".../\n" * len(cidrs))[:-1]:
        return None
    parts = joined.replace("\n", ".").replace("/", ".").split(".")
    prefix_texts = parts[4::5]
    del parts[4::5]
    try:
        prefixes = list(map(_PREFIXES.__getitem__, prefix_texts))
    except KeyError:
        return None  # /32 is written as the bare address: not canonical, so the per-entry path rewrites it
    addresses = _pack(parts)
    if addresses is None:
        return None
    host_bits = _HOST_BITS
    if any(address & host_bits[prefix] for address, prefix in zip(addresses, prefixes, strict=True)):
        return None
    return addresses, prefixes


def _names_valid(names: list[str]) -> bool:
    """Tell whether labels of ``[a-z0-9_-]`` (empty labels already excluded) start and end without a hyphen."""
    joined = "\n".join(names).encode("ascii")
    if b"*" in joined or b"/" in joined:
        return False
    if b"-" not in joined:
        return True
    shape = joined.translate(_SHAPE)
    return not (b".-" in shape or b"-." in shape or shape.startswith(b"-") or shape.endswith(b"-"))


def canonical_entries(value: Sequence[object], where: str) -> tuple[tuple[str, ...], DomainIndex, CidrIndex] | None:
    """Return the deduplicated entries of ``value`` and their domain and CIDR indexes, or None.

    None means "take the per-entry path": ``value`` is short, or some entry is not already canonical.
    """
    count = len(value)
    if count < BULK_MIN:
        return None
    try:
        joined = "\n".join(value).encode("ascii")  # type: ignore[arg-type]  # a non-string raises TypeError
    except (TypeError, UnicodeEncodeError):
        return None
    if joined.count(b"\n") != count - 1 or joined.translate(None, _ALLOWED[where]):
        return None  # an entry holding a newline, or a character no canonical entry has
    shape = joined.translate(_SHAPE)
    if b".." in shape or shape.startswith(b".") or shape.endswith(b"."):
        return None  # an empty entry or label, or a trailing dot
    entries = cast("tuple[str, ...]", tuple(value))  # the join above took every one as a str
    exact: list[str] = []
    exact_at: list[int] = []
    wild: list[str] = []
    wild_at: list[int] = []
    ips: list[str] = []
    ips_at: list[int] = []
    cidrs: list[str] = []
    cidrs_at: list[int] = []
    add_exact, add_exact_at, add_wild, add_wild_at = exact.append, exact_at.append, wild.append, wild_at.append
    add_ip, add_ip_at, add_cidr, add_cidr_at = ips.append, ips_at.append, cidrs.append, cidrs_at.append
    digits = _DIGITS
    for position, entry in enumerate(entries):
        if entry[-1] in digits:  # no domain's last label is all digits; any other name goes the per-entry way
            if "/" in entry:
                add_cidr(entry)
                add_cidr_at(position)
            else:
                add_ip(entry)
                add_ip_at(position)
        elif entry[0] == "*":
            add_wild(entry[2:])
            add_wild_at(position)
        else:
            add_exact(entry)
            add_exact_at(position)
    if wild and (joined.count(b"*.") != len(wild) or joined.count(b"*") != len(wild)):
        return None  # a '*' other than one whole leading label
    if not wild and b"*" in joined:
        return None
    names = exact + wild
    if names and (max(map(len, names)) > _LONGEST or not _names_valid(names)):
        return None
    by_prefix: dict[int, dict[int, int]] = {}
    if ips:
        addresses = _addresses(ips)
        if addresses is None:
            return None
        by_prefix[32] = dict(zip(addresses, ips_at, strict=True))
    if cidrs:
        networks = _networks(cidrs)
        if networks is None:
            return None
        for network, prefix, position in zip(*networks, cidrs_at, strict=True):
            table = by_prefix.get(prefix)
            if table is None:
                table = by_prefix[prefix] = {}
            table[network] = position  # distinct canonical texts: distinct networks, each listed once
    exact_table = dict(zip(exact, exact_at, strict=True))
    wild_table = dict(zip(wild, wild_at, strict=True))
    if len(exact_table) + len(wild_table) + sum(map(len, by_prefix.values())) != len(entries):
        # A text listed twice (kinds never share one): drop the later copies, then the positions are right.
        return canonical_entries(tuple(dict.fromkeys(entries)), where)
    return entries, DomainIndex.from_tables(exact_table, wild_table), CidrIndex.from_tables(by_prefix)
