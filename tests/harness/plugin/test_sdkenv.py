"""When the run-wide SDK environment is exported: the mode from option and ini, and which modules ask for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.plugin.sdkenv import imports_an_sdk, sdk_env_mode

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    ("args", "mode"),
    [
        ((), "auto"),
        (("--sandproof-sdk-env",), "always"),
        (("--no-sandproof-sdk-env",), "never"),
        (("-o", "sandproof_sdk_env=true"), "always"),
        (("-o", "sandproof_sdk_env=never"), "never"),
        (("-o", "sandproof_sdk_env=false", "--sandproof-sdk-env"), "always"),
    ],
    ids=["default", "option", "no-option", "ini-true", "ini-never", "option-over-ini"],
)
def test_the_mode_comes_from_the_option_else_the_ini(
    pytester: pytest.Pytester, args: tuple[str, ...], mode: str
) -> None:
    assert sdk_env_mode(pytester.parseconfig(*args)) == mode


def test_an_unknown_ini_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    with pytest.raises(pytest.UsageError, match="sandproof_sdk_env = 'sometimes'"):
        sdk_env_mode(pytester.parseconfig("-o", "sandproof_sdk_env=sometimes"))


@pytest.mark.parametrize(
    ("source", "imports"),
    [
        ("import tensorlake\n", True),
        ("from tensorlake.sandbox import Sandbox\n", True),
        ("import os, opensandbox.config\n", True),
        ("try:\n    from code_interpreter import CodeInterpreter\nexcept ImportError:\n    pass\n", True),
        ("if True:\n    import tensorlake as tl\n", True),
        ("def helper():\n    import tensorlake\n", False),
        ("class T:\n    import opensandbox\n", False),
        ("from .tensorlake import thing\n", False),
        ("import tensorlake_tools\n", False),
        ("x = 'import tensorlake'\n", False),
        ("this is not python(\n", False),
    ],
)
def test_only_top_level_sdk_imports_count(tmp_path: Path, source: str, imports: bool) -> None:
    path = tmp_path / "test_module.py"
    path.write_text(source, encoding="utf-8")
    assert imports_an_sdk(path) is imports


def test_an_unreadable_file_counts_as_no_import(tmp_path: Path) -> None:
    assert imports_an_sdk(tmp_path / "missing.py") is False
