"""Programs the linux-runtime tests run inside sandboxes (standard-library Python only: the sandbox sees the
host's ``python3`` without the test environment's packages)."""

from __future__ import annotations

#: ``python3 -c WS_ECHO <port>``: a WebSocket server echoing short text messages (``echo:`` prefixed, under
#: 126 bytes), one client at a time; it also answers plain HTTP with ``ws-echo <path>``.
WS_ECHO = r"""
import base64, hashlib, socket, struct, sys
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1]))); srv.listen(8)
def frames(conn):
    buf = b""
    while True:
        while len(buf) < 2 or len(buf) < 2 + 4 + (buf[1] & 127):
            more = conn.recv(4096)
            if not more:
                return
            buf += more
        opcode, length = buf[0] & 15, buf[1] & 127
        mask, data = buf[2:6], buf[6:6 + length]
        buf = buf[6 + length:]
        if opcode == 8:
            return
        yield bytes(b ^ mask[i % 4] for i, b in enumerate(data))
while True:
    conn, _ = srv.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        more = conn.recv(4096)
        if not more:
            break
        head += more
    if b"\r\n\r\n" not in head:
        conn.close(); continue
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:] if l)}
    if "sec-websocket-key" not in headers:
        body = f"ws-echo {lines[0].split()[1]}".encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        conn.close(); continue
    accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + GUID).encode()).digest()).decode()
    conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
    for data in frames(conn):
        reply = b"echo:" + data
        conn.sendall(bytes([0x81, len(reply)]) + reply)
    conn.close()
"""

#: ``python3 -c CONNECT_LOOP <host> <port> <seconds>``: connect to ``host:port`` every 10 ms for ``seconds``;
#: print ``ok <start>`` or ``no <start>`` per attempt, ``<start>`` the wall time the attempt began.
CONNECT_LOOP = r"""
import socket, sys, time
host, port, until = sys.argv[1], int(sys.argv[2]), time.time() + float(sys.argv[3])
while time.time() < until:
    start = time.time()
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        print("ok", repr(start), flush=True)
    except OSError:
        print("no", repr(start), flush=True)
    time.sleep(0.01)
"""


def after_swap(log: str, returned_at: float) -> tuple[int, int, list[float]]:
    """Return (successes before, failures after, successes that started after ``returned_at``) of a loop's log."""
    before = after_failures = 0
    late: list[float] = []
    for line in log.splitlines():
        verdict, _, stamp = line.partition(" ")
        if verdict not in ("ok", "no"):
            continue
        started = float(stamp)
        if verdict == "ok" and started > returned_at:
            late.append(started)
        elif verdict == "ok":
            before += 1
        elif started > returned_at:
            after_failures += 1
    return before, after_failures, late
