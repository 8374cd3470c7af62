"""Which request and response parts are secrets, and how they are hidden: one rule for the journal and cassettes.

Headers: the credential headers of both providers and their SDKs (``Authorization``, cookies, the OpenSandbox
API key, the execd access token, the egress sidecar token, the secure-access token). JSON bodies and query
strings: a string value under a key that names a secret (``password``, ``token``, ``apiKey``, ``secret``, ...),
wherever it is nested, e.g. a registry password in ``image.auth.password`` or the token in an endpoint's
``headers``. Lists and objects under such keys (``secret_names``: names, not values) are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

__all__ = [
    "REDACTED",
    "SECRET_HEADERS",
    "is_secret_key",
    "redact_headers",
    "redact_json",
    "redact_query",
    "redact_text",
]

REDACTED = "<redacted>"
#: Header names (lower case) whose values are credentials.
SECRET_HEADERS: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "open-sandbox-api-key",
        "x-api-key",
        "x-execd-access-token",
        "opensandbox-egress-auth",
        "opensandbox-secure-access",
    }
)
_SECRET_KEY = re.compile(r"password|passwd|secret|token|api[-_]?key|authorization|cookie|credential|egress-auth", re.I)


def is_secret_key(name: str) -> bool:
    """Tell whether a header name or JSON key names a secret."""
    return name.lower() in SECRET_HEADERS or bool(_SECRET_KEY.search(name))


def redact_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Return the headers (names lower-cased) with every credential header's value replaced."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        out[key] = REDACTED if key in SECRET_HEADERS else value
    return out


def redact_json(value: Any) -> Any:
    """Return a JSON value with every string under a secret-naming key replaced."""
    if isinstance(value, Mapping):
        return {
            k: (REDACTED if isinstance(v, str) and is_secret_key(str(k)) else redact_json(v)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    return value


def redact_text(text: str) -> str:
    """Redact a body: JSON is parsed, redacted and re-serialised compactly only when it held a secret."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    cleaned = redact_json(parsed)
    return text if cleaned == parsed else json.dumps(cleaned, separators=(",", ":"), ensure_ascii=False)


def redact_query(query: str) -> str:
    """Redact secret-naming parameters of a query string (the rest is kept as sent)."""
    if not query:
        return query
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(is_secret_key(k) for k, _ in pairs):
        return query
    return urlencode([(k, REDACTED if is_secret_key(k) else v) for k, v in pairs])
