"""Importing the OpenSandbox model loads no web stack: checked in a fresh interpreter's ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WEB_STACK = ("starlette", "uvicorn", "httpx", "mockserver.asgi", "mockserver.admin", "mockserver.service")


def _loaded_after(statement: str) -> list[str]:
    probe = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT)},
    )
    loaded: list[str] = json.loads(out.stdout)
    return loaded


def _web(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == w or m.startswith(w + ".") for w in WEB_STACK)]


def test_the_model_and_every_module_in_it_load_no_web_stack() -> None:
    import mockserver.opensandbox.model as model

    modules = sorted(p.stem for p in Path(model.__file__).parent.glob("*.py") if p.stem != "__init__")
    statement = "\n".join(f"import mockserver.opensandbox.model.{name}" for name in modules)
    loaded = _loaded_after(statement)
    assert "mockserver.opensandbox.model.ports" in loaded
    assert _web(loaded) == []


def test_the_package_names_are_lazy() -> None:
    loaded = _loaded_after("import mockserver.opensandbox\nfrom mockserver.opensandbox import OpenSandboxModel")
    assert "mockserver.opensandbox.model.operations" in loaded
    assert "mockserver.opensandbox.mock" not in loaded
    assert _web(loaded) == []


def test_the_mock_is_still_importable_from_the_package() -> None:
    loaded = _loaded_after(
        "from mockserver.opensandbox import OpenSandboxMock, ANY_KEY\nassert OpenSandboxMock and ANY_KEY"
    )
    assert "mockserver.opensandbox.mock" in loaded and "starlette" in loaded  # the probe can see a web import
