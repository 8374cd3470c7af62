"""``sandproof serve --scenario``: a file starts the mocks in a known state; its export starts them there again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.serving import ROOT, served

EXAMPLES = ROOT / "examples" / "scenarios"


def _states(urls: dict[str, str]) -> dict[str, Any]:
    return {name: httpx.get(f"{url}/_mock/scenario").json()[name] for name, url in urls.items()}


def test_a_scenario_file_seeds_both_mocks_and_its_export_reloads_the_same(tmp_path: Path) -> None:
    with served("--scenario", str(EXAMPLES / "egress-policy.json")) as (urls, lines):
        assert any("tensorlake: 2 seed sandbox(es)" in line for line in lines), lines
        listed = httpx.get(
            f"{urls['opensandbox']}/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": "sandproof-key"}
        ).json()
        states = sorted(item["status"]["state"] for item in listed["items"])
        assert states == ["Paused", "Running"]
        tl = httpx.get(f"{urls['tensorlake']}/sandboxes", headers={"Authorization": "Bearer sandproof-key"}).json()
        (pip_only,) = [sb for sb in tl["sandboxes"] if sb.get("name") == "pip-only"]
        requirements = httpx.get(
            f"{urls['tensorlake']}/api/v1/files",
            params={"path": "/workspace/requirements.txt"},
            headers={"Host": f"{pip_only['id']}.local", "Authorization": "Bearer sandproof-key"},
        )
        assert requirements.text == "requests==2.32.3\n"
        first = _states(urls)
    exported = tmp_path / "exported.json"
    exported.write_text(json.dumps({"sandproof_scenario": 1, **first}))
    with served("--scenario", str(exported)) as (urls, _):
        again = _states(urls)
    for name in ("tensorlake", "opensandbox"):
        assert again[name]["snapshot"]["state"] == first[name]["snapshot"]["state"], name
        assert again[name]["snapshot"]["dns"] == first[name]["snapshot"]["dns"], name


def test_the_nemo_gym_scenario_pins_its_key_and_arms_its_faults() -> None:
    with served("--scenario", str(EXAMPLES / "nemo-gym-ci.toml")) as (urls, lines):
        assert "--api-key gym-ci-key" in lines[-1]
        url = urls["opensandbox"]
        assert httpx.get(f"{url}/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": "other"}).status_code == 401
        faults = httpx.get(f"{url}/_mock/faults").json()
        assert [f["name"] for f in faults] == ["create_rate_limited", "bad_gateway_on_poll"]
        assert httpx.get(f"{url}/_mock/clock").json() == {"mode": "manual", "now": 1767225600}


def test_a_bad_scenario_stops_the_start_with_one_line_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"sandproof_scenario": 1, "opensandbox": {"sandboxes": [{"create": {"image": 3}}]}}))
    command = [sys.executable, "-m", "sandproof.cli", "serve", "--tensorlake-port", "0", "--opensandbox-port", "0"]
    done = subprocess.run([*command, "--scenario", str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert f"scenario {bad}: opensandbox.sandboxes[0].create: POST /v1/sandboxes answered 4" in line


def test_serving_without_a_scenario_loads_no_http_client() -> None:
    code = (
        "import sys; from mockserver.scenario import load_scenarios; "
        "load_scenarios([]).once_serving({}, {}, None); print('httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"], out.stderr
