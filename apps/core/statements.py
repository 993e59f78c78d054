"""Fixed-shape hot reads compiled once: the ORM builds and compiles a statement on every call (names_to_path,
setup_joins, build_filter, as_sql: about a third of a millisecond per statement), although for the hot paths
(a practice's counter row, the default patient page, one patient by id) only the parameter values change.

`CompiledRead(build)`: `build(*placeholders)` returns the queryset (`.values()` / `.values_list()`, the same code
the ORM path runs) written with placeholder UUIDs. The first call of a shape compiles it with the queryset's own
compiler and records where each placeholder sits in the parameters (each must be there exactly once: a tenant id
that did not reach the WHERE clause is refused at compile time, never silently dropped); later calls execute the
remembered SQL with the real values through one cursor of the default connection, and apply the compiler's
converters exactly as the ORM would, so the rows are what the queryset would have returned. Shapes are keyed by
what changes the SQL text (sort, direction, LIMIT and OFFSET, which Django writes into the SQL), bounded.

`prepared_cursor()`: the hottest of them (`CompiledRead(..., prepared=True)`) and the per-request credential
statement also skip PostgreSQL's planner. Django's cursors bind parameters on the client, so PostgreSQL plans every
statement afresh: 0.46 ms of server CPU to plan the credential statement against 0.13 ms to run it (pgbench on the
throughput benchmark's database: 0.62 ms a call simple, 0.16 ms prepared). This cursor binds on the server, and
psycopg prepares a statement on its first run on a connection and reuses it after (`prepare_threshold` in the
database OPTIONS; psycopg keeps the last `prepared_max` statements per connection), planned once
(plan_cache_mode=force_generic_plan, settings). Only statements whose best plan does not depend on the values belong
here, never a search: the journeys board's generic plans ran 4x slower than its custom ones, so it stays on Django's
cursor, like everything else in the codebase. It is the same wrapper Django hands out, so CaptureQueriesContext,
execute_wrapper and error wrapping see these statements. SVC_DB_PREPARED_READS=0 turns it off (a transaction-pooling
PgBouncer before 1.21 cannot hold prepared statements).
"""

import uuid
from collections.abc import Callable, Hashable

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.postgresql.base import TIMESTAMPTZ_OID, CursorDebugWrapper, ServerBindingCursor
from django.db.backends.postgresql.psycopg_any import register_tzloader
from django.db.backends.utils import CursorWrapper
from django.db.models import QuerySet
from psycopg.pq import Format


class _PreparedDebugWrapper(CursorDebugWrapper):
    """Records the statement with its values written in, as Django's debug cursor does for a client-binding cursor
    (its last_executed_query reads that cursor's own text, which a server-binding cursor does not have)."""

    def execute(self, sql, params=None):
        with self.debug_sql(self.db.ops.compose_sql(sql, params) if params else sql, params):
            return CursorWrapper.execute(self, sql, params)


def prepared_cursor():
    """A cursor of the default connection whose statements are bound on the server and prepared (module docstring);
    Django's own cursor when SVC_DB_PREPARED_READS is off. Use it as `with prepared_cursor() as cursor:`."""
    connection = connections[DEFAULT_DB_ALIAS]
    if not settings.SVC_DB_PREPARED_READS:
        return connection.cursor()
    # BaseDatabaseWrapper._cursor and the PostgreSQL create_cursor, with the server-binding cursor class.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        cursor = ServerBindingCursor(connection.connection)
        loader = connection.connection.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
        if connection.timezone != loader.timezone:
            register_tzloader(connection.timezone, cursor)
    connection.validate_thread_sharing()
    return _PreparedDebugWrapper(cursor, connection) if connection.queries_logged else connection.make_cursor(cursor)


class _Shape:
    __slots__ = ("converters", "names", "params", "slots", "sql")

    def __init__(self, queryset: QuerySet, placeholders: tuple[uuid.UUID, ...]):
        compiler = queryset.query.get_compiler(DEFAULT_DB_ALIAS)
        sql, params = compiler.as_sql()
        params = list(params)
        slots = []
        for placeholder in placeholders:
            found = [index for index, value in enumerate(params) if value == placeholder]
            if len(found) != 1:
                raise ValueError(f"a placeholder reaches the statement {len(found)} times, not once: {sql}")
            slots.append(found[0])
        self.sql, self.params, self.slots = sql, params, slots
        columns = [column for column, _info, _alias in compiler.select[: compiler.col_count]]
        self.converters = list(compiler.get_converters(columns).items())
        query = queryset.query
        self.names = [*query.extra_select, *query.values_select, *query.annotation_select]


class CompiledRead:
    """A read whose SQL is compiled once per shape; `rows(shape_key, *values)` runs it."""

    def __init__(
        self, build: Callable[..., QuerySet], *, placeholders: int, prepared: bool = False, max_shapes: int = 256
    ):
        self._build = build
        self._cursor = prepared_cursor if prepared else (lambda: connections[DEFAULT_DB_ALIAS].cursor())
        self._placeholders = tuple(uuid.uuid4() for _ in range(placeholders))
        self._shapes: dict[tuple[Hashable, ...], _Shape] = {}
        self._max_shapes = max_shapes

    def _shape(self, key: tuple) -> _Shape:
        shape = self._shapes.get(key)
        if shape is None:
            shape = _Shape(self._build(*self._placeholders, *key), self._placeholders)
            if len(self._shapes) < self._max_shapes:
                self._shapes[key] = shape
        return shape

    def rows(self, key: tuple, *values) -> list:
        """The rows (tuples, in the queryset's column order) of the shape `key` (a tuple of the extra arguments
        `build` takes after the placeholders) with `values` in place of the placeholders."""
        shape = self._shape(key)
        params = shape.params.copy()
        for slot, value in zip(shape.slots, values, strict=True):
            params[slot] = value
        connection = connections[DEFAULT_DB_ALIAS]  # one context-local lookup per call
        with self._cursor() as cursor:
            cursor.execute(shape.sql, params)
            found = cursor.fetchall()
        if shape.converters:  # SQLCompiler.apply_converters, with this call's connection
            converted = []
            for row in map(list, found):
                for position, (chain, expression) in shape.converters:
                    value = row[position]
                    for converter in chain:
                        value = converter(value, expression, connection)
                    row[position] = value
                converted.append(tuple(row))
            found = converted
        return found

    def dicts(self, key: tuple, *values) -> list[dict]:
        """rows() as dicts keyed by the queryset's .values() names."""
        names = self._shape(key).names
        return [dict(zip(names, row, strict=True)) for row in self.rows(key, *values)]
