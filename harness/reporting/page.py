"""The command line every page renderer of :mod:`harness.reporting` shares: print the page, or ``--write PATH``.

Each ``*_doc`` module renders one markdown page the repository keeps under ``docs/``;
:func:`print_or_write` parses its arguments, renders and prints the page or saves it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def print_or_write(
    render: Callable[[argparse.Namespace], str],
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str | None,
    what: str,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """Parse ``argv``, render the page from the parsed arguments and print it, or write it to ``--write PATH``.

    ``what`` names the page in the help text ("table", "document"); ``options`` adds a renderer's own arguments.
    Returns the exit status (0).
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--write", metavar="PATH", help=f"write the {what} here instead of printing it")
    if options is not None:
        options(parser)
    args = parser.parse_args(argv)
    text = render(args)
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
