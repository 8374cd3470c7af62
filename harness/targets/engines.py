"""Load alternative network-policy engines (``policy:MODULE:ATTR``) and check they speak the JSON protocol."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

from harness.targets.common import TargetError

__all__ = ["ENGINE_METHODS", "check_engine", "load_engine"]

#: The JSON protocol each engine kind implements: method name → positional arguments it must accept.
ENGINE_METHODS: dict[str, dict[str, tuple[str, ...]]] = {
    "tensorlake": {
        "validate": ("network",),
        "allows_egress": ("network", "host", "ip"),
        "allows_dns": ("network", "resolver_ip"),
        "apply_update": ("current", "patch_body", "resolve"),
    },
    "opensandbox": {
        "validate": ("policy",),
        "allows_egress": ("policy", "host"),
        "merge": ("policy", "rules"),
        "delete": ("policy", "targets"),
    },
}


def load_engine(path: str) -> Any:
    """Import the policy engine ``MODULE:ATTR`` and check it speaks its ``kind``'s JSON protocol.

    A class is instantiated without arguments. The current directory is tried as an import root when the
    module is not found otherwise, so ``policy:my_engine:engine`` works from a project checkout.
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name.strip() or not attr.strip():
        raise TargetError(
            f"policy target {path!r} must be MODULE:ATTR, e.g. policy:contracts.opensandbox_adapter:reference_engine"
        )
    module_name, attr = module_name.strip(), attr.strip()
    module = _import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"policy engine {path!r}: {obj.__name__!r} has no attribute {part!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise TargetError(
                f"policy engine {path!r} is a class that cannot be created without arguments: {exc}"
            ) from exc
    check_engine(obj, path)
    return obj


def _import_module(name: str) -> Any:
    """Import ``name``, retrying with the current directory on ``sys.path``."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        root = name.split(".", 1)[0]
        if exc.name != root or cwd in sys.path:
            raise TargetError(f"cannot import policy engine module {name!r}: {exc}") from exc
        sys.path.insert(0, cwd)
        try:
            return importlib.import_module(name)
        except ImportError as retry:
            sys.path.remove(cwd)
            raise TargetError(f"cannot import policy engine module {name!r}: {retry}") from retry
    except Exception as exc:
        raise TargetError(f"importing policy engine module {name!r} failed: {type(exc).__name__}: {exc}") from exc


def check_engine(engine: object, label: str = "engine") -> None:
    """Raise :class:`TargetError` listing every way ``engine`` misses its kind's protocol."""
    kind = getattr(engine, "kind", None)
    if kind not in ENGINE_METHODS:
        raise TargetError(
            f"policy engine {label!r} needs a `kind` attribute set to "
            f"{' or '.join(repr(k) for k in ENGINE_METHODS)}; it has {kind!r}"
        )
    problems = []
    for name, params in ENGINE_METHODS[kind].items():
        method = getattr(engine, name, None)
        if method is None:
            problems.append(f"missing method {name}({', '.join(params)})")
            continue
        if not callable(method):
            problems.append(f"{name} is not callable")
            continue
        try:
            signature = inspect.signature(method)
        except (TypeError, ValueError):
            continue
        try:
            signature.bind(*params)
        except TypeError:
            takes = ", ".join(signature.parameters)
            problems.append(f"{name}({takes}) cannot be called as {name}({', '.join(params)})")
    if problems:
        raise TargetError(
            f"policy engine {label!r} (kind {kind!r}) does not implement the {kind} protocol: " + "; ".join(problems)
        )
