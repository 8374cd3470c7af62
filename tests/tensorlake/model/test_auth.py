"""Bearer keys, the accepted key set, tenants and session cookies, without HTTP."""

from __future__ import annotations

import pytest

from mockserver.core.errors import ApiError
from mockserver.tensorlake.model.auth import KeyRing, Tenant, bearer_key, parse_cookies, session_token, tenant_of
from mockserver.tensorlake.model.records import owner_id


@pytest.mark.parametrize(
    ("header", "key"),
    [
        ("Bearer k1", "k1"),
        ("bearer  k1 ", "k1"),
        ("BEARER k1", "k1"),
        ("Bearer ", None),
        ("Bearer", None),
        ("Basic dTpw", None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_key(header: str | None, key: str | None) -> None:
    assert bearer_key(header) == key


def test_a_key_ring_accepts_any_key_or_only_its_own() -> None:
    assert KeyRing().accepts("anything")
    pinned = KeyRing.of(["a", "b"])
    assert pinned.accepts("a") and not pinned.accepts("c")
    assert pinned.to_json() == {"api_keys": ["a", "b"]} and KeyRing().to_json() == {"api_keys": None}


def test_the_tenant_is_the_key_owner_in_the_path_namespace() -> None:
    assert tenant_of("Bearer k", "ns1", KeyRing()) == Tenant(owner_id("k"), "ns1")
    assert owner_id("k") != owner_id("k2") and "k" not in owner_id("k")


@pytest.mark.parametrize(
    ("header", "keys", "code"),
    [
        (None, KeyRing(), "unauthorized"),
        ("Token k", KeyRing(), "unauthorized"),
        ("Bearer k", KeyRing.of(["other"]), "invalid_api_key"),
    ],
)
def test_lifecycle_auth_refusals_are_401(header: str | None, keys: KeyRing, code: str) -> None:
    with pytest.raises(ApiError) as caught:
        tenant_of(header, "default", keys)
    assert (caught.value.status, caught.value.code) == (401, code)


def test_cookies_and_the_session_token() -> None:
    cookies = parse_cookies("theme=dark; tl-session=old; tl.session_token=new ;lang=en;flag")
    assert cookies == {"theme": "dark", "tl-session": "old", "tl.session_token": "new", "lang": "en", "": "flag"}
    assert session_token(cookies) == "new"
    assert session_token({"tl-session": "old"}) == "old"
    assert session_token({"tl.session_token": ""}) is None
    assert parse_cookies(None) == {}
