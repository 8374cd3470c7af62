"""HTTP probe commands (curl, wget) that resolve and connect through the sandbox's egress gate."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit

from .filesystem import FsError
from .network import HttpResponse, NetworkContext, canonical_url, default_port, is_ip, lookup
from .steps import Exit, Invocation, Sleep, Step, err, fail, out


@dataclass
class _CurlOptions:
    url: str = ""
    silent: bool = False
    show_error: bool = False
    fail: bool = False
    head: bool = False
    include: bool = False
    follow: bool = False
    output: str | None = None
    write_out: str = ""
    method: str | None = None
    data: str | None = None
    max_time: float | None = None


_CURL_VALUE_SHORT = {"o": "output", "w": "write_out", "X": "method", "m": "max_time", "d": "data"}
_CURL_VALUE_LONG = {
    "--output": "output",
    "--write-out": "write_out",
    "--request": "method",
    "--max-time": "max_time",
    "--data": "data",
    "--data-raw": "data",
    "--data-binary": "data",
}
_CURL_IGNORED_VALUE = frozenset("HAuebFT") | {
    "--header",
    "--user-agent",
    "--user",
    "--connect-timeout",
    "--retry",
    "--cookie",
    "--form",
    "--referer",
}
_CURL_FLAGS = {"s": "silent", "S": "show_error", "f": "fail", "I": "head", "i": "include", "L": "follow"}
_CURL_LONG_FLAGS = {
    "--silent": "silent",
    "--show-error": "show_error",
    "--fail": "fail",
    "--head": "head",
    "--include": "include",
    "--location": "follow",
}
_CURL_IGNORED_FLAGS = frozenset("kvq#gN") | {"--insecure", "--verbose", "--compressed", "--no-progress-meter"}


def _parse_curl(args: tuple[str, ...]) -> _CurlOptions | str:
    opts = _CurlOptions()
    queue = list(args)

    def take(field_name: str, value: str | None) -> None:
        if value is None:
            if not queue:
                raise ValueError(f"option requires an argument: {field_name}")
            value = queue.pop(0)
        if field_name == "max_time":
            opts.max_time = float(value)
        elif field_name:
            setattr(opts, field_name, value)

    try:
        while queue:
            arg = queue.pop(0)
            if arg.startswith("--"):
                name, eq, value = arg.partition("=")
                if name in _CURL_VALUE_LONG or name in _CURL_IGNORED_VALUE:
                    take(_CURL_VALUE_LONG.get(name, ""), value if eq else None)
                elif name in _CURL_LONG_FLAGS:
                    setattr(opts, _CURL_LONG_FLAGS[name], True)
                elif name not in _CURL_IGNORED_FLAGS:
                    return f"option {arg}: is unknown"
            elif arg.startswith("-") and len(arg) > 1:
                for index, ch in enumerate(arg[1:], start=1):
                    if ch in _CURL_VALUE_SHORT or ch in _CURL_IGNORED_VALUE:
                        take(_CURL_VALUE_SHORT.get(ch, ""), arg[index + 1 :] or None)
                        break
                    if ch in _CURL_FLAGS:
                        setattr(opts, _CURL_FLAGS[ch], True)
                    elif ch not in _CURL_IGNORED_FLAGS:
                        return f"option -{ch}: is unknown"
            elif not opts.url:
                opts.url = arg
    except ValueError as exc:
        return str(exc)
    return opts


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _head_block(response: HttpResponse) -> bytes:
    headers = {"content-length": str(len(response.body)), **response.headers}
    lines = [f"HTTP/1.1 {response.status} {_reason(response.status)}".rstrip()]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _write_out(fmt: str, values: dict[str, str]) -> str:
    fmt = fmt.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
    return re.sub(r"%\{(\w+)\}", lambda m: values.get(m.group(1), ""), fmt).replace("%%", "%")


def curl(net: NetworkContext, inv: Invocation) -> Iterator[Step]:
    """Emulate curl: resolve, connect through the gate, then answer from the HTTP table."""
    parsed = _parse_curl(inv.args)
    if isinstance(parsed, str):
        yield from fail(f"curl: {parsed}\ncurl: try 'curl --help' or 'curl --manual' for more information", 2)
        return
    opts = parsed
    if not opts.url:
        yield from fail("curl: no URL specified\ncurl: try 'curl --help' or 'curl --manual' for more information", 2)
        return
    url = canonical_url(opts.url)
    values = {"http_code": "000", "response_code": "000", "url_effective": url, "size_download": "0"}

    def report(code: int, message: str) -> Iterator[Step]:
        if not opts.silent or opts.show_error:
            yield err(f"curl: ({code}) {message}\n")
        if opts.write_out:
            yield out(_write_out(opts.write_out, values | {"exitcode": str(code)}))
        yield Exit(code)

    method = (opts.method or ("HEAD" if opts.head else "POST" if opts.data is not None else "GET")).upper()
    for _hop in range(20):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            yield from report(1, f'Protocol "{parts.scheme}" not supported')
            return
        try:
            host, port = parts.hostname or "", parts.port or default_port(parts.scheme)
        except ValueError:
            host, port = "", 0
        if not host:
            yield from report(3, "URL rejected: Malformed input to a URL function")
            return
        resolution = lookup(net, inv, host)
        if not resolution.ok:
            yield from report(6, f"Could not resolve host: {host}")
            return
        ip = resolution.addresses[0]
        values |= {"remote_ip": ip, "remote_port": str(port), "url_effective": url}
        if not net.gate.connect(None if is_ip(host) else host, ip, port):
            yield from report(7, f"Failed to connect to {host} port {port} after 0 ms: Couldn't connect to server")
            return
        response = net.http.lookup(method, url)
        if response.delay:
            if opts.max_time is not None and response.delay > opts.max_time:
                yield Sleep(opts.max_time)
                ms = int(opts.max_time * 1000)
                yield from report(28, f"Operation timed out after {ms} milliseconds with 0 bytes received")
                return
            yield Sleep(response.delay)
        location = {k.lower(): v for k, v in response.headers.items()}.get("location")
        if not (opts.follow and location and 300 <= response.status < 400):
            break
        url = canonical_url(location if "://" in location else f"{parts.scheme}://{parts.netloc}{location}")
    else:
        yield from report(47, "Maximum (19) redirects followed")
        return
    values |= {"http_code": f"{response.status:03d}", "response_code": f"{response.status:03d}"}
    if opts.fail and response.status >= 400:
        yield from report(22, f"The requested URL returned error: {response.status}")
        return
    payload = _head_block(response) if opts.head else response.body
    if opts.include and not opts.head:
        payload = _head_block(response) + payload
    values["size_download"] = str(len(payload))
    if opts.output not in (None, "-", "/dev/null"):
        try:
            inv.fs.write(inv.path(opts.output), payload)
        except FsError as exc:
            yield from report(23, f"Failure writing output to destination ({exc.strerror})")
            return
    elif opts.output != "/dev/null":
        yield out(payload)
    if opts.write_out:
        yield out(_write_out(opts.write_out, values | {"exitcode": "0"}))
    yield Exit(0)


def wget(net: NetworkContext, inv: Invocation) -> Iterator[Step]:
    """Emulate GNU wget with -q, -O FILE/-O-, -T N and --spider."""
    quiet = spider = False
    output: str | None = None
    timeout_text: str | None = None
    urls: list[str] = []
    queue = list(inv.args)
    while queue:
        arg = queue.pop(0)
        if arg in ("-q", "--quiet"):
            quiet = True
        elif arg == "--spider":
            spider = True
        elif arg.startswith(("--output-document=", "--timeout=")):
            name, _, value = arg.partition("=")
            output, timeout_text = (value, timeout_text) if name == "--output-document" else (output, value)
        elif re.fullmatch(r"-q?O.*", arg):
            quiet = quiet or arg.startswith("-q")
            output = arg.split("O", 1)[1] or (queue.pop(0) if queue else "-")
        elif arg.startswith("-T"):
            timeout_text = arg[2:] or (queue.pop(0) if queue else "")
        elif not arg.startswith("-"):
            urls.append(arg)
    timeout = _seconds(timeout_text)
    if timeout_text is not None and timeout is None:
        yield from fail(f"wget: --timeout: Invalid time period '{timeout_text}'", 2)
        return
    if not urls:
        yield from fail("wget: missing URL\nUsage: wget [OPTION]... [URL]...", 1)
        return
    url = canonical_url(urls[0])
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or default_port(parts.scheme)
    log: Callable[[str], Iterator[Step]] = (lambda _: iter(())) if quiet else (lambda s: iter([err(s)]))
    yield from log(f"--  {url}\n")
    resolution = lookup(net, inv, host)
    if not resolution.ok:
        yield from fail(f"wget: unable to resolve host address '{host}'", 4)
        return
    ip = resolution.addresses[0]
    yield from log(f"Connecting to {host} ({host})|{ip}|:{port}... ")
    if not net.gate.connect(None if is_ip(host) else host, ip, port):
        yield from log("failed: Connection refused.\n")
        yield Exit(4)
        return
    response = net.http.lookup("HEAD" if spider else "GET", url)
    if response.delay:
        if timeout is not None and response.delay > timeout:
            yield Sleep(timeout)
            yield from log("connected.\nHTTP request sent, awaiting response... Read error (Connection timed out).\n")
            yield Exit(4)
            return
        yield Sleep(response.delay)
    reason = _reason(response.status)
    yield from log(f"connected.\nHTTP request sent, awaiting response... {response.status} {reason}\n")
    if response.status >= 400:
        yield from log(f"ERROR {response.status}: {reason}.\n")
        yield Exit(8)
        return
    if not spider:
        target = output if output is not None else (parts.path.rsplit("/", 1)[-1] or "index.html")
        if target == "-":
            yield out(response.body)
        else:
            try:
                inv.fs.write(inv.path(target), response.body)
            except FsError as exc:
                yield from fail(f"{target}: {exc.strerror}", 3)
                return
            yield from log(f"Saving to: '{target}'\n")
    yield Exit(0)


def _seconds(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:
        return None
