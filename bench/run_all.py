"""Run every benchmark under ``bench/`` in turn, then print the headline figures against their goals.

``--smoke`` is a quick pass (it runs in ``make test``): small populations, short phases, three kills, and the
contract suite's duration read from the last report instead of a fresh run. Each benchmark prints one
``@figures`` line; the summary at the end is built from those. Ratios are measured within one run, so the
machine's load weighs on both sides alike; nothing here asserts a wall-clock time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCHES = (
    "policy.py",
    "tensorlake.py",
    "opensandbox.py",
    "overhead.py",
    "listing.py",
    "startup.py",
    "crash.py",
    "durability.py",
    "linux_runtime.py",
    "suite.py",
)
FIGURES = "@figures "


def _run(script: Path, args: Sequence[str]) -> tuple[int, list[dict[str, Any]]]:
    """Run one benchmark, echoing its output; return its exit status and the figures it printed."""
    figures: list[dict[str, Any]] = []
    proc = subprocess.Popen(
        [sys.executable, str(script), *args], cwd=script.parent.parent, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(FIGURES):
            figures.append(json.loads(line[len(FIGURES) :]))
        else:
            print(line, end="", flush=True)
    return proc.wait(), figures


def _verdict(met: bool | None) -> str:
    return "n/a" if met is None else "met" if met else "not met"


def goals(found: dict[str, dict[str, Any]]) -> list[str]:
    """Return the rows of issue 22's table, each with its goal and whether this run met it."""
    rows: list[tuple[str, str, str, bool | None]] = []
    tl, over = found.get("tensorlake"), found.get("overhead")
    if tl:
        rows.append(
            (
                "TensorLake create->PATCH->GET->DELETE cycles/s / (echo of the cycle req/s / 4)",
                f"{tl['score']:.2f} (against a plain GET /: {tl['cycles_per_s'] * 4 / tl['get_per_s']:.2f})",
                ">= 0.85",
                tl["score"] >= 0.85,
            )
        )
    if over:
        cpu_score = over["tensorlake_echo_us"] / over["tensorlake_mock_us"]
        rows.append(
            (
                "TensorLake server CPU score (echo us / mock us per GET)",
                f"{cpu_score:.2f} ({over['tensorlake_mock_us']:.0f} vs {over['tensorlake_echo_us']:.0f} us)",
                ">= 0.75",
                cpu_score >= 0.75,
            )
        )
    osb = found.get("opensandbox")
    if osb:
        for key, label in (
            ("asgi_ratio", "execd POST /command p50 / bare SSE floor (loopback HTTP)"),
            ("sdk_ratio", "opensandbox SDK commands.run('echo hi') p50 / the same SDK call on the bare floor"),
        ):
            rows.append((label, f"{osb[key]:.2f}", "<= 1.2", osb[key] <= 1.2))
    start = found.get("startup")
    if start:
        cpu_ratio = start["serve_cpu_ms"] / start["bare_cpu_ms"]
        rows.append(
            (
                "sandproof serve start, CPU / two bare apps",
                f"{cpu_ratio:.2f} ({start['serve_cpu_ms']:.0f} vs {start['bare_cpu_ms']:.0f} ms)",
                "<= 1.2",
                cpu_ratio <= 1.2,
            )
        )
        rows.append(
            (
                "sandproof serve start, both ports answer",
                f"{start['serve_ms']:.0f} ms (bare {start['bare_ms']:.0f} ms)",
                "< 300 ms on a quiet machine",
                start["serve_ms"] < 300,
            )
        )
        rows.append(
            (
                "in-process TensorLakeMock() and its app, first build",
                f"{start['constructor_ms']:.1f} ms (bare {start['bare_constructor_ms']:.1f} ms)",
                "<= 5 ms",
                start["constructor_ms"] <= 5,
            )
        )
    suite = found.get("suite")
    if suite and not suite.get("skipped"):
        cpu = f", {suite['cpu_seconds']:.0f} s CPU" if suite.get("cpu_seconds") is not None else ""
        rows.append(
            (
                "sandproof check --target mock",
                f"{suite['seconds']:.1f} s wall{cpu} ({suite['source']})",
                "< 60 s wall on a quiet machine",
                suite["seconds"] < 60,
            )
        )
    policy = found.get("policy")
    if policy:
        rows.append(
            (
                f"policy: build of a {policy['rules']:,}-rule TensorLake policy / json.loads of it",
                f"{policy['build_ratio']:.1f} ({policy['build_ms']:.0f} vs {policy['parse_ms']:.1f} ms; "
                f"parse plus one dict of the entries: {policy.get('table_floor_ratio', 0):.1f})",
                "<= 5 (at 100k rules)",
                policy["build_ratio"] <= 5 if policy["rules"] >= 100_000 else None,
            )
        )
        if "os_build_ratio" in policy:
            rows.append(
                (
                    f"policy: build of a {policy['rules']:,}-rule OpenSandbox networkPolicy / json.loads of it",
                    f"{policy['os_build_ratio']:.1f} ({policy['os_build_ms']:.0f} vs {policy['os_parse_ms']:.1f} ms)",
                    "<= 5 (at 100k rules)",
                    policy["os_build_ratio"] <= 5 if policy["rules"] >= 100_000 else None,
                )
            )
    durable = found.get("durability")
    if durable:
        fsyncs = "not measured" if durable["fsyncs_per_write"] is None else f"{durable['fsyncs_per_write']:.2f}"
        rows.append(
            (
                "creates/s with --state-file / in memory",
                f"{durable['ratio']:.2f} ({fsyncs} fsyncs per acknowledged write)",
                ">= 0.7",
                durable["ratio"] >= 0.7,
            )
        )
    linux = found.get("linux_runtime")
    if linux and not linux.get("skipped"):
        lives = ", ".join(f"{n} live {linux[f'live_{n}_p50']:.0f} ms" for n in (1, 10, 50) if f"live_{n}_p50" in linux)
        rows.append(
            (
                "linux create->echo->delete p50, slowest / fastest as sandboxes are live",
                f"{linux['live_flat']:.2f} ({lives})",
                "<= 1.5",
                linux["live_flat"] <= 1.5,
            )
        )
    elif linux:
        rows.append(("linux create->echo->delete at 1, 10, 50 live", f"skipped ({linux['skipped']})", "<= 1.5", None))
    return [f"{label}: {value} (goal {goal}: {_verdict(met)})" for label, value, goal, met in rows]


def summary(found: dict[str, dict[str, Any]]) -> list[str]:
    """Return the acceptance lines: each headline figure next to its goal."""
    lines = goals(found)
    durable = found.get("durability")
    if durable:
        parts = "; ".join(
            f"{name} {us:.0f} us ({us / durable['request_us']:.0%})" for name, us in durable["parts_us"].items()
        )
        lines.append(
            f"CPU per request sent straight to the durable TensorLake app: {durable['request_us']:.0f} us; {parts}"
        )
    over = found.get("overhead")
    if over:
        for provider in ("tensorlake", "opensandbox"):
            lines.append(
                f"throughput mock/echo ({provider} GET): {over[f'{provider}_ratio']:.2f} (goal >= 0.85); server CPU "
                f"{over[f'{provider}_mock_us']:.0f} us/request against {over[f'{provider}_echo_us']:.0f} us for the echo"
            )
    listing = found.get("listing")
    if listing:
        large, small = listing["large"], listing["small"]
        for key, value in listing.items():
            if isinstance(value, dict):
                goal = " (goal <= 2)" if key.startswith("opensandbox:page 1 of 20") else ""
                lines.append(
                    f"LIST {key}: {value['ms_large']:.2f} ms at {large:,} / {value['ms_small']:.2f} ms at {small:,} "
                    f"= {value['ratio']:.2f}{goal}"
                )
    crash = found.get("crash")
    if crash:
        lines.append(
            f"crash test: {crash['rounds']} SIGKILLs, {crash['acknowledged']} acknowledged writes: lost {crash['lost']}, "
            f"phantom {crash['phantom']} (goal 0 and 0); stray files: {crash['stray_files'] or 'none'}"
        )
    linux = found.get("linux_runtime")
    if linux and linux.get("skipped"):
        lines.append(f"linux runtime: skipped ({linux['skipped']})")
    elif linux:
        apis = ", ".join(
            f"{p} {linux[f'{p}_linux_p50']:.1f} ms (emulator {linux[f'{p}_emulator_p50']:.1f} ms)"
            for p in ("tensorlake", "opensandbox")
        )
        lines.append(
            f"create -> echo -> delete p50: linux runtime {linux['linux_p50']:.1f} ms, emulator "
            f"{linux['emulator_p50']:.2f} ms (goal linux < 60 ms); through the APIs: {apis}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run each benchmark script in its own process; return non-zero if one failed."""
    args = list(sys.argv[1:] if argv is None else argv)
    here = Path(__file__).resolve().parent
    failed: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    for name in BENCHES:
        script = here / name
        if not script.exists():
            print(f"== {name}: missing, skipped", flush=True)
            continue
        print(f"== {name} {' '.join(args)}", flush=True)
        started = time.monotonic()
        code, figures = _run(script, args)
        print(f"== {name}: exit {code} in {time.monotonic() - started:.1f} s", flush=True)
        for item in figures:
            found[str(item.pop("bench"))] = item
        if code != 0:
            failed.append(name)
    print("== summary" + (" (smoke: small sizes, short runs)" if "--smoke" in args else ""))
    for line in summary(found):
        print(f"   {line}")
    if failed:
        print(f"failed: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
