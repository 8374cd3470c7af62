import hashlib
import ipaddress

import pytest

from mockserver.core import DnsTable, dns


def test_explicit_entries_win_and_are_case_insensitive() -> None:
    table = DnsTable({"API.Example.com.": ["10.1.2.3"]})
    assert table.resolve("api.example.com") == ["10.1.2.3"]


def test_synthetic_default_is_stable_and_in_the_benchmark_range() -> None:
    table = DnsTable()
    first = table.resolve("foo.example.org")
    assert first == table.resolve("FOO.example.org")
    assert first[0].startswith(("198.18.", "198.19."))
    assert table.resolve("bar.example.org") != first


def test_unresolvable_names() -> None:
    table = DnsTable({"gone.example.com": []})
    assert table.resolve("gone.example.com") == []
    assert table.resolve("anything.invalid") == []
    assert DnsTable(default="nxdomain").resolve("foo.example.org") == []


def test_ip_literals_resolve_to_themselves() -> None:
    assert DnsTable(default="nxdomain").resolve("1.2.3.4") == ["1.2.3.4"]


def test_rejects_bad_addresses_and_round_trips() -> None:
    table = DnsTable()
    with pytest.raises(ValueError):
        table.update({"x.com": ["not-an-ip"]})
    table.update({"x.com": ["1.1.1.1"]})
    copy = DnsTable(default="nxdomain")
    copy.load(table.dump())
    assert copy.resolve("x.com") == ["1.1.1.1"]
    assert copy.default == "synthetic"


def _first_choice(name: str) -> str:
    """The address the table hashed every name to before it allocated them (now only the first choice)."""
    digest = hashlib.sha256(name.encode()).digest()
    return f"198.{18 + (digest[0] & 1)}.{digest[1]}.{max(1, digest[2])}"


@pytest.mark.parametrize("first", ["blocked.example", "c40423.wild.example"])
def test_names_whose_hashes_collide_get_addresses_of_their_own(first: str) -> None:
    # Found by a sandbox: *.wild.example allowed, blocked.example blocked, one address for both.
    assert _first_choice("blocked.example") == _first_choice("c40423.wild.example")
    table = DnsTable()
    second = "c40423.wild.example" if first == "blocked.example" else "blocked.example"
    a, b = table.resolve(first), table.resolve(second)
    assert a == [_first_choice(first)]  # the first comer keeps the address it always had
    assert len(b) == 1 and b != a and ipaddress.IPv4Address(b[0]) in dns.SYNTHETIC_NET
    assert (table.resolve(first), table.resolve(second.upper())) == (a, b)  # stable while the table lives
    assert (table.holder(a[0]), table.holder(b[0])) == (first, second)


def test_many_names_never_share_an_address() -> None:
    table = DnsTable()
    names = [f"n{i}.wild.example" for i in range(20_000)]
    addresses = [table.resolve(name)[0] for name in names]
    assert len(set(addresses)) == len(names)
    assert not any(a.endswith(".0") for a in addresses)


def test_an_explicit_entry_on_a_synthetic_address_takes_it_over() -> None:
    table = DnsTable()
    (taken,) = table.resolve("synth.example")
    table.update({"listed.example": [taken]})
    assert table.resolve("listed.example") == [taken]
    moved = table.resolve("synth.example")
    assert moved != [taken] and table.holder(moved[0]) == "synth.example"
    assert table.resolve("newcomer.example") != [taken]


def test_a_full_range_answers_nothing_rather_than_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dns, "SYNTHETIC_CAPACITY", 3)
    table = DnsTable()
    held = [table.resolve(f"h{i}.example") for i in range(3)]
    assert all(held) and table.resolve("one-too-many.example") == []
    assert table.resolve("h0.example") == held[0]
