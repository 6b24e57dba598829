"""bench.replica_throughput's own parts that need no server: the wrk script's request, reading
wrk's result line, pooling several wrk processes' latencies, and the section it writes."""

from __future__ import annotations

import json
import re

from bench.harness.machine import Machine, Snapshot
from bench.replica_throughput import (
    WORKLOADS,
    Part,
    Results,
    Row,
    Sizing,
    parse_part,
    pooled_quantile,
    read_lua,
    render,
)


def test_the_read_script_sends_a_stateless_tools_call_of_one_of_the_notes() -> None:
    script = read_lua([4, 8, 15])
    assert "ids = {4,8,15}" in script
    body = re.search(r"BODY = \[==\[(.*)\]==\]", script)
    assert body is not None
    request = json.loads(body.group(1).replace("%d", "8"))
    assert request["method"] == "tools/call"
    assert request["params"]["name"] == "read_note" and request["params"]["arguments"] == {"note_id": 8}
    assert request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


def test_a_wrk_result_line_is_read_and_parts_pool_by_their_requests() -> None:
    line = 'RESULT {"requests": 300, "us": 2000000, "failed": 1, "status": 2, "socket": 3, "pcts": [%s]}'
    part = parse_part("Running 2s test\n" + line % ",".join(str(1000 * p) for p in range(1, 100)) + "\n")
    assert (part.requests, part.seconds, part.errors) == (300, 2.0, 6)
    assert part.percentiles_ms[0] == 1.0 and part.percentiles_ms[-1] == 99.0
    slow = Part(100, 2.0, 0, [500.0] * 99)
    assert pooled_quantile([part], 0.5) == 50.0
    assert pooled_quantile([part, slow], 0.5) == 66.0  # 3 of 4 requests from the fast part: its p66
    assert pooled_quantile([part, slow], 0.95) == 500.0


def test_the_section_reports_efficiency_per_core_and_the_sizing() -> None:
    machine = Machine(Snapshot(10.0, 50.0, 0.5), Snapshot(10.0, 50.0, 0.5), cores=2)
    results = Results(notes=1000, load_seconds=1.0, connections=32, pool_size=10)
    for replicas, rps in ((1, 100), (2, 180), (4, 170)):
        parts = [Part(rps * 10 // replicas, 10.0, 0, [float(p) for p in range(1, 100)]) for _ in range(replicas)]
        results.rows.append(Row(WORKLOADS[0], replicas, 32 // replicas, parts, app_cpu_s=5.0, pg_cpu_s=1.0,
                                busy_cpu_s=7.0))
        results.sizing[replicas] = Sizing([170.0] * replicas, [175.0] * replicas, 7 * replicas, 3 * replicas,
                                          21 * replicas)
    assert [round(results.efficiency(row, 2) or 0, 2) for row in results.rows] == [1.0, 0.9, 0.85]
    markdown = render(results, machine)
    assert "| REST notes list | 4 | 8 | 1,700 |" in markdown
    assert "| 1 | 170 | 175 | 7 | 3 | 21 |" in markdown
    assert "replicas x (20 + 3)" in markdown
    assert "one replica served 100 req/s" in markdown
