"""Network probe commands (getent, nslookup, ping, nc, and curl/wget bindings) obeying the egress gate."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from .http_probes import curl, wget
from .network import NetworkContext, is_ip, lookup
from .steps import Exit, Handler, Invocation, Sleep, Step, err, fail, out


def make_probes(net: NetworkContext) -> dict[str, Handler]:
    """Return the probe handlers bound to `net`."""
    probes: dict[str, Callable[[NetworkContext, Invocation], Iterator[Step]]] = {
        "getent": getent,
        "nslookup": nslookup,
        "curl": curl,
        "wget": wget,
        "ping": ping,
        "nc": nc,
    }
    return {name: _bind(fn, net) for name, fn in probes.items()}


def _bind(fn: Callable[[NetworkContext, Invocation], Iterator[Step]], net: NetworkContext) -> Handler:
    return lambda inv: fn(net, inv)


def getent(net: NetworkContext, inv: Invocation) -> Iterator[Step]:
    """Emulate `getent hosts NAME...` and `getent passwd [NAME...]`."""
    if not inv.args:
        yield from fail("getent: wrong number of arguments", 1)
        return
    database, keys = inv.args[0], inv.args[1:]
    if database == "passwd":
        lines = inv.fs.read("/etc/passwd").decode().splitlines() if inv.fs.exists("/etc/passwd") else []
        hits = [line for line in lines if not keys or line.split(":", 1)[0] in keys]
        yield out("".join(line + "\n" for line in hits))
        yield Exit(0 if hits or not keys else 2)
        return
    if database not in ("hosts", "ahosts", "ahostsv4"):
        yield from fail(f"Unknown database: {database}", 1)
        return
    code = 0
    for name in keys:
        resolution = lookup(net, inv, name)
        if not resolution.ok:
            code = 2
            continue
        yield out("".join(f"{ip:<15} {name}\n" for ip in resolution.addresses))
    yield Exit(code)


def _nameserver(inv: Invocation) -> str:
    if inv.fs.exists("/etc/resolv.conf"):
        for line in inv.fs.read("/etc/resolv.conf").decode(errors="replace").splitlines():
            fields = line.split()
            if len(fields) > 1 and fields[0] == "nameserver":
                return fields[1]
    return "127.0.0.53"


def nslookup(net: NetworkContext, inv: Invocation) -> Iterator[Step]:
    """Emulate `nslookup NAME [SERVER]`."""
    names = [a for a in inv.args if not a.startswith("-")]
    if not names:
        yield from fail("nslookup: interactive mode is not supported", 1)
        return
    name = names[0]
    server = names[1] if len(names) > 1 else _nameserver(inv)
    resolution = lookup(net, inv, name, use_hosts=False)
    if resolution.error == "dns_blocked":
        yield out(";; connection timed out; no servers could be reached\n\n")
        yield Exit(1)
        return
    header = f"Server:\t\t{server}\nAddress:\t{server}#53\n\n"
    if not resolution.ok:
        yield out(f"{header}** server can't find {name}: NXDOMAIN\n\n")
        yield Exit(1)
        return
    answers = "".join(f"Name:\t{name}\nAddress: {ip}\n" for ip in resolution.addresses)
    yield out(f"{header}Non-authoritative answer:\n{answers}\n")
    yield Exit(0)


def _option(args: list[str], flag: str, default: float | None) -> float | None:
    """Take ``flag VALUE`` or ``flagVALUE`` (as getopt does) out of ``args`` and return VALUE as a number."""
    for index, arg in enumerate(args):
        if arg == flag:
            value = args[index + 1] if index + 1 < len(args) else ""
            del args[index : index + 2]
            return float(value)
        if arg.startswith(flag) and len(arg) > len(flag) and not arg.startswith("--"):
            del args[index]
            return float(arg[len(flag) :])
    return default


def ping(net: NetworkContext, inv: Invocation) -> Iterator[Step]:
    """Emulate iputils ping: ICMP is a connect to port 0; without -c it runs until killed."""
    args = list(inv.args)
    try:
        count = _option(args, "-c", None)
        interval = _option(args, "-i", 1.0) or 1.0
        for flag in ("-W", "-w", "-s", "-t"):
            _option(args, flag, None)
    except ValueError:
        yield from fail("ping: invalid argument", 2)
        return
    hosts = [a for a in args if not a.startswith("-")]
    if not hosts:
        yield from fail("ping: usage error: Destination address required", 1)
        return
    host = hosts[0]
    resolution = lookup(net, inv, host)
    if not resolution.ok:
        reason = "Temporary failure in name resolution"
        yield from fail(
            f"ping: {host}: {reason if resolution.error == 'dns_blocked' else 'Name or service not known'}", 2
        )
        return
    ip = resolution.addresses[0]
    allowed = net.gate.connect(None if is_ip(host) else host, ip, 0)
    yield out(f"PING {host} ({ip}) 56(84) bytes of data.\n")
    sent = received = 0
    for seq in itertools.count(1) if count is None else range(1, int(count) + 1):
        if seq > 1:
            yield Sleep(interval)
        sent += 1
        if allowed:
            received += 1
            yield out(f"64 bytes from {ip}: icmp_seq={seq} ttl=64 time=0.045 ms\n")
    loss = 100 - (100 * received // sent if sent else 0)
    stats = f"\n--- {host} ping statistics ---\n{sent} packets transmitted, {received} received, "
    stats += f"{loss}% packet loss, time {max(sent - 1, 0) * int(interval * 1000)}ms\n"
    if received:
        stats += "rtt min/avg/max/mdev = 0.045/0.045/0.045/0.000 ms\n"
    yield out(stats)
    yield Exit(0 if received else 1)


def nc(net: NetworkContext, inv: Invocation) -> Iterator[Step]:
    """Emulate `nc [-z] [-v] [-w N] HOST PORT` as a TCP connect probe."""
    args = list(inv.args)
    _option(args, "-w", None)
    verbose = any(a.startswith("-") and "v" in a for a in args)
    operands = [a for a in args if not a.startswith("-")]
    if len(operands) < 2 or not operands[1].isdigit():
        yield from fail("usage: nc [-vz] [-w timeout] destination port", 1)
        return
    host, port = operands[0], int(operands[1])
    resolution = lookup(net, inv, host)
    if not resolution.ok:
        reason = "Temporary failure in name resolution"
        if resolution.error == "nxdomain":
            reason = "Name or service not known"
        yield from fail(f'nc: getaddrinfo for host "{host}" port {port}: {reason}', 1)
        return
    ip = resolution.addresses[0]
    if not net.gate.connect(None if is_ip(host) else host, ip, port):
        yield from fail(f"nc: connect to {host} port {port} (tcp) failed: Connection refused", 1)
        return
    if verbose:
        yield err(f"Connection to {host} ({ip}) {port} port [tcp/*] succeeded!\n")
    yield Exit(0)
