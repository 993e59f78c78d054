"""Paging shapes: offset pages {items, total, limit, offset}, and cursor paging for newest-first feeds
{items, nextCursor} (nextCursor is null on the last page)."""

from django.utils.dateparse import parse_datetime
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response

from apps.core.errors import ValidationFailed


def offset_page(items, total: int, *, limit: int, offset: int) -> Response:
    """An offset-paged list response: exactly {items, total, limit, offset}."""
    return Response({"items": items, "total": total, "limit": limit, "offset": offset})


class NewestFirstCursorPagination(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 25
    page_size_query_param = "limit"
    max_page_size = 100
    cursor_query_param = "cursor"

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise ValidationFailed.for_field("limit", f"must be an integer from 1 to {self.max_page_size}")
        return int(raw)

    def decode_cursor(self, request):
        try:
            cursor = super().decode_cursor(request)
            # A cursor is ours only if its position is a timestamp of the ordering field.
            if cursor is not None and cursor.position is not None and parse_datetime(cursor.position) is None:
                raise ValueError("position is not a timestamp")
            return cursor
        except Exception:
            raise ValidationFailed.for_field("cursor", "is not a cursor this list issued") from None

    def get_paginated_response_data(self, data) -> dict:
        return {"items": data, "next_cursor": self.get_next_cursor_token()}

    def get_next_cursor_token(self) -> str | None:
        url = self.get_next_link()
        if not url:
            return None
        from urllib.parse import parse_qs, urlparse

        return parse_qs(urlparse(url).query).get(self.cursor_query_param, [None])[0]

    def get_schema_operation_parameters(self, view) -> list[dict]:
        """cursor and limit as this paginator reads them: limit is bounded, and its default is the page size."""
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "nextCursor of the previous page.",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"Page size, 1 to {self.max_page_size}.",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size, "default": self.page_size},
            },
        ]

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": ["items", "nextCursor"],
            "additionalProperties": False,
            "properties": {
                "items": schema,
                "nextCursor": {
                    "type": "string",
                    "nullable": True,
                    "description": "Pass as ?cursor= for more.",
                },
            },
        }
