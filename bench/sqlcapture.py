"""The SQL a request runs, captured in-process: the same URL, view, serializer and selectors as the server, called
through Django's test client inside CaptureQueriesContext. psycopg 3 binds parameters client-side in Django (its
default), so each captured statement is the exact text PostgreSQL received and can be replayed as it is."""

import re

_TRANSACTION_CONTROL = re.compile(r"^\s*(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT)\b", re.I)


def connection_options() -> str:
    """The libpq `options` the app's connections are opened with (e.g. pg_trgm.word_similarity_threshold)."""
    from django.conf import settings

    return settings.DATABASES["default"].get("OPTIONS", {}).get("options", "")


class RequestCapture:
    def __init__(self, api_key: str):
        from django.test import Client

        self.client = Client(headers={"authorization": f"Bearer {api_key}", "accept": "application/json"})

    def call(self, method: str, path: str, body=None):
        if method == "GET":
            response = self.client.get(path)
        else:
            response = self.client.generic(method, path, data=_json(body), content_type="application/json")
        content = b"".join(response.streaming_content) if response.streaming else response.content
        if response.status_code >= 300:
            raise SystemExit(f"bench: {method} {path} answered {response.status_code} in-process: {content[:500]!r}")
        return content

    def statements(self, method: str, path: str, body=None, *, rollback: bool = False, before=None) -> list[str]:
        """The SQL statements of one request, in order (savepoint bookkeeping left out). With rollback=True the
        request runs inside a transaction rolled back afterwards; `before` runs first in it, uncaptured."""
        from django.db import connection, transaction
        from django.test.utils import CaptureQueriesContext

        if rollback:
            with transaction.atomic():
                if before is not None:
                    before()
                with CaptureQueriesContext(connection) as ctx:
                    self.call(method, path, body)
                transaction.set_rollback(True)
        else:
            self.call(method, path, body)  # once uncaptured: the API key's last-used touch is then done
            with CaptureQueriesContext(connection) as ctx:
                self.call(method, path, body)
        return [q["sql"] for q in ctx.captured_queries if not _TRANSACTION_CONTROL.match(q["sql"])]


def _json(body) -> str:
    import json

    return json.dumps(body) if body is not None else ""
