"""Running the scenarios: capture each one's SQL, then alternate HTTP requests and direct replays of that SQL so both
see the same machine (the load of anything else running shows in both)."""

import json
import os
import re
import time

from bench.measure import PeakRss
from bench.patients import direct as direct_sql
from bench.patients.scenarios import EXPORT_CHUNK_SIZE, Scenario

MIN_ITERATIONS = 5  # a scenario over its time budget still gets this many timed iterations
SLOW_NS = 1_000_000_000

_DECLARE = re.compile(r'^\s*DECLARE\s+"[^"]+"\s+NO SCROLL CURSOR WITH(?:OUT)? HOLD FOR\s+', re.I)


def _sql_of(statement: str) -> str:
    """A captured server-side cursor's DECLARE … FOR <query> → <query> (the replay declares its own)."""
    return _DECLARE.sub("", statement)


def is_data_statement(statement: str) -> bool:
    """Statements of the patients area, as opposed to authentication and practice selection (accounts_*)."""
    return "patients_" in statement or "events_event" in statement


class Runner:
    def __init__(self, *, http, server, capture, direct, info, iterations: int, warmup: int, budget: float, log):
        self.http, self.server, self.capture, self.direct = http, server, capture, direct
        self.info, self.iterations, self.warmup, self.log = info, iterations, warmup, log
        self.budget = budget

    def run(self, scenario: Scenario) -> Scenario:
        load_before = os.getloadavg()[0]
        if scenario.kind == "bulk":
            self._bulk(scenario)
        else:
            self._read(scenario)
        scenario.extra["load"] = (load_before, os.getloadavg()[0])
        if scenario.explain:
            # The statements reading the patients table (not the per-row tag reads, not authentication).
            scenario.extra["explain"] = [
                (_sql_of(s), self.direct.explain(_sql_of(s)))
                for s in scenario.statements
                if 'FROM "patients_patient"' in s and re.match(r"\s*(SELECT|DECLARE)", s, re.I)
            ]
        return scenario

    # --- reads and the export -------------------------------------------------------------------------------
    def _api(self, scenario: Scenario, *, measure_rss: bool = False) -> int:
        if measure_rss:
            with PeakRss(self.server.pids) as rss:
                status, body, elapsed = self.http.request(scenario.method, scenario.path)
            scenario.extra.setdefault("rss_growth", []).append(rss.growth)
            scenario.extra.setdefault("rss_before", []).append(rss.baseline)
        else:
            status, body, elapsed = self.http.request(scenario.method, scenario.path)
        if status != 200:
            raise SystemExit(f"bench: {scenario.method} {scenario.path} answered {status}: {body[:500]!r}")
        if scenario.kind == "export":
            rows = body.count(b"\r\n") - 1
            scenario.extra["rows"] = rows
            scenario.extra["bytes"] = len(body)
        elif "total" not in scenario.extra and body.startswith(b"{"):
            payload = json.loads(body)
            if "total" in payload:
                scenario.extra["total"] = payload["total"]
                scenario.extra["items"] = len(payload["items"])
        return elapsed

    def _sql(self, scenario: Scenario) -> int:
        if scenario.kind == "export":
            elapsed, rows = self.direct.export([_sql_of(s) for s in scenario.statements], chunk_size=EXPORT_CHUNK_SIZE)
            scenario.extra["sql_rows"] = rows
            return elapsed
        return self.direct.read(scenario.statements)

    def _read(self, scenario: Scenario) -> None:
        self.log(f"{scenario.key}: capturing its SQL in-process")
        scenario.statements = self.capture.statements(scenario.method, scenario.path)
        export = scenario.kind == "export"
        warmup = self.warmup if not export else max(1, min(self.warmup, 2))
        self.log(f"{scenario.key}: {len(scenario.statements)} statements; {warmup} warm-up + {self.iterations} timed")
        for _ in range(warmup):
            slow = self._api(scenario, measure_rss=export) > SLOW_NS
            self._sql(scenario)
            if slow:  # a request over a second is warm after one go
                break
        if export:
            scenario.extra["rss_growth_first"] = scenario.extra["rss_growth"][0]
            scenario.extra["rss_growth"] = []
        started = time.monotonic()
        for i in range(self.iterations):
            scenario.api_ns.append(self._api(scenario, measure_rss=export))
            scenario.sql_ns.append(self._sql(scenario))
            if i + 1 >= MIN_ITERATIONS and time.monotonic() - started > self.budget:
                self.log(f"{scenario.key}: time budget of {self.budget:.0f}s spent after {i + 1} iterations")
                break

    # --- bulk tags: add, remove, add, … so every call does real work ---------------------------------------------
    def _bulk(self, scenario: Scenario) -> None:
        org, tag = self.info.organization_id, scenario.body["addTagIds"][0]
        remove_all = f"DELETE FROM patients_patienttag WHERE organization_id = '{org}' AND tag_id = '{tag}'"
        self.direct.read([remove_all])  # start from "nobody has the tag"
        self.log(f"{scenario.key}: capturing its SQL in-process (rolled back)")
        scenario.statements = self.capture.statements("POST", scenario.path, scenario.body, rollback=True)
        scenario.undo_statements = self.capture.statements(
            "POST",
            scenario.path,
            scenario.body_undo,
            rollback=True,
            before=lambda: self.capture.call("POST", scenario.path, scenario.body),
        )
        add, undo = scenario.statements, scenario.undo_statements
        add_cleanup = direct_sql.events_cleanup(add)
        self.log(
            f"{scenario.key}: {len(add)} statements (add), {len(undo)} (remove); "
            f"{self.warmup} warm-up + {self.iterations} timed, alternating"
        )
        updated = []
        pairs = (self.warmup + 1) // 2 + (self.iterations + 1) // 2
        timed_from = (self.warmup + 1) // 2
        started = None
        for pair in range(pairs):
            if pair == timed_from:
                started = time.monotonic()
            elif (
                started is not None
                and len(scenario.api_ns) >= MIN_ITERATIONS
                and time.monotonic() - started > self.budget
            ):
                self.log(
                    f"{scenario.key}: time budget of {self.budget:.0f}s spent after {len(scenario.api_ns)} iterations"
                )
                break
            api, sql = [], []
            for body in (scenario.body, scenario.body_undo):
                status, response, elapsed = self.http.request("POST", scenario.path, body)
                if status != 200:
                    raise SystemExit(f"bench: POST {scenario.path} answered {status}: {response[:500]!r}")
                updated.append(json.loads(response)["updated"])
                api.append(elapsed)
            sql.append(self.direct.write(add, cleanup=[*add_cleanup, remove_all]))
            sql.append(self.direct.write(undo, setup=[*add, *add_cleanup], cleanup=direct_sql.events_cleanup(undo)))
            if pair >= timed_from:
                scenario.api_ns.extend(api)
                scenario.sql_ns.extend(sql)
        scenario.api_ns = scenario.api_ns[: self.iterations]
        scenario.sql_ns = scenario.sql_ns[: self.iterations]
        scenario.extra["updated"] = sorted(set(updated))
        self.direct.read([remove_all])
