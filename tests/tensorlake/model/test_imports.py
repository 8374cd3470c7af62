"""Importing the TensorLake model (or the package's lazy names) loads no web stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]
WEB = ("starlette", "uvicorn", "httpx", "mockserver.asgi", "mockserver.admin", "mockserver.service")


def loaded_after(statement: str) -> list[str]:
    """Return the modules a fresh interpreter has loaded after running ``statement``."""
    script = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT)},
    )
    modules: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return modules


def web_modules(modules: list[str]) -> list[str]:
    """Return the web-stack modules among ``modules``."""
    return [m for m in modules if any(m == w or m.startswith(w + ".") for w in WEB)]


@pytest.mark.parametrize(
    "statement",
    [
        "import mockserver.tensorlake.model",
        "from mockserver.tensorlake.model import lifecycle, ingress, management, admin, egress",
        "import mockserver.tensorlake",
        "from mockserver.tensorlake import TensorLakeGate, Timings, DEFAULT_API_KEY",
    ],
)
def test_the_model_loads_no_web_stack(statement: str) -> None:
    modules = loaded_after(statement)
    assert "mockserver.tensorlake.model.operations" in modules or "mockserver.tensorlake" in modules
    assert web_modules(modules) == []


def test_the_mock_itself_is_loaded_on_first_use() -> None:
    modules = loaded_after("import mockserver.tensorlake as tl\nassert tl.TensorLakeMock.provider == 'tensorlake'")
    assert "mockserver.tensorlake.mock" in modules and "starlette" in modules


def test_an_unknown_name_is_an_attribute_error() -> None:
    import mockserver.tensorlake as tl

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = tl.Nope


def test_the_mock_loads_pydantic_only_when_a_body_is_validated() -> None:
    """The record declarations cost nothing at import: pydantic and the validators load with the first body."""
    started = loaded_after("from mockserver.tensorlake import TensorLakeMock\nTensorLakeMock()")
    assert not [m for m in started if m == "pydantic" or m.startswith(("pydantic.", "pydantic_core"))]
    assert "mockserver.tensorlake.model.bodies" not in started and "mockserver.tensorlake.model.wire" not in started
    parsed = loaded_after(
        "from mockserver.tensorlake.model.validation import parse_create\nparse_create({'name': 'a'}, lambda name: [])"
    )
    assert "pydantic" in parsed and "mockserver.tensorlake.model.bodies" in parsed
