"""The test suite's Redis Cluster: the devstack's embedded one
(``devtools.devstack.cluster``: three masters from the embedded
redis-server, slots assigned from Python, no internet), whose nodes also
hand out a plain redis-py client for looking inside one node."""

from __future__ import annotations

import redis

from devtools.devstack.cluster import ClusterNode
from devtools.devstack.cluster import RedisClusterServer as _Server


class ClusterNodeServer(ClusterNode):
    def client(self) -> redis.Redis:
        """A client of this node alone (not cluster-aware)."""
        return redis.Redis(port=self.port, socket_connect_timeout=0.5, decode_responses=True)


class RedisClusterServer(_Server):
    node_class = ClusterNodeServer
