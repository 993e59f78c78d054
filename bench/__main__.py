"""python -m bench [webhooks|mcp|crm|capture|throughput|writes|inbound|campaigns|booking|widget|leadads|dialer|pms|
clinical|reports|transfer] … — dispatch to a suite (make bench BENCH_ARGS=…); no subcommand runs the patients area
(bench.patients)."""

import importlib
import sys

SUITES = {  # subcommand → the module whose main(argv) runs it
    "webhooks": "bench.webhooks.run",
    "mcp": "bench.mcp.run",
    "crm": "bench.crm.run",
    "capture": "bench.leadcapture.run",
    "throughput": "bench.throughput.run",
    "writes": "bench.patients.writes",
    "inbound": "bench.inbound.run",
    "campaigns": "bench.campaigns.run",
    "booking": "bench.booking.run",
    "widget": "bench.widget.run",
    "dialer": "bench.dialer.run",
    "leadads": "bench.leadads.run",
    "pms": "bench.pms.run",
    "clinical": "bench.clinical.run",
    "reports": "bench.reports.run",
    "transfer": "bench.transfer.run",
}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] in SUITES:
        return importlib.import_module(SUITES[argv[0]]).main(argv[1:])
    return importlib.import_module("bench.patients.run").main(argv)


if __name__ == "__main__":
    sys.exit(main())
