"""The auth table: which lifecycle paths need a key in each mode, and which tenant a key names."""

from __future__ import annotations

import pytest

from mockserver.core import ApiError
from mockserver.core.environment import DEFAULT_API_KEY
from mockserver.opensandbox.model.auth import (
    ANY_KEY,
    KeyTable,
    is_lifecycle_path,
    key_tenant,
    lifecycle_tenant,
    pinned_keys,
)

OFF = KeyTable.from_option(None)
SINGLE = KeyTable.from_option("k")
MULTI = KeyTable.from_option({"ka": "a", "kb": "b"})
ANY = KeyTable.from_option(ANY_KEY)
PROXY = "/v1/sandboxes/abc/proxy/44772/ping"


def _answer(table: KeyTable, path: str, key: str | None) -> str | None:
    """Return the tenant, or the refusal's code."""
    try:
        return lifecycle_tenant(table, path, key)
    except ApiError as exc:
        assert exc.status == 401
        return exc.code


@pytest.mark.parametrize(
    ("table", "path", "key", "answer"),
    [
        (OFF, "/v1/sandboxes", None, None),
        (OFF, PROXY, "anything", None),
        (SINGLE, "/v1/sandboxes", "k", "default"),
        (SINGLE, "/v1/sandboxes", None, "MISSING_API_KEY"),
        (SINGLE, "/v1/sandboxes", "", "MISSING_API_KEY"),
        (SINGLE, "/v1/sandboxes", "nope", "INVALID_API_KEY"),
        (SINGLE, "/health", None, None),
        (SINGLE, "/version", None, None),
        (SINGLE, "/openapi.json", None, None),
        (SINGLE, PROXY, None, None),  # the real server exempts the proxy with one key
        (SINGLE, "/sandboxes/abc/proxy/18080/policy", None, None),
        (SINGLE, "/v1/sandboxes/abc/proxy/44772/../../x", None, "MISSING_API_KEY"),
        (SINGLE, "/v1/sandboxes/abc/proxyish/44772", None, "MISSING_API_KEY"),
        (MULTI, PROXY, None, "MISSING_API_KEY"),
        (MULTI, PROXY, "kb", "b"),
        (MULTI, "/v1/sandboxes", "ka", "a"),
        (MULTI, "/v1/sandboxes", "kc", "INVALID_API_KEY"),
        (MULTI, "/health", None, None),
        (ANY, "/v1/sandboxes", "whatever", key_tenant("whatever")),
        (ANY, "/v1/sandboxes", None, "MISSING_API_KEY"),
        (ANY, PROXY, None, "MISSING_API_KEY"),
    ],
)
def test_lifecycle_auth_table(table: KeyTable, path: str, key: str | None, answer: str | None) -> None:
    assert _answer(table, path, key) == answer


def test_modes() -> None:
    assert [t.enabled for t in (OFF, SINGLE, MULTI, ANY)] == [False, True, True, True]
    assert [t.multi_tenant for t in (OFF, SINGLE, MULTI, ANY)] == [False, False, True, True]
    assert KeyTable.from_option({"only": "team"}).multi_tenant is False
    assert [t.client_key() for t in (OFF, SINGLE, MULTI, ANY)] == [None, "k", "ka", DEFAULT_API_KEY]


def test_any_key_tenants_are_per_key_and_never_the_key() -> None:
    assert key_tenant("secret-1") != key_tenant("secret-2")
    assert "secret" not in key_tenant("secret-1") and key_tenant("secret-1") == key_tenant("secret-1")


def test_empty_keys_are_refused_at_configuration() -> None:
    with pytest.raises(ValueError):
        KeyTable.from_option("")
    with pytest.raises(ValueError):
        KeyTable.from_option({"": "a"})


def test_pinned_keys_of_a_standalone_server() -> None:
    assert pinned_keys([]) is ANY_KEY
    one = KeyTable.from_option(pinned_keys(["k"]))
    assert not one.multi_tenant and one.tenant_of("k") == key_tenant("k")
    two = KeyTable.from_option(pinned_keys(["k1", "k2"]))
    assert two.multi_tenant and {two.tenant_of("k1"), two.tenant_of("k2")} == {key_tenant("k1"), key_tenant("k2")}


def test_admin_and_direct_paths_are_not_the_lifecycle_servers() -> None:
    assert is_lifecycle_path("/v1/sandboxes") and is_lifecycle_path(PROXY)
    assert not is_lifecycle_path("/_mock/reset") and not is_lifecycle_path("/direct/abc/44772/ping")
