"""Parts of a large reply: text parts never split a character and always advance; non-text types come base64
(the same rule as whole replies), so a binary file survives being read in parts."""

import base64
import json

from apps.mcp import tools
from apps.mcp.dispatch import Reply


def read_all(reply: Reply, length: int) -> tuple[list[dict], bytes]:
    session = tools.Session(user=None, credential=None)
    parts, offset, etag = [], 0, None
    while offset is not None:
        arguments = {"operation": "GET /x", "range": {"offset": offset, "length": length}} | (
            {"etag": etag} if etag else {}
        )
        part = session._read_reply(reply, arguments)["structuredContent"]
        parts.append(part)
        etag, offset = part["etag"], part["nextOffset"]
        assert len(parts) < 10_000, "the parts never end"
    joined = b"".join(base64.b64decode(p["part"]) if p["encoding"] == "base64" else p["part"].encode() for p in parts)
    return parts, joined


def test_a_part_shorter_than_a_character_still_advances():
    body = json.dumps({"name": "€€€ 😀 ñ"}, ensure_ascii=False).encode()
    parts, joined = read_all(Reply(200, "application/json", body), length=1)
    assert joined == body
    assert all(p["part"] and "\ufffd" not in p["part"] for p in parts)


def test_text_parts_cut_at_character_boundaries():
    body = ("àèìòù" * 50).encode()
    parts, joined = read_all(Reply(200, "text/csv; charset=utf-8", body), length=7)
    assert joined == body and all(len(p["part"].encode()) <= 7 for p in parts)


def test_a_binary_type_comes_in_base64_parts():
    body = bytes(range(256)) * 4
    parts, joined = read_all(Reply(200, "application/pdf", body), length=100)
    assert joined == body and {p["encoding"] for p in parts} == {"base64"}


def test_cut_helper():
    body = "a€b".encode()  # a, then three bytes, then b
    assert tools._utf8_cut(body, 0, 2) == 1  # back to the boundary
    assert tools._utf8_cut(body, 1, 2) == 4  # nothing whole before: forward past the character
    assert tools._utf8_cut(body, 1, 4) == 4
