import pytest

from mockserver.core import DnsTable


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
