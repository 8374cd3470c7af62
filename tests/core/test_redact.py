"""Secret redaction shared by the journal and the cassettes."""

from __future__ import annotations

import json

from mockserver.core.redact import REDACTED, is_secret_key, redact_headers, redact_json, redact_query, redact_text


def test_credential_headers_are_hidden_and_names_lower_cased() -> None:
    headers = redact_headers(
        [
            ("Authorization", "Bearer k"),
            ("OPEN-SANDBOX-API-KEY", "k"),
            ("X-EXECD-ACCESS-TOKEN", "t"),
            ("OPENSANDBOX-EGRESS-AUTH", "e"),
            ("Set-Cookie", "tl.session_token=s"),
            ("Content-Type", "application/json"),
        ]
    )
    assert headers == {
        "authorization": REDACTED,
        "open-sandbox-api-key": REDACTED,
        "x-execd-access-token": REDACTED,
        "opensandbox-egress-auth": REDACTED,
        "set-cookie": REDACTED,
        "content-type": "application/json",
    }


def test_nested_secret_strings_are_hidden_but_names_and_shapes_kept() -> None:
    body = {
        "image": {"uri": "reg/x", "auth": {"username": "me", "password": "hunter2"}},
        "endpoint": "h:1/p",
        "headers": {"X-EXECD-ACCESS-TOKEN": "tok"},
        "secret_names": ["db"],
        "items": [{"apiKey": "k", "n": 1}],
        "secureAccess": True,
    }
    assert redact_json(body) == {
        "image": {"uri": "reg/x", "auth": {"username": "me", "password": REDACTED}},
        "endpoint": "h:1/p",
        "headers": {"X-EXECD-ACCESS-TOKEN": REDACTED},
        "secret_names": ["db"],
        "items": [{"apiKey": REDACTED, "n": 1}],
        "secureAccess": True,
    }


def test_text_and_query_are_rewritten_only_when_they_hold_a_secret() -> None:
    plain = '{"a": 1,  "b": "x"}'
    assert redact_text(plain) is plain
    assert redact_text("not json token=1") == "not json token=1"
    assert json.loads(redact_text('{"token": "t"}')) == {"token": REDACTED}
    assert redact_query("page=1&pageSize=2") == "page=1&pageSize=2"
    assert redact_query("page=1&api_key=k") == f"page=1&api_key={REDACTED.replace('<', '%3C').replace('>', '%3E')}"
    assert is_secret_key("registryPassword") and not is_secret_key("metadata")
