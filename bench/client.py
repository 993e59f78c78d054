"""One keep-alive HTTP/1.1 connection (http.client: no dependency), timing each request to its last byte."""

import http.client
import json
import time


class Http:
    def __init__(self, host: str, port: int, *, headers: dict[str, str] | None = None):
        self.host, self.port = host, port
        self.headers = {"Accept": "application/json", **(headers or {})}
        self.conn: http.client.HTTPConnection | None = None
        self.reconnects = 0

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
            self.conn.connect()
        return self.conn

    def request(self, method: str, path: str, body=None) -> tuple[int, bytes, int]:
        """(status, body, nanoseconds from sending the request to reading the last byte of the response)."""
        headers = dict(self.headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            conn = self._connection()
            try:
                started = time.perf_counter_ns()
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                data = response.read()
                elapsed = time.perf_counter_ns() - started
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server closed the kept-alive connection: reconnect once (counted, and the try is not timed).
                self.close()
                if attempt == 2:
                    raise
                self.reconnects += 1
                continue
            if response.getheader("Connection", "").lower() == "close":
                self.close()
            return response.status, data, elapsed
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
