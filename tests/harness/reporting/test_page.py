"""The shared page command line: it prints the page, writes it with ``--write``, and passes a renderer's options."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from harness.reporting.page import print_or_write


def test_prints_the_page_without_write(capsys: pytest.CaptureFixture[str]) -> None:
    assert print_or_write(lambda _: "# page\n", [], prog="p", description=None, what="page") == 0
    assert capsys.readouterr().out == "# page\n"


def test_writes_the_page_and_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "page.md"
    assert print_or_write(lambda _: "# page\n", ["--write", str(target)], prog="p", description=None, what="page") == 0
    assert target.read_text(encoding="utf-8") == "# page\n"
    assert capsys.readouterr().out == ""


def test_a_renderers_own_option_reaches_it(capsys: pytest.CaptureFixture[str]) -> None:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--name")

    def render(args: argparse.Namespace) -> str:
        return f"# {args.name}\n"

    print_or_write(render, ["--name", "x"], prog="p", description=None, what="page", options=options)
    assert capsys.readouterr().out == "# x\n"
