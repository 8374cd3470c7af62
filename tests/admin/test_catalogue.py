"""Named fault catalogues: parameters read from signatures, described, armed from JSON, refused cleanly."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.admin.catalogue import arm, catalogue_of, describe, named_fault
from mockserver.core import ApiError, FaultRule, FaultSet


class Demo:
    """A catalogue with one rule fault and one state fault."""

    def __init__(self) -> None:
        self.faults = FaultSet()
        self.flags: dict[str, int] = {}

    @named_fault("clients retry", status="the status answered")
    def teapot(self, status: int = 418, sandbox_id: str | None = None, times: int | None = 1) -> FaultRule:
        """Answer ``status`` once."""
        return self.faults.add(FaultRule(status=status, sandbox_id=sandbox_id, times=times, body={"code": "T"}))

    @named_fault("clients see it at once", target="the sandbox", level="how bad", ratio="a fraction")
    def flag(
        self, target: str, level: int = 2, ratio: float = 0.5, on: bool = True, extra: dict[str, Any] | None = None
    ) -> None:
        """Set a flag on ``target``."""
        if level > 9:
            raise ValueError("level must be at most 9")
        self.flags[target] = level

    def helper(self) -> None:
        """Not a named fault."""


COMMON = {"sandbox_id": "which sandbox", "times": "how often", "on": "switch", "extra": "more"}


def test_parameters_come_from_the_signature() -> None:
    faults = catalogue_of(Demo(), COMMON)
    assert list(faults) == ["flag", "teapot"]
    listed = describe(faults)["faults"]
    assert listed[1] == {
        "name": "teapot",
        "description": "Answer `status` once.",
        "sdk_reaction": "clients retry",
        "params": [
            {
                "name": "status",
                "type": "integer",
                "default": 418,
                "description": "the status answered",
                "required": False,
                "nullable": False,
            },
            {
                "name": "sandbox_id",
                "type": "string",
                "default": None,
                "description": "which sandbox",
                "required": False,
                "nullable": True,
            },
            {
                "name": "times",
                "type": "integer",
                "default": 1,
                "description": "how often",
                "required": False,
                "nullable": True,
            },
        ],
    }
    types = {p["name"]: (p["type"], p["required"]) for p in listed[0]["params"]}
    assert types == {
        "target": ("string", True),
        "level": ("integer", False),
        "ratio": ("number", False),
        "on": ("boolean", False),
        "extra": ("object", False),
    }


def test_arming_fills_defaults_and_returns_the_rules() -> None:
    demo = Demo()
    faults = catalogue_of(demo, COMMON)
    armed = arm(faults, "teapot", {"times": None})
    assert armed["armed"] == "teapot" and armed["params"] == {"status": 418, "sandbox_id": None, "times": None}
    assert [r["status"] for r in armed["rules"]] == [418] and len(demo.faults.rules()) == 1
    assert [r["name"] for r in armed["rules"]] == ["teapot"]
    state = arm(faults, "flag", {"target": "sb-1", "ratio": 1})
    assert state["rules"] == [] and demo.flags == {"sb-1": 2}


def test_a_fault_armed_from_python_carries_its_catalogue_name() -> None:
    demo = Demo()
    assert demo.teapot().name == "teapot"


@pytest.mark.parametrize(
    ("name", "body", "code"),
    [
        ("nope", {}, "unknown_fault"),
        ("teapot", [], "invalid_fault_params"),
        ("teapot", {"colour": "red"}, "invalid_fault_params"),
        ("teapot", {"status": "418"}, "invalid_fault_params"),
        ("teapot", {"status": True}, "invalid_fault_params"),
        ("teapot", {"status": None}, "invalid_fault_params"),
        ("flag", {}, "invalid_fault_params"),
        ("flag", {"target": "x", "level": 10}, "invalid_fault_params"),
        ("flag", {"target": "x", "on": 1}, "invalid_fault_params"),
    ],
)
def test_a_refused_call_arms_nothing(name: str, body: Any, code: str) -> None:
    demo = Demo()
    with pytest.raises(ApiError) as refused:
        arm(catalogue_of(demo, COMMON), name, body)
    assert (refused.value.status, refused.value.code) == (400, code)
    assert demo.faults.rules() == [] and demo.flags == {}


def test_every_parameter_needs_a_description() -> None:
    class Undocumented:
        @named_fault("x")
        def quiet(self, level: int = 1) -> None:
            """Do nothing."""

    with pytest.raises(TypeError, match="level"):
        catalogue_of(Undocumented())


def test_an_app_is_built_without_reading_its_catalogue_and_each_object_arms_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mockserver.admin import catalogue
    from mockserver.asgi import clients
    from mockserver.tensorlake import TensorLakeMock

    monkeypatch.setattr(catalogue, "_DESCRIBED", {})
    first, second = TensorLakeMock(), TensorLakeMock()
    with first.server() as server:
        assert catalogue._DESCRIBED == {}  # no signature read to build and serve the app
        with clients.client(base_url=server.url, trust_env=False) as http:
            listed = http.get("/_mock/faults/catalogue").json()["faults"]
    assert len(catalogue._DESCRIBED) == 1 and {f["name"] for f in listed} == set(first.named_faults())
    ours, theirs = first.named_faults(), second.named_faults()
    name = next(iter(ours))
    assert ours[name].params == theirs[name].params  # described once for the class
    assert ours[name].call.__self__ is not theirs[name].call.__self__  # bound to each mock's own catalogue
