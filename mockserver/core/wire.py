"""JSON bodies with pre-encoded parts: a record's wire form is encoded once per revision, then spliced.

A model caches a record's wire body as a :class:`WireDict` (a plain ``dict`` to every reader) per revision of
the record. :func:`encode_json` renders a body to the exact bytes Starlette's ``JSONResponse`` would send
(compact separators, no ASCII escaping, no NaN), but a :class:`WireDict` inside it is encoded once and its
bytes reused, so a list of ten thousand cached sandboxes costs a join, not ten thousand encodings.

A :class:`WireDict` is read-only by contract: whoever wants to change one copies it first (``dict(d)``).

Text that is not Unicode (a lone surrogate) is refused at the door (:mod:`mockserver.core.jsontext`); should a
record hold some anyway, its body is sent with ASCII escapes (``\\ud800``) rather than failing every list
that shows it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["WireDict", "encode_json"]

_text = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode
_ascii = json.JSONEncoder(ensure_ascii=True, allow_nan=False, indent=None, separators=(",", ":")).encode


def _encode(value: Any) -> bytes:
    text = _text(value)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _ascii(value).encode("ascii")


class WireDict(dict[str, Any]):
    """A record's wire body, cached per revision; it remembers its encoding after the first use."""

    __slots__ = ("encoded",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.encoded: bytes | None = None

    def to_bytes(self) -> bytes:
        """Return the body's JSON bytes (encoded on first use)."""
        if self.encoded is None:
            self.encoded = _encode(self)
        return self.encoded


def encode_json(value: Any) -> bytes:
    """Return ``value`` as compact JSON bytes, splicing in the cached bytes of every :class:`WireDict`."""
    if isinstance(value, WireDict):
        return value.to_bytes()
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value) or not any(isinstance(v, dict | list) for v in value.values()):
            return _encode(value)
        parts = [_encode(k) + b":" + encode_json(v) for k, v in value.items()]
        return b"{" + b",".join(parts) + b"}"
    if isinstance(value, list):
        if value and not any(isinstance(v, WireDict) for v in value):
            return _encode(value)
        return b"[" + b",".join(encode_json(v) for v in value) + b"]"
    return _encode(value)
