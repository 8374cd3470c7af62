"""Things built on first use: packages that load their public names late, and mappings read late."""

from __future__ import annotations

import subprocess
import sys
import types
from collections.abc import Iterator

import pytest

from mockserver.core.lazy import LazyMapping, lazy_dir, lazy_name


@pytest.fixture
def package() -> Iterator[types.ModuleType]:
    module = types.ModuleType("sandproof_lazy_demo")
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def test_a_listed_name_is_imported_from_its_home_and_kept(package: types.ModuleType) -> None:
    homes = {"dedent": "textwrap", "VirtualClock": "mockserver.core.clock"}
    import textwrap

    assert lazy_name(package.__name__, homes, "dedent") is textwrap.dedent
    assert vars(package)["dedent"] is textwrap.dedent  # looked up once
    assert lazy_name(package.__name__, homes, "VirtualClock").__name__ == "VirtualClock"


def test_an_unlisted_name_is_an_attribute_error(package: types.ModuleType) -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        lazy_name(package.__name__, {}, "nope")


def test_dir_lists_the_public_names_before_they_load(package: types.ModuleType) -> None:
    package.loaded = 1  # type: ignore[attr-defined]
    assert {"loaded", "later"} <= set(lazy_dir(package.__name__, ["later"]))


@pytest.mark.parametrize(
    ("package", "name", "home"),
    [
        ("mockserver.tensorlake", "TensorLakeMock", "mockserver.tensorlake.mock"),
        ("mockserver.opensandbox", "OpenSandboxMock", "mockserver.opensandbox.mock"),
        ("mockserver.sandbox", "CommandEmulator", "mockserver.sandbox.commands"),
        ("mockserver.linux", "LinuxRuntime", "mockserver.linux.runtime"),
        ("mockserver.tensorlake.model", "TensorLakeModel", "mockserver.tensorlake.model.operations"),
        ("mockserver.opensandbox.model", "OpenSandboxModel", "mockserver.opensandbox.model.operations"),
    ],
)
def test_the_packages_load_a_name_only_when_it_is_used(package: str, name: str, home: str) -> None:
    code = (
        f"import sys, {package} as p; before = {home!r} in sys.modules; "
        f"getattr(p, {name!r}); print(before, {home!r} in sys.modules, {name!r} in dir(p))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"], out.stderr


@pytest.mark.parametrize("package", ["mockserver.core", "mockserver.tensorlake", "mockserver.opensandbox"])
def test_importing_a_package_loads_nothing_else_of_the_project(package: str) -> None:
    code = f"import sys; before = set(sys.modules); import {package}; print(*sorted(set(sys.modules) - before))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name for name in out.stdout.split() if name.split(".")[0] in ("mockserver", "harness", "contracts")}
    assert loaded == {"mockserver", "mockserver.core", "mockserver.core.lazy", package}, out.stdout


def test_a_lazy_mapping_loads_its_contents_once_on_first_read() -> None:
    loads: list[int] = []

    def load() -> dict[str, int]:
        loads.append(1)
        return {"a": 1, "b": 2}

    mapping = LazyMapping(load)
    assert loads == []  # built, not read
    assert mapping["a"] == 1
    assert dict(mapping) == {"a": 1, "b": 2}
    assert len(mapping) == 2
    assert "c" not in mapping
    assert loads == [1]
