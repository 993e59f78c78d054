"""Driving wrk: the request files its Lua script sends (bench/throughput/requests.lua), one run, and what its output
says (requests per second, latency percentiles, answers other than 2xx, socket errors)."""

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bench.paths import ROOT

SCRIPT = Path(__file__).with_name("requests.lua")
ENSURE = ROOT / "scripts" / "ensure-wrk.sh"
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}  # wrk's time units → milliseconds
_TIME = r"([\d.]+)(us|ms|s|m|h)"


def ensure() -> str:
    """The wrk binary, installed from Debian's packages (scripts/ensure-wrk.sh) when missing."""
    found = shutil.which("wrk")
    if found is None:
        subprocess.run(["bash", str(ENSURE)], check=True)
        found = shutil.which("wrk")
    if found is None:
        raise SystemExit("bench: wrk is missing and could not be installed (scripts/ensure-wrk.sh)")
    return found


def version(binary: str = "wrk") -> str:
    result = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return (result.stdout + result.stderr).splitlines()[0].split(" Copyright")[0].strip()


# --- the requests ---------------------------------------------------------------------------------------------------


def raw_request(
    method: str, path: str, *, host: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> bytes:
    """One HTTP/1.1 request as sent on the wire (keep-alive; Content-Length when there is a body)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method not in ("GET", "HEAD"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def write_requests(path: Path, requests: list[bytes]) -> Path:
    """The request file requests.lua reads: records "<byte length>\\n<raw request>"."""
    if not requests:
        raise ValueError("no requests to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        for request in requests:
            f.write(b"%d\n" % len(request))
            f.write(request)
    return path


# --- a run ----------------------------------------------------------------------------------------------------------


@dataclass
class Result:
    requests: int  # answers received within the run
    seconds: float
    rate: float  # requests per second (wrk's Requests/sec)
    p50_ms: float
    p75_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    non_2xx_3xx: int  # wrk's own count ("Non-2xx or 3xx responses")
    socket_errors: dict[str, int]
    sent: int  # requests the threads handed to wrk (requests.lua); the ones past `requests` were in flight at the end
    statuses: dict[str, int]  # answers by status, counted by requests.lua
    exhausted: bool  # a "once" file ran out
    command: list[str] = field(default_factory=list)

    @property
    def ok(self) -> int:
        """2xx answers."""
        return sum(n for status, n in self.statuses.items() if status.startswith("2"))

    @property
    def not_2xx(self) -> dict[str, int]:
        return {status: n for status, n in sorted(self.statuses.items()) if not status.startswith("2")}

    @property
    def errors(self) -> int:
        return sum(self.socket_errors.values())

    @property
    def clean(self) -> bool:
        """Every answer 2xx, no socket error, no file run out."""
        return not self.not_2xx and not self.non_2xx_3xx and not self.errors and not self.exhausted

    def problems(self) -> list[str]:
        found = []
        if self.not_2xx:
            found.append("answers not 2xx: " + ", ".join(f"{n:,} x {status}" for status, n in self.not_2xx.items()))
        elif self.non_2xx_3xx:
            found.append(f"{self.non_2xx_3xx:,} answers not 2xx/3xx (wrk)")
        if self.errors:
            found.append("socket errors: " + ", ".join(f"{k} {v}" for k, v in self.socket_errors.items() if v))
        if self.exhausted:
            found.append("the request file ran out (a larger --capture-rate sizes it)")
        return found


def _ms(value: str, unit: str) -> float:
    return float(value) * _UNITS[unit]


def parse(output: str) -> Result:
    """What a `wrk --latency -s requests.lua` run printed."""

    def need(pattern: str) -> re.Match:
        match = re.search(pattern, output, re.M)
        if match is None:
            raise ValueError(f"wrk output without {pattern!r}:\n{output}")
        return match

    latency = need(rf"^\s*Latency\s+{_TIME}\s+{_TIME}\s+{_TIME}")
    percentiles = {int(p): _ms(v, u) for p, v, u in re.findall(rf"^\s*(50|75|90|99)%\s+{_TIME}\s*$", output, re.M)}
    if set(percentiles) != {50, 75, 90, 99}:
        raise ValueError(f"wrk output without its latency distribution (--latency):\n{output}")
    total = need(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h)")
    rate = float(need(r"^Requests/sec:\s+([\d.]+)").group(1))
    non = re.search(r"^\s*Non-2xx or 3xx responses:\s+(\d+)", output, re.M)
    sockets = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    lua = json.loads(need(r"^WRK_LUA (\{.*\})\s*$").group(1))
    return Result(
        requests=int(total.group(1)),
        seconds=_ms(total.group(2), total.group(3)) / 1000,
        rate=rate,
        p50_ms=percentiles[50],
        p75_ms=percentiles[75],
        p90_ms=percentiles[90],
        p99_ms=percentiles[99],
        mean_ms=_ms(latency.group(1), latency.group(2)),
        max_ms=_ms(latency.group(5), latency.group(6)),
        non_2xx_3xx=int(non.group(1)) if non else 0,
        socket_errors=dict(
            zip(("connect", "read", "write", "timeout"), (int(g) for g in sockets.groups()), strict=True)
        )
        if sockets
        else {"connect": 0, "read": 0, "write": 0, "timeout": 0},
        sent=int(lua["sent"]),
        statuses={str(k): int(v) for k, v in lua["statuses"].items()},
        exhausted=bool(lua["exhausted"]),
    )


def run(
    base_url: str,
    request_file: Path,
    *,
    threads: int,
    connections: int,
    seconds: float,
    once: bool = False,
    timeout: float = 10.0,
    binary: str = "wrk",
) -> tuple[Result, str]:
    """One wrk run of `seconds` against `base_url` sending the requests of `request_file`; (result, raw output)."""
    command = [
        binary,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        f"--timeout={timeout:g}s",
        "--latency",
        "-s",
        str(SCRIPT),
        base_url,
        "--",
        str(request_file),
        str(threads),
        "once" if once else "cycle",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=seconds + timeout + 60)
    if done.returncode != 0:
        raise SystemExit(f"bench: wrk exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
    result = parse(done.stdout)
    result.command = command
    return result, done.stdout
