"""sandproof's own mutant catalogue, judged by the contracts: ``python -m tests.mutants [--report DIR]``.

Six families: wrong TensorLake and OpenSandbox policy engines (judged by the policy checks), wrong
``restrict_sandbox_network`` functions (judged by the NeMo Gym checks with both reference engines), wrong mocks
of both providers (judged by the API state machines) and mocks that are wrong only under concurrency (judged by
the concurrency contract). Each family names the suite of the contracts that judge it, so ``docs/contracts.md``
can list, per contract, the mutants aimed at it. The score is printed per strength; the run exits 1 when a
mutant survives the default run without being a declared choice mutant.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from harness.reporting.mutation import (
    Family,
    kills_opensandbox_engine,
    kills_restrict_function,
    kills_tensorlake_engine,
    load_mutants,
    main,
)


def families() -> list[Family]:
    """Return the catalogue's six families."""
    from harness.concurrency.runner import kills_mutant as kills_concurrency_mock
    from harness.machines.opensandbox.run import kills_mutant as kills_opensandbox_mock
    from harness.machines.tensorlake.run import kills_mutant as kills_tensorlake_mock
    from tests.mutants import (
        concurrency_mocks,
        nemo_gym_functions,
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
            "tensorlake-policy",
        ),
        Family(
            "opensandbox policy engines",
            {type(m).__name__: m for m in opensandbox_engines.MUTANTS},
            kills_opensandbox_engine,
            "opensandbox-policy",
        ),
        Family(
            "nemo-gym restrict_sandbox_network",
            {type(m).__name__: m for m in nemo_gym_functions.MUTANTS},
            kills_restrict_function,
            "nemo-gym-network",
        ),
        Family("tensorlake-api mocks", load_mutants("tensorlake-api"), kills_tensorlake_mock, "tensorlake-api"),
        Family("opensandbox-api mocks", load_mutants("opensandbox-api"), kills_opensandbox_mock, "opensandbox-api"),
        Family("concurrency mocks", load_mutants("concurrency"), kills_concurrency_mock, "concurrency"),
    ]


def run(argv: Sequence[str] | None = None) -> int:
    """Run the catalogue; return 1 if a mutant survived."""
    return main(families, argv, prog="python -m tests.mutants")


if __name__ == "__main__":
    sys.exit(run())
