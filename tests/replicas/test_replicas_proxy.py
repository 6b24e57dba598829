"""The test load balancer itself: requests alternate between replicas whatever connection they
come on, streams pass through as written, and a dead replica is skipped."""

from __future__ import annotations

from typing import Any

import httpx
from support.pace import scaled


async def test_requests_alternate_and_a_dead_replica_is_skipped(cluster: Any) -> None:
    async with cluster(2) as c, httpx.AsyncClient(base_url=c.url, timeout=scaled(10)) as client:
        for _ in range(4):
            assert (await client.get("/api/health")).status_code == 200
        assert c.proxy.upstream_of("GET", "/api/health") == [0, 1, 0, 1]
        c.replicas[0].proc.kill()
        await c.replicas[0].proc.wait()
        for _ in range(3):
            assert (await client.get("/api/health")).status_code == 200
        assert c.proxy.upstream_of("GET", "/api/health")[4:] == [1, 1, 1]
