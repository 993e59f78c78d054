"""Streaming CSV downloads: rows written in batches as they come from a server-side cursor, every cell made safe to
open in a spreadsheet (CSV injection), under WSGI and ASGI alike."""

import csv
from collections.abc import Iterable, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse

ROWS_PER_CHUNK = 500  # rows joined into one chunk of the response
CURSOR_CHUNK = 1000  # rows fetched from the server-side cursor at a time


class Echo:
    """A file-like object whose write returns the line, so csv.writer hands each row back instead of storing it."""

    def write(self, value):
        return value


def neutralise(value) -> str:
    """CSV-injection safe: a cell a spreadsheet would run as a formula is prefixed with an apostrophe."""
    if type(value) is str:  # most cells: skip the checks below (an export runs this 100,000 times)
        text = value
    elif value is None:
        return ""
    elif isinstance(value, bool):
        return "true" if value else "false"
    else:
        text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    if text and text[0] in "=+-@\t\r":
        return "'" + text
    return text


def csv_lines(header: list[str], rows) -> Iterator[str]:
    """The header line, then the rows (a values_list queryset, read through a server-side cursor) in chunks of
    ROWS_PER_CHUNK lines, each cell neutralised."""
    writer = csv.writer(Echo())
    yield writer.writerow(header)
    batch = []
    for row in rows.iterator(chunk_size=CURSOR_CHUNK):
        batch.append(writer.writerow([neutralise(v) for v in row]))
        if len(batch) == ROWS_PER_CHUNK:
            yield "".join(batch)
            batch = []
    if batch:
        yield "".join(batch)


async def async_chunks(chunks: Iterator[str]):
    """Under ASGI pull one chunk at a time on the request's sync thread, so the server-side cursor stays open
    and memory stays flat (Django would otherwise read a sync iterator whole)."""
    while True:
        chunk = await sync_to_async(next, thread_sensitive=True)(chunks, None)
        if chunk is None:
            return
        yield chunk


def csv_response(request, header: list[str], rows, *, filename: str) -> StreamingHttpResponse:
    """A streamed text/csv attachment of the header and rows (see csv_lines); `request` is Django's (or DRF's)."""
    content: Iterable[str] = csv_lines(header, rows)
    if isinstance(getattr(request, "_request", request), ASGIRequest):
        content = async_chunks(content)
    response = StreamingHttpResponse(content, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    # nginx passes each chunk on as it comes instead of spooling the export to a temporary file first.
    response["X-Accel-Buffering"] = "no"
    return response
