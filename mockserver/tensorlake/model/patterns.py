"""The ECMA-262 patterns the OpenAPI document gives a network policy's entries, built from their definition.

An ``allow_out`` entry is an IPv4 address, an IPv4 CIDR with no host bits set, a domain or a ``*.`` wildcard
domain; a ``deny_out`` entry the same without wildcards (the reference policy, :mod:`contracts.tensorlake`,
is the rule; these patterns describe exactly what it accepts, which a property test checks).
"""

from __future__ import annotations

__all__ = ["ALLOW_ENTRY", "DENY_ENTRY", "aligned_cidr"]

OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
IPV4 = rf"{OCTET}(?:\.{OCTET}){{3}}"
LABEL = "[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
#: A domain of at most 253 characters whose last label is not all digits.
DOMAIN = rf"(?=.{{1,253}}$)(?!(?:.*\.)?[0-9]+$)(?:{LABEL}\.)*{LABEL}"


def _octet_at(prefix: int) -> str:
    """Return the alternatives of the octet a prefix of 1-7 bits cuts (longer numbers first, for the regex)."""
    step = 1 << (8 - prefix)
    values = sorted(range(0, 256, step), key=lambda v: (-len(str(v)), v))
    return "(?:" + "|".join(str(v) for v in values) + ")"


def aligned_cidr(prefix: int) -> str:
    """Return the pattern of the CIDRs of one prefix length whose host bits are all zero."""
    whole, part = divmod(prefix, 8)
    octets = [OCTET] * whole
    if whole < 4:
        octets.append(_octet_at(part) if part else "0")
        octets += ["0"] * (3 - whole)
    return r"\.".join(octets) + f"/{prefix}"


CIDR = "(?:" + "|".join(aligned_cidr(prefix) for prefix in range(33)) + ")"
ALLOW_ENTRY = rf"^(?:{IPV4}|{CIDR}|\*\.{DOMAIN}|{DOMAIN})$"
DENY_ENTRY = rf"^(?:{IPV4}|{CIDR}|{DOMAIN})$"
