"""Benchmark TensorLake egress decisions per second: the indexed engine next to the naive linear scan.

Run ``python bench/policy.py`` for 10, 1k, 10k and 100k rules, or ``--smoke`` for a quick run on tiny rule
sets. Rule sets mix exact domains, wildcards, IPv4 addresses and CIDRs (with ``deny_out`` entries too); the
queries hit rules about half of the time. Both engines are warmed up first, so index building and rule
compilation are not timed. The report ends with two ratios: the indexed rate at the largest size over the
rate at the smallest (target >= 0.5: cost must not grow with the rule count) and indexed over naive at 10k
(target >= 20). Building the largest policy from its JSON (``NetworkConfig.from_json``, then its index) is
timed against ``json.loads`` of the same policy text (target: at most 5 times the parse), and so is an
OpenSandbox ``networkPolicy`` of as many egress rules (``NetworkPolicy.from_json``, then its index). The two are
timed interleaved, parse then build, and the medians are reported.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from support import emit

from contracts import opensandbox
from contracts._naive import decide_egress_naive
from contracts.tensorlake import Decision, NetworkConfig, decide_egress

FULL_SIZES = (10, 1_000, 10_000, 100_000)
SMOKE_SIZES = (10, 100)
PREFIXES = (8, 12, 16, 20, 24, 28)
SCALING_TARGET = 0.5
SPEEDUP_TARGET = 20.0
SPEEDUP_SIZE = 10_000
BUILD_TARGET = 5.0

Query = tuple[str | None, str | None]
Engine = Callable[..., Decision]


def _ip(value: int) -> str:
    return f"{value >> 24 & 255}.{value >> 16 & 255}.{value >> 8 & 255}.{value & 255}"


def _entry(rng: random.Random, i: int, *, wildcard: bool) -> str:
    kind = i % 5
    if kind in (0, 1):
        return f"svc{i}.team{i % 97}.example{i % 13}.com"
    if kind == 2:
        return f"*.zone{i}.corp{i % 7}.net" if wildcard else f"host{i}.corp{i % 7}.net"
    if kind == 3:
        return _ip(rng.randrange(1 << 32))
    prefix = PREFIXES[i // 5 % len(PREFIXES)]
    network = rng.randrange(1 << 32) & ((1 << prefix) - 1) << (32 - prefix)
    return f"{_ip(network)}/{prefix}"


def build_config(size: int, rng: random.Random) -> NetworkConfig:
    """Return a policy of ``size`` allow_out entries plus about 5% as many deny_out entries."""
    allow = tuple(_entry(rng, i, wildcard=True) for i in range(size))
    deny = tuple(_entry(rng, i, wildcard=False) for i in range(size, size + max(1, size // 20)))
    return NetworkConfig(True, allow, deny)


def build_queries(config: NetworkConfig, count: int, rng: random.Random) -> list[Query]:
    """Return destinations of which about half are covered by some rule."""
    entries = config.allow_out + config.deny_out
    queries: list[Query] = []
    for _ in range(count):
        if rng.random() < 0.5:
            queries.append((f"miss{rng.randrange(10**6)}.example.org", _ip(rng.randrange(1 << 32))))
            continue
        entry = rng.choice(entries)
        if entry.startswith("*."):
            queries.append((f"api.v{rng.randrange(9)}.{entry[2:]}", None))
        elif "/" in entry:
            address, _, prefix = entry.partition("/")
            start = sum(int(o) << (24 - 8 * n) for n, o in enumerate(address.split(".")))
            queries.append((None, _ip(start + rng.randrange(1 << (32 - int(prefix))))))
        elif entry[-1].isdigit():
            queries.append((None, entry))
        else:
            queries.append((entry.upper(), _ip(rng.randrange(1 << 32))))
    return queries


def measure(engine: Engine, config: NetworkConfig, queries: Sequence[Query], budget: float, minimum: int) -> float:
    """Return decisions per second, running for at least ``budget`` seconds and ``minimum`` decisions."""
    engine(config, host=queries[0][0], ip=queries[0][1])
    done = 0
    start = time.perf_counter()
    elapsed = 0.0
    while elapsed < budget or done < minimum:
        host, ip = queries[done % len(queries)]
        engine(config, host=host, ip=ip)
        done += 1
        if done % 64 == 0 or done >= minimum:
            elapsed = time.perf_counter() - start
    return done / elapsed


def build_ratio(config: NetworkConfig, repeats: int) -> tuple[float, float]:
    """Return the median ms of building ``config`` from JSON text (parse, from_json, index) and of the parse alone."""
    return _build_ratio(json.dumps(config.to_json()), lambda obj: NetworkConfig.from_json(obj).index(), repeats)


def table_floor_ms(config: NetworkConfig, repeats: int) -> float:
    """Return the median ms of parsing ``config``'s JSON and putting its entries in one dict: the least an index costs.

    Any index of the entries hashes each new string once and inserts it; this is that alone, without a check.
    """
    text = json.dumps(config.to_json())

    def table(obj: dict[str, list[str]]) -> None:
        for entries in (obj["allow_out"], obj["deny_out"]):
            dict(zip(entries, range(len(entries)), strict=True))

    return statistics.median(_timed(lambda: table(json.loads(text))) for _ in range(repeats)) * 1000


def opensandbox_policy(size: int, rng: random.Random) -> dict[str, object]:
    """Return an OpenSandbox ``networkPolicy`` of ``size`` egress rules: domains, wildcards and IPv4 addresses."""
    egress = []
    for i in range(size):
        entry = _entry(rng, i, wildcard=True)
        target = entry.partition("/")[0] if "/" in entry else entry  # OpenSandbox takes no CIDR
        egress.append({"action": "deny" if i % 7 == 0 else "allow", "target": target})
    return {"defaultAction": "deny", "egress": egress}


def opensandbox_build_ratio(policy: dict[str, object], repeats: int) -> tuple[float, float]:
    """Return the median ms of building an OpenSandbox policy from JSON text (parse, from_json, index) and of the parse."""
    return _build_ratio(json.dumps(policy), lambda obj: opensandbox.NetworkPolicy.from_json(obj)._index, repeats)


def _build_ratio(text: str, build_from: Callable[[object], object], repeats: int) -> tuple[float, float]:
    """Time the parse and the build alternately, each from a collected heap with the collector off.

    As ``timeit`` does: a full collection's cost depends on everything else the process holds (here the
    policies and indexes of earlier rows), so with it on either figure could double from one run to the next.
    """
    build: list[float] = []
    parse: list[float] = []
    for _ in range(repeats):
        parse.append(_timed(lambda: json.loads(text)))
        build.append(_timed(lambda: build_from(json.loads(text))))
    return statistics.median(build) * 1000, statistics.median(parse) * 1000


def _timed(work: Callable[[], object]) -> float:
    """Return the seconds ``work`` took, run from a collected heap with the cyclic collector off."""
    gc.collect()
    gc.disable()
    try:
        began = time.perf_counter()
        work()
        return time.perf_counter() - began
    finally:
        gc.enable()


def _check(label: str, value: float, target: float, *, smoke: bool) -> str:
    if smoke:
        return f"{label} = {value:,.2f} (smoke run; the target >= {target:g} applies to the full run)"
    verdict = "ok" if value >= target else "BELOW TARGET"
    return f"{label} = {value:,.2f} (target >= {target:g}: {verdict})"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the rates and ratios; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="tiny rule sets, a fraction of a second")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    sizes = SMOKE_SIZES if args.smoke else FULL_SIZES
    indexed_budget, naive_budget = (0.02, 0.02) if args.smoke else (0.4, 0.6)

    print("TensorLake egress decisions per second (indexed engine vs naive linear scan)")
    print(f"{'rules':>9} {'indexed/s':>14} {'naive/s':>14} {'speedup':>10}")
    indexed: dict[int, float] = {}
    naive: dict[int, float] = {}
    for size in sizes:
        config = build_config(size, rng)
        queries = build_queries(config, 2_000, rng)
        config.index()
        indexed[size] = measure(decide_egress, config, queries, indexed_budget, 200)
        naive[size] = measure(decide_egress_naive, config, queries, naive_budget, 5)
        speedup = indexed[size] / naive[size]
        print(f"{size:>9,} {indexed[size]:>14,.0f} {naive[size]:>14,.0f} {speedup:>9,.1f}x", flush=True)

    small, large = sizes[0], sizes[-1]
    at = SPEEDUP_SIZE if SPEEDUP_SIZE in sizes else large
    scaling = indexed[large] / indexed[small]
    print(_check(f"ratio indexed@{large:,} / indexed@{small:,}", scaling, SCALING_TARGET, smoke=args.smoke))
    print(_check(f"ratio indexed / naive @{at:,}", indexed[at] / naive[at], SPEEDUP_TARGET, smoke=args.smoke))
    build_size = sizes[-1]
    build_policy = build_config(build_size, rng)
    build_ms, parse_ms = build_ratio(build_policy, 3 if args.smoke else 9)
    floor_ms = table_floor_ms(build_policy, 3 if args.smoke else 9)
    print(
        f"build of a {build_size:,}-rule policy from JSON (parse, from_json, index): {build_ms:.1f} ms; json.loads of "
        f"it {parse_ms:.1f} ms; ratio {build_ms / parse_ms:.1f} (target <= {BUILD_TARGET:g}); parse plus one dict "
        f"of the entries, unchecked: {floor_ms:.1f} ms, ratio {floor_ms / parse_ms:.1f}"
    )
    os_build_ms, os_parse_ms = opensandbox_build_ratio(opensandbox_policy(build_size, rng), 3 if args.smoke else 9)
    print(
        f"build of a {build_size:,}-rule OpenSandbox networkPolicy from JSON (parse, from_json, index): "
        f"{os_build_ms:.1f} ms; json.loads of it {os_parse_ms:.1f} ms; ratio {os_build_ms / os_parse_ms:.1f} "
        f"(target <= {BUILD_TARGET:g})"
    )
    emit(
        "policy",
        {
            "rules": build_size,
            "build_ms": round(build_ms, 2),
            "parse_ms": round(parse_ms, 2),
            "build_ratio": round(build_ms / parse_ms, 2),
            "table_floor_ratio": round(floor_ms / parse_ms, 2),
            "os_build_ms": round(os_build_ms, 2),
            "os_parse_ms": round(os_parse_ms, 2),
            "os_build_ratio": round(os_build_ms / os_parse_ms, 2),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
