"""When the plugin exports the mocks' SDK environment for a whole run, so a module-level SDK import works.

The TensorLake SDK reads ``TENSORLAKE_API_URL`` once, when it is imported; a test module that imports it
at the top does so at collection, before any fixture runs. ``sandproof_sdk_env`` says what to do:

- ``auto`` (the default): the first time a test module about to be collected imports an SDK at its top
  level (:data:`SDK_MODULES`, read from its source without importing it), both in-process mocks are served
  and their SDK environment is exported for the rest of the run. A run whose modules import no SDK starts
  nothing. Only with the ``mock`` target: a URL or cloud target is the user's to point at.
- ``always`` (``--sandproof-sdk-env``): serve and export when the run starts.
- ``never`` (``--no-sandproof-sdk-env``): never; tests pass ``tensorlake_sdk_args`` or use the fixtures.

What remains: an SDK imported before the plugin configured (by a ``conftest.py`` at the top, or before
pytest started) keeps what it read then; ``always`` covers a conftest that pytest imports after configure.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Literal

import pytest

__all__ = ["MODES", "SDK_MODULES", "SdkEnvMode", "imports_an_sdk", "sdk_env_mode"]

SdkEnvMode = Literal["auto", "always", "never"]
MODES: dict[str, SdkEnvMode] = {
    "auto": "auto",
    "always": "always",
    "true": "always",
    "never": "never",
    "false": "never",
}
#: Top-level packages whose import at a module's top makes ``auto`` export the environment.
SDK_MODULES = frozenset({"tensorlake", "opensandbox", "code_interpreter"})


def sdk_env_mode(config: pytest.Config) -> SdkEnvMode:
    """Return the run's mode: the command line's, else the ini's (``auto`` by default)."""
    option = config.getoption("sandproof_sdk_env")
    if option is not None:
        return "always" if option else "never"
    raw = str(config.getini("sandproof_sdk_env")).strip().lower()
    try:
        return MODES[raw]
    except KeyError:
        choices = ", ".join(MODES)
        raise pytest.UsageError(f"sandproof_sdk_env = {raw!r}: expected one of {choices}") from None


def imports_an_sdk(path: Path) -> bool:
    """Tell whether the Python file at ``path`` imports one of :data:`SDK_MODULES` at its top level.

    Only statements the module runs when imported count: its body, and ``if``/``try`` blocks in it (not
    functions or classes). A file that cannot be read or parsed counts as not importing one.
    """
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return False
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import) and any(_is_sdk(alias.name) for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_sdk(node.module or ""):
            return True
        if isinstance(node, ast.If | ast.Try):
            pending.extend(node.body + node.orelse)
            if isinstance(node, ast.Try):
                pending.extend(node.finalbody)
                for handler in node.handlers:
                    pending.extend(handler.body)
    return False


def _is_sdk(module: str) -> bool:
    return module.split(".", 1)[0] in SDK_MODULES
