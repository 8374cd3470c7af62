"""What a replay does not compare: values that differ on every run, and the paths the user tells it to ignore.

* :func:`volatile_placeholders` replaces run-dependent numbers in an answer before it is compared: integer
  timestamps (``*_at``, ``timestamp``: epoch milliseconds, as TensorLake's bodies and every execd event
  carry them) become ``<epoch-ms>``, and an execd ``execution_complete`` event's ``execution_time`` becomes
  ``<duration-ms>``. (Execution ids are not placeholders: they are learnt and mapped like sandbox ids, see
  :meth:`harness.recording.rewrite.IdMap.learn_stream`.)
* :class:`IgnoreRule` is one ``sandproof replay --ignore JSONPATH``: a difference at a path the rule matches
  is explained rather than counted, as VCR's ``match_on`` and WireMock's matchers leave parts of a request
  out. The JSONPath subset: ``$`` (the compared answer: ``status``, ``header`` and ``body``), ``.name`` or
  ``['name']``, ``[N]`` or ``.N`` (a list index), ``*`` or ``[*]`` (any one key or index), and ``..`` (any
  depth). A rule that matches a path also covers everything below it: ``$.body.status`` ignores
  ``body.status.state``. Examples: ``$.body..timestamp``, ``$.header.vary``, ``$.body[*].text``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DURATION_KEYS", "EPOCH_KEYS", "IgnoreRule", "volatile_placeholders"]

#: Keys (suffixes) of integer timestamps in epoch milliseconds.
EPOCH_KEYS = ("_at", "timestamp")
#: Keys of run-dependent durations in milliseconds.
DURATION_KEYS = frozenset({"execution_time"})
_ANY = "*"
_DEEP = "**"
_TOKEN = re.compile(r"\.\.|\.|\[\s*(?:\*|\d+|'[^']*'|\"[^\"]*\")\s*\]|[^.\[\]]+")


def volatile_placeholders(value: Any, key: str = "") -> Any:
    """Return a JSON value with integer timestamps as ``<epoch-ms>`` and execd durations as ``<duration-ms>``."""
    if isinstance(value, Mapping):
        return {k: volatile_placeholders(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [volatile_placeholders(v, key) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        if key.endswith(EPOCH_KEYS):
            return "<epoch-ms>"
        if key in DURATION_KEYS:
            return "<duration-ms>"
    return value


@dataclass(frozen=True)
class IgnoreRule:
    """One ``--ignore JSONPATH``: the differences at the paths it matches are explained (see the module doc)."""

    text: str
    segments: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> IgnoreRule:
        """Parse a JSONPath of the supported subset; raise ValueError naming what is wrong."""
        source = text.strip()
        if not source.startswith("$"):
            raise ValueError(f"--ignore {text!r}: a JSONPath starts with $ (e.g. $.body..timestamp)")
        rest = source[1:]
        segments: list[str] = []
        deep = False
        dot = False
        position = 0
        for match in _TOKEN.finditer(rest):
            token = match.group(0)
            if match.start() != position or ((deep or dot) and token in (".", "..")):
                break
            bracket = token.startswith("[")
            if token not in (".", "..") and ((dot and bracket) or not (dot or deep or bracket)):
                break
            position = match.end()
            if token in (".", ".."):
                deep, dot = token == "..", token == "."
                continue
            segments += [_DEEP, _segment(token)] if deep else [_segment(token)]
            deep = dot = False
        if position != len(rest) or deep or dot:
            raise ValueError(f"--ignore {text!r}: not a JSONPath of the supported subset ($, .name, [N], *, ..)")
        return cls(source, tuple(segments))

    def matches(self, path: str) -> bool:
        """Tell whether a difference path (``body.0.timestamp``, ``header.vary``, ``status``) is ignored."""
        return _match(self.segments, tuple(path.split(".")))


def _segment(token: str) -> str:
    """Return the name one JSONPath step selects (``*`` for any)."""
    if token.startswith("["):
        inner = token[1:-1].strip()
        if inner[:1] in ("'", '"'):
            return inner[1:-1]
        return _ANY if inner == "*" else inner
    return token


def _match(rule: Sequence[str], path: Sequence[str]) -> bool:
    """Match rule segments against a prefix of the path (``**`` spans any number of segments)."""
    if not rule:
        return True
    head, rest = rule[0], rule[1:]
    if head == _DEEP:
        return any(_match(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    return (head == _ANY or head == path[0]) and _match(rest, path[1:])
