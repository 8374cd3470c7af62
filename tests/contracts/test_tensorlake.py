"""Tests for the TensorLake reference egress policy: the docs' table and examples, errors, properties."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts._naive import decide_dns_naive, decide_egress_naive
from contracts.tensorlake import (
    CODES,
    Decision,
    NetworkConfig,
    PolicyError,
    apply_network_update,
    classify_entry,
    decide_dns,
    decide_egress,
    resolvable_hostnames,
)
from contracts.tensorlake_adapter import reference_engine
from harness.policy.tensorlake.checks import (
    allow_entries,
    cidrs,
    decorated_networks,
    deny_entries,
    destinations,
    domains,
    egress_cases,
    ipv4s,
)

WEB = "93.184.215.14"
RESOLVER = "8.8.8.8"


def cfg(internet: bool = True, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> NetworkConfig:
    return NetworkConfig(internet, allow, deny)


def resolve_all(name: str) -> list[str]:
    return ["192.0.2.10"]


# --- the four-row table ---------------------------------------------------------------------------------

TABLE_ROWS = {
    "open": cfg(True),
    "allowlist+dns": cfg(True, ("api.example.com", "10.0.0.0/8")),
    "allowlist-dns": cfg(False, ("api.example.com", "10.0.0.0/8")),
    "blocked": cfg(False),
}

# (row, host, ip, egress allowed)
TABLE_EGRESS = [
    ("open", "example.com", WEB, True),
    ("open", None, "10.1.2.3", True),
    ("open", "api.example.com", WEB, True),
    ("allowlist+dns", "api.example.com", WEB, True),
    ("allowlist+dns", None, "10.1.2.3", True),
    ("allowlist+dns", "example.com", WEB, False),
    ("allowlist+dns", None, "11.0.0.1", False),
    ("allowlist-dns", "api.example.com", WEB, True),
    ("allowlist-dns", None, "10.255.255.255", True),
    ("allowlist-dns", "other.org", WEB, False),
    ("blocked", "api.example.com", WEB, False),
    ("blocked", None, "10.1.2.3", False),
]

# (row, resolver, DNS allowed)
TABLE_DNS = [
    ("open", RESOLVER, True),
    ("allowlist+dns", RESOLVER, True),
    ("allowlist-dns", RESOLVER, False),
    ("allowlist-dns", "10.0.0.2", True),
    ("blocked", RESOLVER, False),
    ("blocked", "10.0.0.2", False),
]


@pytest.mark.parametrize(("row", "host", "ip", "allowed"), TABLE_EGRESS)
def test_table_egress(row: str, host: str | None, ip: str | None, allowed: bool) -> None:
    decision = decide_egress(TABLE_ROWS[row], host=host, ip=ip)
    assert decision.allowed is allowed
    assert decision == decide_egress_naive(TABLE_ROWS[row], host=host, ip=ip)


@pytest.mark.parametrize(("row", "resolver", "allowed"), TABLE_DNS)
def test_table_dns(row: str, resolver: str, allowed: bool) -> None:
    decision = decide_dns(TABLE_ROWS[row], resolver)
    assert decision.allowed is allowed
    assert decision == decide_dns_naive(TABLE_ROWS[row], resolver)


@pytest.mark.parametrize(
    ("config", "host", "ip", "reason"),
    [
        (None, "example.com", None, "no network policy: egress unrestricted"),
        (cfg(True), "example.com", None, "allow_internet_access=true with empty allow_out: egress open"),
        (cfg(False), "example.com", None, "all egress blocked"),
        (cfg(True, ("a.com",)), "b.com", None, "default-deny"),
        (cfg(True, ("*.example.com", "api.example.com")), "api.example.com", None, "allow_out entry '*.example.com'"),
        (cfg(True, ("10.0.0.0/8",), ("10.1.0.0/16",)), None, "10.1.0.1", "deny_out entry '10.1.0.0/16'"),
    ],
)
def test_reason_names_the_rule_or_row(config: NetworkConfig | None, host: str, ip: str | None, reason: str) -> None:
    assert reason in decide_egress(config, host=host, ip=ip).reason


@pytest.mark.parametrize(
    ("config", "resolver", "allowed", "reason"),
    [
        (cfg(False, ("1.1.1.1",)), "1.1.1.1", True, "allow_out entry '1.1.1.1'"),
        (cfg(False, ("1.1.1.1",)), "1.1.1.2", False, "not in allow_out"),
        (cfg(True, ("api.example.com",)), "1.1.1.1", True, "DNS to the resolvers allowed"),
        (cfg(True, (), ("1.1.1.0/24",)), "1.1.1.1", False, "deny_out entry '1.1.1.0/24'"),
        (cfg(True, ("1.1.1.1",), ("1.1.1.1",)), "1.1.1.1", False, "deny_out"),
        (cfg(False, ("10.0.0.0/8",), ("10.0.0.2",)), "10.0.0.2", False, "deny_out entry '10.0.0.2'"),
        (cfg(True, ("api.example.com",), ("api.example.com",)), "1.1.1.1", True, "resolvers allowed"),
    ],
)
def test_dns_decisions_and_deny(config: NetworkConfig, resolver: str, allowed: bool, reason: str) -> None:
    decision = decide_dns(config, resolver)
    assert decision.allowed is allowed
    assert reason in decision.reason


# --- the docs' examples ---------------------------------------------------------------------------------

DOCS_ALLOW = cfg(True, ("example.com", "*.example.com", "203.0.113.10", "10.0.0.0/8"))


@pytest.mark.parametrize(
    ("config", "host", "ip", "allowed"),
    [
        (cfg(True, ("*.example.com",)), "api.example.com", None, True),
        (cfg(True, ("*.example.com",)), "v1.api.example.com", None, True),
        (cfg(True, ("*.example.com",)), "example.com", None, False),
        (cfg(True, ("*.example.com",)), "badexample.com", None, False),
        (cfg(True, ("*.example.com",)), "example.com.evil.org", None, False),
        (DOCS_ALLOW, "example.com", WEB, True),
        (DOCS_ALLOW, "api.example.com", WEB, True),
        (DOCS_ALLOW, None, "203.0.113.10", True),
        (DOCS_ALLOW, None, "203.0.113.11", False),
        (DOCS_ALLOW, None, "10.0.0.0", True),
        (DOCS_ALLOW, None, "9.255.255.255", False),
        (DOCS_ALLOW, "cdn.example.net", "10.9.9.9", True),
        (DOCS_ALLOW, "example.org", WEB, False),
        (cfg(True, (), ("example.com",)), "example.com", WEB, False),
        (cfg(True, (), ("example.com",)), "api.openai.com", "162.159.140.245", True),
        (cfg(True, ("example.com",), ("example.com",)), "example.com", WEB, False),
        (cfg(True, ("api.example.com",)), "api.example.com", "1.2.3.4", True),
        (cfg(True, ("api.example.com",)), "api.example.com", "5.6.7.8", True),
        (cfg(True, ("api.example.com",), ("5.6.7.8",)), "api.example.com", "5.6.7.8", False),
        (cfg(True, ("Example.COM",)), "EXAMPLE.com.", None, True),
        (cfg(True, ("bücher.example",)), "xn--bcher-kva.example", None, True),
        (cfg(True, ("xn--bcher-kva.example",)), "BÜCHER.example", None, True),
        (cfg(True, ("10.0.0.0/8",)), "10.1.2.3", None, True),
        (cfg(True, ("example.com",)), "93.184.215.14", "93.184.215.14", False),
        (cfg(True, ("0.0.0.0/0",)), None, "255.255.255.255", True),
        (cfg(True, ("example.com",)), "example.com", "2001:db8::1", True),
        (cfg(True, ("10.0.0.0/8",)), None, "2001:db8::1", False),
        (None, None, "10.0.0.1", True),
    ],
)
def test_docs_examples(config: NetworkConfig | None, host: str | None, ip: str | None, allowed: bool) -> None:
    assert decide_egress(config, host=host, ip=ip).allowed is allowed
    assert decide_egress_naive(config, host=host, ip=ip).allowed is allowed


def test_a_destination_needs_a_host_or_an_ip() -> None:
    with pytest.raises(ValueError, match="host, an ip"):
        decide_egress(cfg(), host=None, ip=None)
    with pytest.raises(ValueError, match="not an IPv4"):
        decide_egress(cfg(), ip="not-an-ip")
    with pytest.raises(ValueError):
        decide_dns(cfg(), "999.0.0.1")


# --- validation and normalisation -----------------------------------------------------------------------


INVALID_POLICIES: list[tuple[Any, str, str]] = [
    ([], "invalid_type", "network must be an object"),
    ({"allow_internet_access": "false"}, "invalid_type", "allow_internet_access"),
    ({"allow_internet_access": 1}, "invalid_type", "allow_internet_access"),
    ({"allow_out": "example.com"}, "invalid_type", "allow_out"),
    ({"deny_out": None}, "invalid_type", "deny_out"),
    ({"allow_out": [], "allowOut": []}, "unknown_key", "allowOut"),
    ({"allow_out": ["ok.com", 42]}, "non_string_entry", "42"),
    ({"allow_out": [None]}, "non_string_entry", "None"),
    ({"deny_out": [""]}, "empty_entry", "''"),
    ({"allow_out": ["  "]}, "empty_entry", "'  '"),
    ({"allow_out": ["::1"]}, "ipv6_not_supported", "'::1'"),
    ({"deny_out": ["2001:db8::/32"]}, "ipv6_not_supported", "2001:db8::/32"),
    ({"allow_out": ["[::1]:443"]}, "ipv6_not_supported", "[::1]:443"),
    ({"allow_out": ["example.com:0"]}, "invalid_port", "example.com:0"),
    ({"allow_out": ["example.com:https"]}, "invalid_port", "example.com:https"),
    ({"allow_out": ["1.2.3.4:70000"]}, "invalid_port", "1.2.3.4:70000"),
    ({"allow_out": ["256.1.1.1"]}, "invalid_ip", "256.1.1.1"),
    ({"allow_out": ["1.2.3"]}, "invalid_ip", "'1.2.3'"),
    ({"allow_out": ["01.2.3.4"]}, "invalid_ip", "01.2.3.4"),
    ({"allow_out": ["10.0.0.0/33"]}, "invalid_cidr", "10.0.0.0/33"),
    ({"allow_out": ["10.0.0.1/8"]}, "invalid_cidr", "host bits"),
    ({"deny_out": ["10.0.0.0/"]}, "invalid_cidr", "10.0.0.0/"),
    ({"allow_out": ["10.0.0/8"]}, "invalid_cidr", "10.0.0/8"),
    ({"allow_out": ["example.com/24"]}, "invalid_cidr", "example.com/24"),
    ({"allow_out": ["*"]}, "invalid_wildcard", "'*'"),
    ({"allow_out": ["api.*.example.com"]}, "invalid_wildcard", "api.*.example.com"),
    ({"allow_out": ["*example.com"]}, "invalid_wildcard", "*example.com"),
    ({"allow_out": ["*.*.example.com"]}, "invalid_wildcard", "*.*.example.com"),
    ({"allow_out": ["*.exa mple.com"]}, "invalid_wildcard", "*.exa mple.com"),
    ({"deny_out": ["*.example.com"]}, "wildcard_in_deny", "deny_out '*.example.com'"),
    ({"allow_out": ["exa mple.com"]}, "invalid_domain", "exa mple.com"),
    ({"allow_out": ["-bad.com"]}, "invalid_domain", "-bad.com"),
    ({"allow_out": ["a..b.com"]}, "invalid_domain", "a..b.com"),
    ({"allow_out": ["x" * 64 + ".com"]}, "invalid_domain", "xxxx"),
    ({"allow_out": [("a" * 60 + ".") * 5 + "com"]}, "invalid_domain", "longer than 253"),
    ({"allow_out": ["1.2.3.com1", "com.123"]}, "invalid_domain", "com.123"),
    ({"allow_out": ["xn--.com"]}, "invalid_domain", "xn--.com"),
    ({"allow_out": ["a\u200db.com"]}, "invalid_domain", "IDNA"),
]


@pytest.mark.parametrize(("network", "code", "named"), INVALID_POLICIES)
def test_invalid_policies_raise_a_stable_code(network: Any, code: str, named: str) -> None:
    with pytest.raises(PolicyError) as caught:
        NetworkConfig.from_json(network)
    assert caught.value.code == code
    assert named in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_every_code_is_exercised() -> None:
    patch_codes = {"invalid_patch", "unresolvable_host"}  # covered by the PATCH tests below
    assert {code for _, code, _ in INVALID_POLICIES} | patch_codes == CODES


@pytest.mark.parametrize(
    ("raw", "kind", "canonical"),
    [
        ("Example.COM", "domain", "example.com"),
        ("example.com.", "domain", "example.com"),
        ("  api.example.com ", "domain", "api.example.com"),
        ("api.example.com:443", "domain", "api.example.com"),
        ("Bücher.Example", "domain", "xn--bcher-kva.example"),
        ("пример.испытание", "domain", "xn--e1afmkfd.xn--80akhbyknj4f"),
        ("*.Example.COM.", "wildcard", "*.example.com"),
        ("*.bücher.example", "wildcard", "*.xn--bcher-kva.example"),
        ("_dmarc.example.com", "domain", "_dmarc.example.com"),
        ("localhost", "domain", "localhost"),
        ("203.0.113.10", "ip", "203.0.113.10"),
        ("203.0.113.10:8080", "ip", "203.0.113.10"),
        ("203.0.113.10/32", "ip", "203.0.113.10"),
        ("10.0.0.0/8", "cidr", "10.0.0.0/8"),
        ("0.0.0.0/0", "cidr", "0.0.0.0/0"),
    ],
)
def test_entries_are_normalised(raw: str, kind: str, canonical: str) -> None:
    assert classify_entry(raw) == (kind, canonical)


def test_from_json_defaults_dedupes_and_round_trips() -> None:
    config = NetworkConfig.from_json({"allow_out": ["B.com", "a.com", "b.com.", "1.2.3.4/32", "1.2.3.4"]})
    assert config == NetworkConfig(True, ("b.com", "a.com", "1.2.3.4"), ())
    assert config.to_json() == {
        "allow_internet_access": True,
        "allow_out": ["b.com", "a.com", "1.2.3.4"],
        "deny_out": [],
    }
    assert NetworkConfig.from_json({}) == NetworkConfig()
    assert NetworkConfig.from_json(config.to_json()) == config


def test_config_is_immutable_and_hashable() -> None:
    config = NetworkConfig(True, ["a.com"], ())  # type: ignore[arg-type]
    assert config.allow_out == ("a.com",)
    assert hash(config) == hash(NetworkConfig(True, ("A.com",)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.allow_internet_access = False  # type: ignore[misc]
    with pytest.raises(PolicyError):
        NetworkConfig(True, "a.com")  # type: ignore[arg-type]
    decision = decide_egress(config, host="a.com")
    assert decision == Decision(True, "allow_out entry 'a.com'")
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.allowed = False  # type: ignore[misc]


def test_the_index_is_built_once_per_config() -> None:
    config = cfg(True, ("a.com", "*.b.com", "10.0.0.0/8", "1.2.3.4"), ("c.com", "10.1.0.0/16"))
    index = config.index()
    assert config.index() is index
    assert (len(index.allow_domains), len(index.allow_ips), len(index.deny_domains), len(index.deny_ips)) == (
        2,
        2,
        1,
        1,
    )


# --- PATCH tri-state ------------------------------------------------------------------------------------

CURRENT = cfg(False, ("api.example.com",), ("10.0.0.0/8",))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, CURRENT),
        ({"name": "renamed", "exposed_ports": [8080]}, CURRENT),
        ({"network": None}, None),
        ({"network": {}}, NetworkConfig()),
        ({"network": {"allow_internet_access": False}}, cfg(False)),
        ({"network": {"allow_out": ["1.1.1.1"], "deny_out": ["evil.com"]}}, cfg(True, ("1.1.1.1",), ("evil.com",))),
        ({"network": {"deny_out": ["Evil.COM"]}}, cfg(True, (), ("evil.com",))),
    ],
)
def test_patch_tri_state(body: dict[str, Any], expected: NetworkConfig | None) -> None:
    assert apply_network_update(CURRENT, body, resolve_all) == expected
    assert apply_network_update(None, {"name": "x"}, resolve_all) is None


def test_unresolvable_hostname_rejects_the_update() -> None:
    def resolve(name: str) -> list[str]:
        return [] if name == "nx.example.com" else ["192.0.2.1"]

    body = {"network": {"allow_out": ["api.example.com", "*.example.com"], "deny_out": ["nx.example.com"]}}
    with pytest.raises(PolicyError) as caught:
        apply_network_update(CURRENT, body, resolve)
    assert caught.value.code == "unresolvable_host"
    assert "nx.example.com" in str(caught.value)


def test_resolver_oserror_counts_as_unresolvable() -> None:
    def resolve(name: str) -> list[str]:
        raise OSError("no such host")

    with pytest.raises(PolicyError, match="cannot be resolved"):
        apply_network_update(None, {"network": {"allow_out": ["a.example"]}}, resolve)


def test_wildcards_and_addresses_are_not_resolved() -> None:
    asked: list[str] = []

    def resolve(name: str) -> list[str]:
        asked.append(name)
        return ["192.0.2.1"] if name != "gone.example" else []

    body = {"network": {"allow_out": ["*.example.com", "10.0.0.0/8", "1.2.3.4", "API.example.com", "api.example.com"]}}
    result = apply_network_update(None, body, resolve)
    assert result == cfg(True, ("*.example.com", "10.0.0.0/8", "1.2.3.4", "api.example.com"))
    assert asked == ["api.example.com"]
    assert resolvable_hostnames(cfg(True, ("*.a.com", "b.com"), ("c.com", "b.com", "1.1.1.1"))) == ("b.com", "c.com")


@pytest.mark.parametrize("body", [None, [], "network"])
def test_patch_body_must_be_an_object(body: Any) -> None:
    with pytest.raises(PolicyError) as caught:
        apply_network_update(CURRENT, body, resolve_all)
    assert caught.value.code == "invalid_patch"


def test_invalid_replacement_policy_is_rejected() -> None:
    with pytest.raises(PolicyError) as caught:
        apply_network_update(CURRENT, {"network": {"deny_out": ["*.x.com"]}}, resolve_all)
    assert caught.value.code == "wildcard_in_deny"
    with pytest.raises(PolicyError) as caught:
        apply_network_update(CURRENT, {"network": "off"}, resolve_all)
    assert caught.value.code == "invalid_type"


# --- adapter --------------------------------------------------------------------------------------------


def test_adapter_speaks_plain_json() -> None:
    engine = reference_engine
    assert engine.kind == "tensorlake"
    network = {"allow_internet_access": False, "allow_out": ["8.8.8.8", "*.example.com"]}
    engine.validate(network)
    with pytest.raises(ValueError):
        engine.validate({"deny_out": ["*.example.com"]})
    assert engine.allows_egress(network, "api.example.com", None)
    assert not engine.allows_egress(network, "example.com", "1.1.1.1")
    assert engine.allows_egress(None, "anything.org", None)
    assert engine.allows_dns(network, "8.8.8.8")
    assert not engine.allows_dns(network, "1.1.1.1")
    assert engine.apply_update(None, {"network": network}, resolve_all) == {**network, "deny_out": []}
    assert engine.apply_update(network, {"network": None}, resolve_all) is None
    assert engine.apply_update(network, {}, resolve_all) == {**network, "deny_out": []}
    with pytest.raises(ValueError):
        engine.apply_update(None, {"network": {"allow_out": ["nx.invalid"]}}, lambda name: [])


# --- properties -----------------------------------------------------------------------------------------


def _config(network: dict[str, Any]) -> NetworkConfig:
    return NetworkConfig.from_json(network)


@given(egress_cases())
def test_index_agrees_with_the_naive_scan(case: tuple[dict[str, Any], str | None, str | None]) -> None:
    network, host, ip = case
    config = _config(network)
    assert decide_egress(config, host=host, ip=ip) == decide_egress_naive(config, host=host, ip=ip)
    if ip is not None:
        assert decide_dns(config, ip) == decide_dns_naive(config, ip)


@st.composite
def _domain_cases(draw: st.DrawFn) -> tuple[dict[str, Any], str | None, str | None]:
    wildcards = domains().map(lambda d: "*." + d)
    allow = draw(st.lists(st.one_of(wildcards, wildcards, domains()), min_size=1, max_size=4))
    deny = draw(st.lists(domains(), max_size=2))
    network = {"allow_internet_access": draw(st.booleans()), "allow_out": allow, "deny_out": deny}
    host, _ = draw(destinations(network))
    return network, host or draw(domains()), None


@given(_domain_cases())
def test_index_agrees_with_the_naive_scan_on_domain_rules(case: tuple[dict[str, Any], str | None, str | None]) -> None:
    network, host, ip = case
    config = _config(network)
    assert decide_egress(config, host=host, ip=ip) == decide_egress_naive(config, host=host, ip=ip)


@st.composite
def _big_cases(draw: st.DrawFn) -> tuple[dict[str, Any], str | None, str | None]:
    allow = draw(st.lists(allow_entries(), min_size=10, max_size=30))
    deny = draw(st.lists(deny_entries(), max_size=10))
    network = {"allow_internet_access": draw(st.booleans()), "allow_out": allow, "deny_out": deny}
    host, ip = draw(destinations(network))
    return network, host, ip


@given(_big_cases())
def test_index_agrees_with_the_naive_scan_on_larger_rule_sets(
    case: tuple[dict[str, Any], str | None, str | None],
) -> None:
    network, host, ip = case
    config = _config(network)
    assert decide_egress(config, host=host, ip=ip) == decide_egress_naive(config, host=host, ip=ip)


@given(egress_cases(), deny_entries())
def test_deny_wins_and_never_allows_more(case: tuple[dict[str, Any], str | None, str | None], extra: str) -> None:
    network, host, ip = case
    config = _config(network)
    target = host if host is not None else ip
    assert target is not None
    both = NetworkConfig(config.allow_internet_access, (*config.allow_out, target.lower()), (*config.deny_out, target))
    assert not decide_egress(both, host=host, ip=ip).allowed
    more = NetworkConfig(config.allow_internet_access, config.allow_out, (*config.deny_out, extra))
    if decide_egress(more, host=host, ip=ip).allowed:
        assert decide_egress(config, host=host, ip=ip).allowed
    if ip is not None and decide_dns(more, ip).allowed:
        assert decide_dns(config, ip).allowed


@given(egress_cases(min_allow=1), allow_entries())
def test_adding_to_a_non_empty_allow_out_never_allows_less(
    case: tuple[dict[str, Any], str | None, str | None], extra: str
) -> None:
    network, host, ip = case
    config = _config(network)
    more = NetworkConfig(config.allow_internet_access, (*config.allow_out, extra), config.deny_out)
    if decide_egress(config, host=host, ip=ip).allowed:
        assert decide_egress(more, host=host, ip=ip).allowed
    if ip is not None and decide_dns(config, ip).allowed:
        assert decide_dns(more, ip).allowed


@given(domains(), st.sampled_from(["a", "api", "v1"]), st.sampled_from(["b", "cdn"]), st.booleans())
def test_wildcard_matches_every_depth_but_not_the_apex(domain: str, p: str, q: str, internet: bool) -> None:
    config = NetworkConfig(internet, ("*." + domain,))
    assert decide_egress(config, host=f"{p}.{domain}").allowed
    assert decide_egress(config, host=f"{q}.{p}.{domain}").allowed
    assert not decide_egress(config, host=domain).allowed
    assert not decide_egress(config, host=f"{p}{domain}").allowed


@given(decorated_networks())
def test_to_json_round_trips(network: dict[str, Any]) -> None:
    config = _config(network)
    assert NetworkConfig.from_json(config.to_json()) == config
    assert config.to_json() == _config(config.to_json()).to_json()


@given(ipv4s, cidrs)
def test_cidr_rules_cover_exactly_their_range(ip: str, cidr: str) -> None:
    base, _, prefix = cidr.partition("/")
    config = NetworkConfig(True, (cidr,))
    size = 1 << (32 - int(prefix))
    start = int.from_bytes(bytes(int(o) for o in base.split(".")))
    value = int.from_bytes(bytes(int(o) for o in ip.split(".")))
    assert decide_egress(config, ip=ip).allowed is (start <= value < start + size)
