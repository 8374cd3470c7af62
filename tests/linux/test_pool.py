"""The warm pool: sandboxes made ahead of demand, handed over with their own id, hostname and folder."""

from __future__ import annotations

import threading
import time

from mockserver.linux import LinuxRuntime
from mockserver.linux.pool import WarmPool

from .conftest import needs_runtime


class Fake:
    """Stands in for a sandbox: counts destructions."""

    destroyed = 0

    def destroy(self) -> None:
        Fake.destroyed += 1


def test_take_waits_for_the_one_being_made_and_close_destroys_the_stock() -> None:
    gate = threading.Event()
    made: list[Fake] = []

    def build() -> Fake:
        gate.wait(10)
        made.append(Fake())
        return made[-1]

    pool = WarmPool(build, 2)  # type: ignore[arg-type]
    threading.Timer(0.05, gate.set).start()
    first = pool.take()
    assert first is made[0]  # waited for the build in progress instead of giving up
    deadline = time.monotonic() + 10
    while len(made) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    before = Fake.destroyed
    pool.close()
    assert Fake.destroyed - before == 2 and pool.take() is None


def test_a_pool_that_cannot_build_gives_up() -> None:
    def build() -> Fake:
        raise OSError("no")

    pool = WarmPool(build, 1)  # type: ignore[arg-type]
    assert pool.take() is None
    deadline = time.monotonic() + 10
    while pool.failures < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.failures == 3
    pool.close()


def test_size_zero_keeps_nothing() -> None:
    pool = WarmPool(lambda: Fake(), 0)  # type: ignore[arg-type,return-value]
    assert pool.take(wait=0) is None
    pool.close()


@needs_runtime
def test_a_handed_over_sandbox_is_the_one_asked_for(runtime: LinuxRuntime) -> None:
    assert runtime.pool is not None and runtime.pool.size >= 1
    sb = runtime.create_sandbox("handed-over", hostname="asked-for", env={"MARK": "x"})
    try:
        result = sb.run(
            'hostname; cat /etc/hostname; grep asked-for /etc/hosts; echo "$HOSTNAME $MARK"; pwd', cwd="/work"
        )
        assert result.stdout == b"asked-for\nasked-for\n127.0.1.1\tasked-for\nasked-for x\n/work\n"
        assert sb.layout.base == runtime.state_dir / "handed-over"
        sb.write_file("/work/from-api", b"api")
        assert sb.run("cat /work/from-api; echo inside > /work/from-sandbox").stdout == b"api"
        assert sb.read_file("/work/from-sandbox") == b"inside\n"
        assert (runtime.state_dir / "handed-over" / "root" / "work" / "from-sandbox").exists()
    finally:
        sb.destroy()
