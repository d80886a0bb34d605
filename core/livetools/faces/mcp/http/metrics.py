"""Request, latency and error counters in the Prometheus text format (`/metrics`).

Labels are the route kind, never the path: a run id is a capability-like handle and would make
one series per run."""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass
class _Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0
    n: int = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.total += seconds
        self.n += 1


class Metrics:
    def __init__(self) -> None:
        self.requests: defaultdict[tuple[str, str, int], int] = defaultdict(int)
        self.latency: defaultdict[str, _Histogram] = defaultdict(_Histogram)
        self.runs_opened = 0
        self.runs_closed: defaultdict[str, int] = defaultdict(int)  # reason -> count
        self.refused: defaultdict[str, int] = defaultdict(int)  # why -> count
        self.runs_open = 0
        self.tool_calls = 0
        self.direct_calls = 0  # 2026-era tools/calls answered without the SDK's dispatch
        self.one_body_calls = 0  # 2025-11-25 tools/calls served in the SDK's JSON mode
        # MCP requests admitted to a run, by the MCP-Protocol-Version they carried: which era
        # the clients in the field speak ("none": a handshake's initialize, or an old client).
        self.protocols: defaultdict[str, int] = defaultdict(int)

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests[(route, method, status)] += 1
        self.latency[route].observe(seconds)

    def render(self) -> str:
        out: list[str] = []

        def head(name: str, kind: str, help: str) -> None:
            out.append(f"# HELP livetools_http_{name} {help}")
            out.append(f"# TYPE livetools_http_{name} {kind}")

        head("requests_total", "counter", "HTTP requests by route kind, method and status.")
        for (route, method, status), n in sorted(self.requests.items()):
            labels = f'route="{route}",method="{method}",status="{status}"'
            out.append(f"livetools_http_requests_total{{{labels}}} {n}")
        head("errors_total", "counter", "HTTP requests answered with a status of 500 or above.")
        errors: defaultdict[str, int] = defaultdict(int)
        for (route, _, status), n in self.requests.items():
            if status >= 500:
                errors[route] += n
        for route, n in sorted(errors.items()):
            out.append(f'livetools_http_errors_total{{route="{route}"}} {n}')
        head("request_seconds", "histogram", "Time from request start to response end.")
        for route, h in sorted(self.latency.items()):
            cumulative = 0
            for bound, count in zip((*BUCKETS, float("inf")), h.counts, strict=True):
                cumulative += count
                le = "+Inf" if bound == float("inf") else repr(bound)
                out.append(
                    f'livetools_http_request_seconds_bucket{{route="{route}",le="{le}"}} '
                    f"{cumulative}"
                )
            out.append(f'livetools_http_request_seconds_sum{{route="{route}"}} {h.total:.6f}')
            out.append(f'livetools_http_request_seconds_count{{route="{route}"}} {h.n}')
        head("refused_total", "counter", "Requests refused before any route, by reason.")
        for why, n in sorted(self.refused.items()):
            out.append(f'livetools_http_refused_total{{reason="{why}"}} {n}')
        head("runs_open", "gauge", "Runs open now.")
        out.append(f"livetools_http_runs_open {self.runs_open}")
        head("runs_opened_total", "counter", "Runs opened.")
        out.append(f"livetools_http_runs_opened_total {self.runs_opened}")
        head("runs_closed_total", "counter", "Runs closed, by reason.")
        for reason, n in sorted(self.runs_closed.items()):
            out.append(f'livetools_http_runs_closed_total{{reason="{reason}"}} {n}')
        head("mcp_requests_total", "counter", "MCP requests admitted, by protocol version.")
        for version, n in sorted(self.protocols.items()):
            out.append(f'livetools_http_mcp_requests_total{{protocol="{version}"}} {n}')
        head("tool_calls_total", "counter", "tools/call requests over every run.")
        out.append(f"livetools_http_tool_calls_total {self.tool_calls}")
        head("direct_calls_total", "counter", "tools/call requests answered on the direct path.")
        out.append(f"livetools_http_direct_calls_total {self.direct_calls}")
        head("one_body_calls_total", "counter", "2025-11-25 tools/calls answered as one JSON body.")
        out.append(f"livetools_http_one_body_calls_total {self.one_body_calls}")
        return "\n".join(out) + "\n"
