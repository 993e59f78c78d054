"""Replaying captured SQL straight on a psycopg connection opened like Django's (same options, client-side
binding, no prepared statements), timing a request's statements together."""

import re
import time
import uuid

from bench import env

_UUID = re.compile(r"\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b")


_OPTION = re.compile(r"-c\s*([\w.]+)=(\S+)")


class Direct:
    def __init__(self, url: str, options: str):
        self.options = options
        self.conn = env.connect(url, options=options)
        self._settings: dict[str, list[str]] = {}  # statement → the SET LOCALs the app sent before it (read())

    def check_options(self) -> None:
        """Refuse to compare unlike with like: every `-c name=value` of the app's connection options must hold on
        the replay connection. (A custom GUC such as pg_trgm.word_similarity_threshold given at connection start
        is only provisional until the library loads; if the first load happens inside VACUUM/ANALYZE, PostgreSQL
        rolls the value back to the extension default — the replay then searched at 0.6 while the app used 0.4.)"""
        self.conn.execute("SELECT word_similarity('a', 'a')")  # pg_trgm loaded by a plain statement, as in the app
        for name, wanted in _OPTION.findall(self.options):
            actual = self.conn.execute("SELECT current_setting(%s)", [name]).fetchone()[0]
            if actual != wanted:
                raise SystemExit(f"bench: the direct-SQL connection has {name}={actual}, the app uses {wanted}")

    def close(self) -> None:
        self.conn.close()

    def _execute(self, statement: str) -> int:
        with self.conn.cursor() as cur:
            cur.execute(statement)
            if cur.description is not None:
                return len(cur.fetchall())
            return cur.rowcount

    def read(self, statements: list[str]) -> int:
        """Run the statements as the app does in autocommit (its BEGIN … COMMIT included); nanoseconds for all of
        them, rows fetched included."""
        self._note_settings(statements)
        started = time.perf_counter_ns()
        for statement in statements:
            self._execute(statement)
        return time.perf_counter_ns() - started

    def _note_settings(self, statements: list[str]) -> None:
        """The SET LOCAL statements the app sends before a statement in its transaction (the search turns parallel
        workers off for its page), so that explain() plans it under the same settings."""
        local: list[str] = []
        for statement in statements:
            head = statement.lstrip().upper()
            if head.startswith("SET LOCAL "):
                local.append(statement)
            elif head.startswith(("COMMIT", "ROLLBACK")):
                local = []
            elif local:
                self._settings[statement] = list(local)

    def export(self, statements: list[str], *, chunk_size: int) -> tuple[int, int]:
        """The export: every statement as in read(), except the last SELECT, which is read through a server-side
        cursor in chunks the way QuerySet.iterator(chunk_size) does. (nanoseconds, rows streamed)."""
        last_select = max(i for i, s in enumerate(statements) if s.lstrip().upper().startswith("SELECT"))
        rows = 0
        started = time.perf_counter_ns()
        for i, statement in enumerate(statements):
            if i != last_select:
                self._execute(statement)
                continue
            cursor = env.ServerSideCursor(
                self.conn, f"_bench_{uuid.uuid4().hex}", scrollable=False, withhold=self.conn.autocommit
            )
            try:
                cursor.execute(statement)
                while chunk := cursor.fetchmany(chunk_size):
                    rows += len(chunk)
            finally:
                cursor.close()
        return time.perf_counter_ns() - started, rows

    def write(self, statements: list[str], *, setup: list[str] = (), cleanup: list[str] = ()) -> int:
        """A write request: BEGIN; its statements; COMMIT — timed. `setup` runs (committed) before and `cleanup`
        after, untimed, so that every replay does the same real work."""
        if setup:
            self._transaction(setup)
        started = time.perf_counter_ns()
        self._transaction(statements)
        elapsed = time.perf_counter_ns() - started
        if cleanup:
            self._transaction(cleanup)
        return elapsed

    def _transaction(self, statements) -> None:
        self.conn.execute("BEGIN")
        try:
            for statement in statements:
                self._execute(statement)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def explain(self, statement: str) -> str:
        settings = self._settings.get(statement, [])
        with self.conn.cursor() as cur:
            if settings:
                cur.execute("BEGIN")
            try:
                for setting in settings:
                    cur.execute(setting)
                cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement)
                plan = "\n".join(row[0] for row in cur.fetchall())
            finally:
                if settings:
                    cur.execute("ROLLBACK")
        return "\n".join([*settings, plan]) if settings else plan


def events_cleanup(statements: list[str]) -> list[str]:
    """Statements deleting the outbox rows that replaying `statements` inserts. Their ids are literals of the
    INSERT; every uuid literal in it is a candidate (the others — practice, actor — are no event's id)."""
    out = []
    for statement in statements:
        if re.match(r'\s*INSERT INTO "events_event"', statement):
            ids = sorted(set(_UUID.findall(statement)))
            if ids:
                out.append("DELETE FROM events_event WHERE id IN (" + ", ".join(f"'{i}'" for i in ids) + ")")
    return out
