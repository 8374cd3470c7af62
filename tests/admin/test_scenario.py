"""Scenario documents: parsed with the field at fault named, applied whole or not at all, exported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mockserver.admin.scenario import (
    ScenarioError,
    apply_state,
    arm_faults,
    export_scenario,
    parse_scenario,
    read_scenario,
)
from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock
from mockserver.tensorlake import TensorLakeMock

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def doc(**providers: Any) -> dict[str, Any]:
    return {"sandproof_scenario": 1, **providers}


@pytest.mark.parametrize(
    ("document", "where"),
    [
        ([], ""),
        ({"tensorlake": {}}, "sandproof_scenario"),
        (doc(aws={}), "aws"),
        (doc(tensorlake={"colour": 1}), "tensorlake.colour"),
        (doc(tensorlake={"api_keys": "k"}), "tensorlake.api_keys"),
        (doc(tensorlake={"api_keys": ["k", ""]}), "tensorlake.api_keys[1]"),
        (doc(opensandbox={"clock": {"mode": "fast"}}), "opensandbox.clock.mode"),
        (doc(opensandbox={"clock": {"now": float("nan")}}), "opensandbox.clock.now"),
        (doc(opensandbox={"dns": {"entries": {"a.example": "1.2.3.4"}}}), "opensandbox.dns.entries.a.example"),
        (doc(opensandbox={"sandboxes": [{}]}), "opensandbox.sandboxes[0].create"),
        (doc(opensandbox={"sandboxes": [{"create": {}, "state": "suspended"}]}), "opensandbox.sandboxes[0].state"),
        (doc(tensorlake={"sandboxes": [{"create": {}, "files": {"rel": "x"}}]}), "tensorlake.sandboxes[0].files.rel"),
        (doc(tensorlake={"faults": [{"fault": "x", "rule": {}}]}), "tensorlake.faults[0]"),
        (doc(tensorlake={"faults": [{"rule": {"status": 99}}]}), "tensorlake.faults[0].rule"),
        (doc(opensandbox={"snapshot": {"provider": "tensorlake", "state": {}}}), "opensandbox.snapshot.provider"),
        (doc(tensorlake={"server_config": "server.toml"}), "tensorlake.server_config"),
        (doc(opensandbox={"server_config": ""}), "opensandbox.server_config"),
    ],
)
def test_a_bad_document_names_the_field_at_fault(document: Any, where: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(document, "s.json")
    assert caught.value.where == where
    assert str(caught.value).startswith("scenario s.json: ")


def test_the_opensandbox_server_config_is_a_path_beside_the_scenario() -> None:
    part = parse_scenario(doc(opensandbox={"server_config": "conf/server.toml"}), "/srv/scenarios/ci.json")
    assert part.providers["opensandbox"].server_config == "/srv/scenarios/conf/server.toml"
    absolute = parse_scenario(doc(opensandbox={"server_config": "/etc/osb.toml"}), "/srv/scenarios/ci.json")
    assert absolute.providers["opensandbox"].server_config == "/etc/osb.toml"


def test_a_file_that_does_not_parse_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("sandproof_scenario = [")
    with pytest.raises(ScenarioError, match=r"scenario .*bad\.toml: not valid TOML"):
        read_scenario(bad)
    with pytest.raises(ScenarioError, match="cannot read it"):
        read_scenario(tmp_path / "missing.json")


@pytest.mark.parametrize("name", ["nemo-gym-ci.toml", "egress-policy.json"])
def test_the_shipped_examples_parse(name: str) -> None:
    scenario = read_scenario(EXAMPLES / name)
    assert scenario.providers
    assert all(part.sandboxes for part in scenario.providers.values())


def test_state_clock_and_dns_apply_and_a_refused_step_changes_nothing() -> None:
    mock = OpenSandboxMock(clock=VirtualClock("manual"))
    part = parse_scenario(
        doc(
            opensandbox={
                "clock": {"mode": "manual", "now": 2_000_000_000},
                "dns": {"entries": {"a.example": ["10.9.9.9"]}},
            }
        )
    ).providers["opensandbox"]
    apply_state(mock, part, "s")
    assert mock.clock.now() == 2_000_000_000 and mock.dns.resolve("a.example") == ["10.9.9.9"]
    before = mock.snapshot()
    broken = parse_scenario(
        doc(
            opensandbox={
                "clock": {"mode": "auto", "now": 5},
                "snapshot": {"provider": "opensandbox", "state": {"sandboxes": "nope"}},
            }
        )
    ).providers["opensandbox"]
    with pytest.raises(ScenarioError) as caught:
        apply_state(mock, broken, "s")
    assert caught.value.where == "opensandbox.snapshot"
    assert mock.snapshot() == before


def test_faults_arm_by_catalogue_name_or_rule_and_a_refused_one_arms_none() -> None:
    mock = OpenSandboxMock()
    part = parse_scenario(
        doc(
            opensandbox={
                "faults": [
                    {"fault": "create_rate_limited", "params": {"times": 2}},
                    {"rule": {"path": "/x", "status": 418}},
                ]
            }
        )
    ).providers["opensandbox"]
    arm_faults(mock, part, mock.named_faults(), "s")
    assert [(r.name, r.status) for r in mock.faults.rules()] == [("create_rate_limited", 429), ("respond:418", 418)]
    mock.faults.reset()
    refused = parse_scenario(
        doc(
            opensandbox={
                "faults": [{"rule": {"path": "/x"}}, {"fault": "create_rate_limited", "params": {"colour": 1}}]
            }
        )
    ).providers["opensandbox"]
    with pytest.raises(ScenarioError) as caught:
        arm_faults(mock, refused, mock.named_faults(), "s")
    assert caught.value.where == "opensandbox.faults[1]" and "invalid_fault_params" in str(caught.value)
    assert mock.faults.rules() == []


def test_the_export_restarts_a_mock_where_it_is() -> None:
    mock = TensorLakeMock(seed=1, clock=VirtualClock("manual"), api_keys=["k2", "k1"])
    with mock.server() as srv:
        import httpx

        made = httpx.post(f"{srv.url}/sandboxes", json={"name": "kept"}, headers={"Authorization": "Bearer k1"})
        assert made.status_code == 200
        mock.dns.update({"x.example": ["10.0.0.7"]})
        mock.faults.add(path="/nope", status=503, times=None, name="mine")
        exported = httpx.get(f"{srv.url}/_mock/scenario").json()
    assert exported == json.loads(json.dumps(export_scenario(mock, ["k1", "k2"])))
    part = parse_scenario(exported).providers["tensorlake"]
    assert part.api_keys == ("k1", "k2")
    again = TensorLakeMock(seed=1, clock=VirtualClock("manual"), api_keys=list(part.api_keys))
    apply_state(again, part, "export")
    arm_faults(again, part, again.named_faults(), "export")
    assert again.snapshot() == mock.snapshot()
    assert [(r.name, r.path, r.status, r.times) for r in again.faults.rules()] == [("mine", "/nope", 503, None)]
