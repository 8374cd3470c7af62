"""Crash test: kill ``sandproof serve --state-file`` with SIGKILL under a write load, restart it, and audit.

Client threads write through both mocks while the server runs: TensorLake creates (a unique ``name``) and
deletes, OpenSandbox creates (a unique ``metadata`` token), metadata patches and deletes, and admin DNS
updates (a unique name each). Every request is logged with what came back:

* **acknowledged**: a success status was received;
* **refused**: an error status was received (the change must not exist);
* **in doubt**: the request was sent but no response arrived (the kill came first).

At a random moment the server is killed with SIGKILL, restarted on the same state file, and audited:

* **lost**: an acknowledged change that is missing after the restart (a created sandbox that is gone without
  an acknowledged or in-doubt delete, a deleted one that is back, a patched value that is not the last one,
  a DNS entry that is gone);
* **phantom**: a change present after the restart that no request in doubt could have made: a sandbox or
  DNS entry whose token was never sent or was refused, or a sandbox deleted by an acknowledged delete. A
  change whose response was never received may be present or absent; those are counted as ``in doubt``.

The load then resumes on the restarted server, so state accumulates over the rounds. The goal is 0 lost and
0 phantom, and no stray files beside the state file (its SQLite ``-wal``/``-shm`` companions aside).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from support import API_KEY, Served, emit, start_serve

TL_HEADERS = {"authorization": f"Bearer {API_KEY}"}
OSB_HEADERS = {"OPEN-SANDBOX-API-KEY": API_KEY}
ACKED, REFUSED, DOUBT = "acknowledged", "refused", "in doubt"


@dataclass
class Op:
    """One write and what its sender knows of it."""

    kind: str  # tl-create, tl-delete, osb-create, osb-patch, osb-delete, dns
    token: str
    target: str | None = None  # the sandbox a delete or patch acts on
    value: str | None = None
    outcome: str = DOUBT
    round: int = 0


@dataclass
class Ledger:
    """Every write sent so far, and the ids the creates answered."""

    ops: list[Op] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Per writer, the names of its acknowledged TensorLake creates and the ids of its OpenSandbox ones: a
    #: writer deletes and patches only its own sandboxes, so the order of its writes is the server's order.
    tl_live: dict[int, list[str]] = field(default_factory=dict)
    osb_live: dict[int, list[str]] = field(default_factory=dict)

    def add(self, op: Op) -> Op:
        with self.lock:
            self.ops.append(op)
        return op


@dataclass
class Audit:
    """What one restart showed."""

    lost: list[str] = field(default_factory=list)
    phantom: list[str] = field(default_factory=list)
    doubt_applied: int = 0
    doubt_absent: int = 0


_counter = itertools.count()


def _token(prefix: str) -> str:
    return f"{prefix}{next(_counter)}-{random.randrange(1 << 30):x}"


def _send(op: Op, call: Callable[..., httpx.Response], path: str, **kwargs: Any) -> httpx.Response | None:
    try:
        response = call(path, **kwargs)
    except httpx.HTTPError:
        op.outcome = DOUBT
        return None
    op.outcome = ACKED if response.status_code < 400 else REFUSED
    return response


def _writer(
    served: Served,
    ledger: Ledger,
    stop: threading.Event,
    ready: threading.Barrier,
    writer: int,
    seed: int,
    round_no: int,
) -> None:
    rng = random.Random(seed)
    tl_live = ledger.tl_live.setdefault(writer, [])
    osb_live = ledger.osb_live.setdefault(writer, [])
    timeout = httpx.Timeout(5.0)
    with (
        httpx.Client(base_url=served.url("tensorlake"), headers=TL_HEADERS, timeout=timeout) as tl,
        httpx.Client(base_url=served.url("opensandbox"), headers=OSB_HEADERS, timeout=timeout) as osb,
    ):
        ready.wait()
        while not stop.is_set():
            roll = rng.random()
            if roll < 0.3:
                name = _token("tl")
                op = ledger.add(Op("tl-create", name, round=round_no))
                got = _send(op, tl.post, "/sandboxes", json={"name": name})
                if got is not None and op.outcome == ACKED:
                    tl_live.append(name)
            elif roll < 0.4:
                target = tl_live.pop(rng.randrange(len(tl_live))) if tl_live else None
                if target is None:
                    continue
                op = ledger.add(Op("tl-delete", _token("tld"), target=target, round=round_no))
                _send(op, tl.delete, f"/sandboxes/{target}")
            elif roll < 0.7:
                token = _token("osb")
                op = ledger.add(Op("osb-create", token, round=round_no))
                body = {"image": {"uri": "crash"}, "entrypoint": ["sh"], "resourceLimits": {}, "metadata": {"t": token}}
                got = _send(op, osb.post, "/v1/sandboxes", json=body)
                if got is not None and op.outcome == ACKED:
                    sid = str(got.json()["id"])
                    op.target = sid
                    osb_live.append(sid)
            elif roll < 0.8:
                target = rng.choice(osb_live) if osb_live else None
                if target is None:
                    continue
                value = _token("v")
                op = ledger.add(Op("osb-patch", _token("p"), target=target, value=value, round=round_no))
                _send(op, osb.patch, f"/v1/sandboxes/{target}/metadata", json={"p": value})
            elif roll < 0.9:
                target = osb_live.pop(rng.randrange(len(osb_live))) if osb_live else None
                if target is None:
                    continue
                op = ledger.add(Op("osb-delete", _token("od"), target=target, round=round_no))
                _send(op, osb.delete, f"/v1/sandboxes/{target}")
            else:
                name = _token("h") + ".crash.test"
                op = ledger.add(Op("dns", name, round=round_no))
                _send(op, osb.post, "/_mock/dns", json={name: ["10.1.2.3"]})


def _observed(served: Served) -> tuple[set[str], dict[str, dict[str, str]], set[str]]:
    """Return the TensorLake names, the OpenSandbox sandboxes (id: metadata) and the DNS names now served."""
    with httpx.Client(timeout=60.0) as client:
        listed = client.get(served.url("tensorlake") + "/sandboxes", headers=TL_HEADERS)
        listed.raise_for_status()
        names = {str(s["name"]) for s in listed.json()["sandboxes"] if s.get("name")}
        osb: dict[str, dict[str, str]] = {}
        page = 1
        while True:
            got = client.get(
                served.url("opensandbox") + "/v1/sandboxes",
                params={"page": page, "pageSize": 200},
                headers=OSB_HEADERS,
            )
            got.raise_for_status()
            body = got.json()
            osb.update({str(s["id"]): dict(s.get("metadata") or {}) for s in body["items"]})
            if not body["pagination"]["hasNextPage"]:
                break
            page += 1
        dns = client.get(served.url("opensandbox") + "/_mock/dns")
        dns.raise_for_status()
        entries = set(dns.json()["entries"])
    return names, osb, entries


def audit(ledger: Ledger, served: Served) -> Audit:
    """Compare what the restarted server shows with every write sent so far."""
    names, osb, dns = _observed(served)
    result = Audit()
    tl_created: dict[str, Op] = {}
    tl_deleted: dict[str, list[Op]] = {}
    osb_created: dict[str, Op] = {}
    osb_deleted: dict[str, list[Op]] = {}
    patches: dict[str, list[Op]] = {}
    dns_ops: dict[str, Op] = {}
    for op in ledger.ops:
        if op.kind == "tl-create":
            tl_created[op.token] = op
        elif op.kind == "tl-delete" and op.target:
            tl_deleted.setdefault(op.target, []).append(op)
        elif op.kind == "osb-create":
            osb_created[op.token] = op
        elif op.kind == "osb-delete" and op.target:
            osb_deleted.setdefault(op.target, []).append(op)
        elif op.kind == "osb-patch" and op.target:
            patches.setdefault(op.target, []).append(op)
        elif op.kind == "dns":
            dns_ops[op.token] = op

    def check(present: bool, create: Op | None, deletes: list[Op], label: str) -> None:
        acked_delete = any(d.outcome == ACKED for d in deletes)
        doubt_delete = any(d.outcome == DOUBT for d in deletes)
        if create is None or create.outcome == REFUSED:
            if present:
                result.phantom.append(f"{label}: present, never created")
            return
        if create.outcome == DOUBT:
            if present:
                result.doubt_applied += 1
            else:
                result.doubt_absent += 1
            return
        if acked_delete and present:
            result.phantom.append(f"{label}: deleted (acknowledged) but present")
        elif not present and not acked_delete and not doubt_delete:
            result.lost.append(f"{label}: created (acknowledged) but missing")
        elif doubt_delete and not acked_delete:
            if present:
                result.doubt_absent += 1
            else:
                result.doubt_applied += 1

    for name, op in tl_created.items():
        check(name in names, op, tl_deleted.get(name, []), f"tensorlake {name}")
    for name in names - set(tl_created):
        if name.startswith("tl"):
            result.phantom.append(f"tensorlake {name}: present, never sent")
    token_to_id = {meta.get("t"): sid for sid, meta in osb.items()}
    for token, op in osb_created.items():
        sid = token_to_id.get(token)
        check(sid is not None, op, osb_deleted.get(op.target or sid or "", []), f"opensandbox {token}")
        if sid is None:
            continue
        history = patches.get(sid, [])
        seen = osb[sid].get("p")
        last_acked = max((i for i, p in enumerate(history) if p.outcome == ACKED), default=-1)
        allowed = {p.value for i, p in enumerate(history) if i >= last_acked and p.outcome != REFUSED}
        if last_acked < 0:
            allowed.add(None)
        if seen not in allowed:
            result.lost.append(f"opensandbox {sid}: metadata p={seen!r}, expected one of {sorted(map(str, allowed))}")
    for stray in set(token_to_id) - set(osb_created):
        if stray and stray.startswith("osb"):
            result.phantom.append(f"opensandbox {stray}: present, never sent")
    for host, op in dns_ops.items():
        present = host in dns
        if op.outcome == ACKED and not present:
            result.lost.append(f"dns {host}: set (acknowledged) but missing")
        elif op.outcome == REFUSED and present:
            result.phantom.append(f"dns {host}: refused but present")
        elif op.outcome == DOUBT:
            result.doubt_applied += present
            result.doubt_absent += not present
    return result


def stray_files(state: Path) -> list[str]:
    """Return the files beside ``state`` that are neither it nor its SQLite companions."""
    keep = {state.name, state.name + "-wal", state.name + "-shm", state.name + "-journal"}
    return sorted(p.name for p in state.parent.iterdir() if p.name not in keep)


def run(rounds: int, writers: int, state: Path, *, min_load: float, max_load: float, seed: int) -> dict[str, Any]:
    """Kill and restart the server ``rounds`` times under load; return the totals."""
    rng = random.Random(seed)
    ledger = Ledger()
    lost: set[str] = set()
    phantom: set[str] = set()
    applied = absent = 0
    stray: set[str] = set()
    examples: list[str] = []
    extra = ["--state-file", str(state), "--api-key", API_KEY]
    served = start_serve(extra)
    try:
        for round_no in range(1, rounds + 1):
            stop = threading.Event()
            ready = threading.Barrier(writers + 1)
            threads = [
                threading.Thread(
                    target=_writer, args=(served, ledger, stop, ready, n, rng.randrange(1 << 30), round_no)
                )
                for n in range(writers)
            ]
            for thread in threads:
                thread.start()
            ready.wait()  # the load runs before the kill's timer starts
            time.sleep(rng.uniform(min_load, max_load))
            served.proc.kill()  # SIGKILL: no handler runs, nothing is flushed on the way out
            served.proc.wait()
            stop.set()
            for thread in threads:
                thread.join()
            stray |= set(stray_files(state))
            served = start_serve(extra)
            found = audit(ledger, served)
            new_lost, new_phantom = set(found.lost) - lost, set(found.phantom) - phantom
            lost, phantom = lost | new_lost, phantom | new_phantom
            applied, absent = found.doubt_applied, found.doubt_absent
            examples += sorted(new_lost | new_phantom)[:3]
            sent = sum(1 for op in ledger.ops if op.round == round_no)
            print(
                f"round {round_no:2}: {sent} writes sent; newly lost {len(new_lost)}, newly phantom {len(new_phantom)}; "
                f"in doubt so far: applied {found.doubt_applied}, absent {found.doubt_absent}",
                flush=True,
            )
    finally:
        served.stop()
    stray |= set(stray_files(state))
    acked = sum(1 for op in ledger.ops if op.outcome == ACKED)
    return {
        "rounds": rounds,
        "writes": len(ledger.ops),
        "acknowledged": acked,
        "lost": len(lost),
        "phantom": len(phantom),
        "doubt_applied": applied,
        "doubt_absent": absent,
        "stray_files": sorted(stray),
        "examples": examples[:10],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the crash test and print its figures."""
    parser = argparse.ArgumentParser(prog="bench/crash.py")
    parser.add_argument("--smoke", action="store_true", help="a short run (3 kills)")
    parser.add_argument("--rounds", type=int, default=None, help="kills (default 20; smoke 3)")
    parser.add_argument("--writers", type=int, default=4, help="client threads (default 4)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--state-name", default="state.db", help="the state file's name (.json: the old format)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.smoke else 20)
    with tempfile.TemporaryDirectory(prefix="sandproof-crash-") as tmp:
        figures = run(
            rounds,
            args.writers,
            Path(tmp) / args.state_name,
            min_load=0.2 if args.smoke else 0.3,
            max_load=0.6 if args.smoke else 1.5,
            seed=args.seed,
        )
    print(
        f"crash test: {figures['rounds']} SIGKILLs under load, {figures['writes']} writes "
        f"({figures['acknowledged']} acknowledged): lost {figures['lost']}, phantom {figures['phantom']} "
        f"(goal 0 and 0); in doubt applied {figures['doubt_applied']}, absent {figures['doubt_absent']}; "
        f"stray files: {figures['stray_files'] or 'none'}"
    )
    for line in figures["examples"]:
        print(f"  e.g. {line}")
    emit("crash", {k: figures[k] for k in ("rounds", "writes", "acknowledged", "lost", "phantom", "stray_files")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
