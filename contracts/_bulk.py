"""The fast ways in for long rule lists that are already canonical: whole-list checks, then their indexes.

TensorLake's ``NetworkConfig`` validates and normalises its entries one by one (``classify_entry``), about
5 µs each, and OpenSandbox's ``NetworkPolicy`` its rules (``NetworkRule.from_json``). A large policy read back
from JSON is usually already canonical (``to_json`` wrote it): every entry or target is a lowercase ASCII
domain, a ``*.`` wildcard, a dotted-quad address or (TensorLake) a CIDR with its host bits clear, with no port,
no trailing dot and no ``/32``. ``canonical_entries`` and ``plain_rules`` recognise that case with checks run
over the whole list at once (one joined byte string, C-level scans and conversions); ``canonical_entries``
builds TensorLake's decision indexes from the same pass.

Neither decides anything on its own: each answers None whenever a list is short, or holds anything the
per-entry path would change or reject (a duplicate TensorLake entry is the one change made here, keeping the
first occurrence), and the caller then takes the per-entry path, which also names the first offending entry.
So the rules stay in one place (``classify_entry``, ``canonical_target``), and this module only has to accept
nothing those rules would not keep as it is; ``tests/contracts/test_tensorlake_bulk.py`` and
``tests/contracts/test_opensandbox_build.py`` check both paths agree on the same lists.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from itertools import compress, repeat
from operator import and_, itemgetter
from socket import AF_INET
from socket import inet_pton as _inet_pton
from typing import cast

from contracts._cidr import CidrIndex, prefix_mask
from contracts._domains import DomainIndex

__all__ = ["BULK_MIN", "canonical_entries", "plain_rules"]

#: Lists shorter than this take the per-entry path (the whole-list checks cost more than they save).
BULK_MIN = 256

_LABEL_BYTES = b"abcdefghijklmnopqrstuvwxyz0123456789_"
_ALLOWED = {
    "allow_out": _LABEL_BYTES + b"-./*\n",
    "deny_out": _LABEL_BYTES + b"-./\n",  # a wildcard in deny_out is an error: the per-entry path reports it
    "egress": _LABEL_BYTES + b"-.*\n",  # OpenSandbox takes no CIDR target
}
#: Label characters become ``a`` and the entry separator a dot, so ``..`` finds every empty label or entry.
_SHAPE = bytes.maketrans(_LABEL_BYTES + b"\n", b"a" * len(_LABEL_BYTES) + b".")
#: A label of at most 63 characters and a name of at most 253 follow from a name of at most 63.
_LONGEST = 63
_DIGITS = "0123456789"
_DIGIT_BYTES = _DIGITS.encode("ascii")
_PREFIXES = {str(prefix): prefix for prefix in range(32)}
_U32 = next(code for code in "IL" if array(code).itemsize == 4)
_HOST_BITS = [~prefix_mask(prefix) & 0xFFFFFFFF for prefix in range(33)]
#: Byte -> 1 for a digit, 0 otherwise: a selector for ``compress``.
_IS_DIGIT = bytes(int(byte in _DIGIT_BYTES) for byte in range(256))
_action_of = itemgetter("action")
_target_of = itemgetter("target")
_last_character = itemgetter(-1)


def _addresses(texts: list[str]) -> list[int] | None:
    """Return the integers of dotted quads, or None unless each text is a canonical one.

    ``inet_pton`` takes exactly four decimal octets of 0-255 without leading zeros (glibc, musl and the BSDs
    refuse ``01``), which is the canonical spelling; ``tests/contracts`` hold it to the per-entry rule.
    """
    try:
        packed = b"".join(map(_inet_pton, repeat(AF_INET), texts))
    except (OSError, ValueError):
        return None  # a text that is no canonical dotted quad, or one holding a NUL
    values = array(_U32, packed)
    if sys.byteorder == "little":
        values.byteswap()
    return values.tolist()


def _networks(cidrs: list[str]) -> tuple[list[int], list[int]] | None:
    """Return the networks and prefixes of canonical CIDRs below /32 with no host bits set, or None."""
    parts = "/".join(cidrs).split("/")
    if len(parts) != 2 * len(cidrs):
        return None  # some text holds more than one '/'
    try:
        prefixes = list(map(_PREFIXES.__getitem__, parts[1::2]))
    except KeyError:
        return None  # /32 is written as the bare address: not canonical, so the per-entry path rewrites it
    addresses = _addresses(parts[0::2])
    if addresses is None:
        return None
    if any(map(and_, addresses, map(_HOST_BITS.__getitem__, prefixes))):
        return None
    return addresses, prefixes


def _hyphens_inside(shape: bytes) -> bool:
    """Tell whether no label of a ``_SHAPE``-translated list starts or ends with a hyphen."""
    if b"-" not in shape:
        return True
    return not (b".-" in shape or b"-." in shape or shape.startswith(b"-") or shape.endswith(b"-"))


def _well_formed(joined: bytes, count: int, allowed: bytes) -> bool:
    """Tell whether ``count`` newline-joined entries hold only ``allowed`` bytes and are well formed.

    Well formed: no empty entry or label, no trailing dot, a ``*`` only as a whole first label (``*.``), and
    no label starting or ending with a hyphen.
    """
    if joined.count(b"\n") != count - 1 or joined.translate(None, allowed):
        return False  # an entry holding a newline, or a character no canonical entry has
    shape = joined.translate(_SHAPE)
    if b".." in shape or shape.startswith(b".") or shape.endswith(b"."):
        return False
    stars = joined.count(b"*")
    if stars and joined.count(b"\n*.") + joined.startswith(b"*.") != stars:
        return False
    return _hyphens_inside(shape)


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
    if not _well_formed(joined, count, _ALLOWED[where]):
        return None
    entries = cast("tuple[str, ...]", tuple(value))  # the join above took every one as a str
    exact: dict[str, int] = {}
    wild: dict[str, int] = {}  # by the name below the wildcard label
    ips: list[str] = []
    ips_at: list[int] = []
    cidrs: list[str] = []
    cidrs_at: list[int] = []
    add_ip, add_ip_at, add_cidr, add_cidr_at = ips.append, ips_at.append, cidrs.append, cidrs_at.append
    digits = _DIGITS
    for position, entry in enumerate(entries):  # a text listed twice is caught by the count below
        if entry[-1] in digits:  # no domain's last label is all digits; any other name goes the per-entry way
            if "/" in entry:
                add_cidr(entry)
                add_cidr_at(position)
            else:
                add_ip(entry)
                add_ip_at(position)
        elif entry[0] == "*":
            wild[entry[2:]] = position
        else:
            exact[entry] = position
    if joined.count(b"/") != len(cidrs):
        return None  # a '/' in a name
    if (exact and max(map(len, exact)) > _LONGEST) or (wild and max(map(len, wild)) > _LONGEST):
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
    if len(exact) + len(wild) + sum(map(len, by_prefix.values())) != len(entries):
        # A text listed twice (kinds never share one): drop the later copies, then the positions are right.
        return canonical_entries(tuple(dict.fromkeys(entries)), where)
    return entries, DomainIndex.from_tables(exact, wild), CidrIndex.from_tables(by_prefix)


def plain_rules(egress: Sequence[object], actions: frozenset[str]) -> tuple[list[str], list[str]] | None:
    """Return the actions and targets of a long OpenSandbox egress list of plain rules, or None.

    A plain rule is a dict of exactly ``action`` (one of ``actions``, the caller's rule) and ``target``, whose target
    ``canonical_target`` keeps as it is at once: a lowercase domain or ``*.`` wildcard of at most 63
    characters ending in no digit, or a canonical dotted quad. None means "take the per-rule path".
    """
    count = len(egress)
    if count < BULK_MIN:
        return None
    try:
        if set(map(type, egress)) != {dict}:
            return None
        items = cast("Sequence[dict[str, object]]", egress)
        if set(map(len, items)) != {2}:
            return None
        given = list(map(_action_of, items))  # a dict of two keys holding both holds nothing else
        targets = list(map(_target_of, items))
        if not actions.issuperset(given):
            return None
        joined = "\n".join(targets).encode("ascii")
    except (KeyError, TypeError, UnicodeEncodeError):
        return None  # a missing key, an unhashable action, a target that is no str or not ASCII
    if not _well_formed(joined, count, _ALLOWED["egress"]) or max(map(len, targets)) > _LONGEST:
        return None
    lasts = "".join(map(_last_character, targets)).encode("ascii")  # no target is empty (well formed)
    ends_in_digit = len(lasts.translate(None, _DIGIT_BYTES)) != count
    if ends_in_digit and _addresses(list(compress(targets, lasts.translate(_IS_DIGIT)))) is None:
        return None  # a target ending in a digit must be a canonical dotted quad
    return given, targets
