"""A local PMS speaking the pmsconnect pull API (docs/pms.md) for the benchmark: --patients generated patients and
one appointment each, served from a separate process (ThreadingHTTPServer) so the import's process measures only
itself. Items are generated on demand from their index: the server holds nothing in memory."""

import argparse
import datetime
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

API_KEY = "bench-pms-api-key"


def item(kind: str, n: int) -> dict:
    if kind == "patient":
        data = {
            "firstName": f"Bench{n}",
            "lastName": f"Patient{n % 997}",
            "email": f"bench.patient{n}@example.org",
            "phone": f"+44 7700 {n:06d}",
            "dateOfBirth": f"{1940 + n % 70}-{1 + n % 12:02d}-{1 + n % 28:02d}",
        }
        return {"id": f"P{n}", "revision": 1, "updatedAt": "2026-11-01T09:00:00Z", "data": data}
    practitioner = n % 8
    slot = n // 8  # each practitioner's appointments follow each other: no two overlap
    start = datetime.datetime(2020, 1, 6, 8, 0, tzinfo=datetime.UTC) + datetime.timedelta(minutes=20 * slot)
    data = {
        "patientId": f"P{n}",
        "practitionerId": f"D{practitioner}",
        "practitionerName": f"Dr Bench {practitioner}",
        "startsAt": start.isoformat(),
        "endsAt": (start + datetime.timedelta(minutes=20)).isoformat(),
        "status": "completed",
    }
    return {"id": f"A{n}", "revision": 1, "updatedAt": "2026-11-01T09:00:00Z", "data": data}


def handler(total: int):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            url = urlsplit(self.path)
            kind = {"/v1/patients": "patient", "/v1/appointments": "appointment"}.get(url.path)
            if kind is None or self.headers.get("Authorization") != f"Bearer {API_KEY}":
                self.send_response(404 if kind is None else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            query = dict(parse_qsl(url.query))
            start, limit = int(query.get("cursor") or 0), min(int(query.get("limit") or 500), 500)
            end = min(start + limit, total)
            body = {
                "items": [item(kind, n) for n in range(start, end)],
                "nextCursor": str(end) if end < total else None,
            }
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patients", type=int, default=50_000)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(args.patients))
    print(server.server_address[1], flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
