"""sandproof's own mutant catalogue, judged by the contracts: ``python -m tests.mutants [--report DIR]``.

Five families: wrong TensorLake and OpenSandbox policy engines (judged by the policy checks), wrong mocks
of both providers (judged by the API state machines) and mocks that are wrong only under concurrency (judged
by the concurrency contract). Exits 1 when any mutant survives.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from harness.reporting.mutation import Family, kills_opensandbox_engine, kills_tensorlake_engine, load_mutants, main


def families() -> list[Family]:
    """Return the catalogue's five families."""
    from harness.concurrency.runner import kills_mutant as kills_concurrency_mock
    from harness.machines.opensandbox.run import kills_mutant as kills_opensandbox_mock
    from harness.machines.tensorlake.run import kills_mutant as kills_tensorlake_mock
    from tests.mutants import (
        concurrency_mocks,
        opensandbox_engines,
        opensandbox_mocks,
        tensorlake_engines,
        tensorlake_mocks,
    )

    del concurrency_mocks, opensandbox_mocks, tensorlake_mocks  # imported for their registrations
    return [
        Family(
            "tensorlake policy engines",
            {type(m).__name__: m for m in tensorlake_engines.MUTANTS},
            kills_tensorlake_engine,
        ),
        Family(
            "opensandbox policy engines",
            {type(m).__name__: m for m in opensandbox_engines.MUTANTS},
            kills_opensandbox_engine,
        ),
        Family("tensorlake-api mocks", load_mutants("tensorlake-api"), kills_tensorlake_mock),
        Family("opensandbox-api mocks", load_mutants("opensandbox-api"), kills_opensandbox_mock),
        Family("concurrency mocks", load_mutants("concurrency"), kills_concurrency_mock),
    ]


def run(argv: Sequence[str] | None = None) -> int:
    """Run the catalogue; return 1 if a mutant survived."""
    return main(families, argv, prog="python -m tests.mutants")


if __name__ == "__main__":
    sys.exit(run())
