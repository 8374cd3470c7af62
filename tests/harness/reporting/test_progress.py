import time

import pytest

from harness.machines.common import ContractViolation
from harness.reporting.progress import PROGRESS, Progress, Ticker

pytest_plugins = ["pytester"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_names_the_contract_the_examples_and_the_shrinking() -> None:
    clock = FakeClock()
    progress = Progress(clock)
    assert progress.line() is None
    progress.start("tensorlake ports-ingress")
    progress.example()
    progress.example()
    clock.now += 42
    assert progress.line() == "sandproof: tensorlake ports-ingress: running 2 examples so far, 42 s"
    progress.failure()
    assert "shrinking a failure…" in str(progress.line())
    progress.stop()
    assert progress.line() is None
    progress.failure()  # a failure outside a contract test changes nothing
    assert progress.line() is None


def test_a_contract_violation_marks_the_run_as_shrinking() -> None:
    PROGRESS.start("x y")
    try:
        ContractViolation("rule", "differs")
        assert "shrinking" in str(PROGRESS.line())
    finally:
        PROGRESS.stop()


def test_the_ticker_writes_only_while_a_test_runs() -> None:
    lines: list[str] = []
    progress = Progress()
    ticker = Ticker(lines.append, 0.02, progress).start()
    try:
        time.sleep(0.1)
        assert lines == []
        progress.start("p o")
        deadline = time.monotonic() + 5
        while not lines and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        ticker.stop()
    assert lines and lines[0].startswith("sandproof: p o: running")
    with pytest.raises(ValueError):
        Ticker(lines.append, 0)


def test_a_slow_contract_prints_progress_in_a_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import time
        import pytest
        from harness.machines.common import ContractViolation

        @pytest.mark.contract("tensorlake", "slow-op")
        def test_slow():
            time.sleep(0.6)
            ContractViolation("rule", "seen")
            time.sleep(0.6)
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--sandproof-progress=0.2", "-s")
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "sandproof: tensorlake slow-op: running" in text
    assert "sandproof: tensorlake slow-op: shrinking a failure…" in text
