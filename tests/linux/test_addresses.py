"""The private address plan: /31 links never overlap, infrastructure ranges never become world hosts."""

from __future__ import annotations

import ipaddress

import pytest

from mockserver.linux.addresses import LINK_NET, MAX_LINKS, RESOLVER, is_servable, link_for


def test_links_are_distinct_point_to_point_pairs() -> None:
    seen: set[str] = set()
    for index in (0, 1, 2, 4095, MAX_LINKS - 1):
        link = link_for(index)
        gateway, address = ipaddress.IPv4Address(link.gateway), ipaddress.IPv4Address(link.address)
        assert int(address) == int(gateway) + 1 and int(gateway) % 2 == 0
        assert gateway in LINK_NET and address in LINK_NET
        assert not {link.gateway, link.address} & seen
        seen |= {link.gateway, link.address}
    with pytest.raises(ValueError):
        link_for(MAX_LINKS)


@pytest.mark.parametrize(
    ("address", "servable"),
    [
        ("192.0.2.1", True),
        ("10.1.2.3", True),
        ("8.8.8.8", True),
        ("127.0.0.1", False),
        (RESOLVER, False),
        ("100.96.0.1", False),
        ("169.254.1.1", False),
        ("224.0.0.1", False),
        ("255.255.255.255", False),
        ("0.0.0.0", False),
        ("not-an-ip", False),
    ],
)
def test_servable_addresses(address: str, servable: bool) -> None:
    assert is_servable(address) is servable
