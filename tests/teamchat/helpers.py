"""Shared pieces of the team chat tests: a signed-in browser client per member, and JSON calls."""

from dataclasses import dataclass

from django.test import Client

from tests.conftest import Member


@dataclass
class Person:
    """A member of a practice with their signed-in browser (team chat is browser session only)."""

    member: Member
    client: Client

    @property
    def id(self) -> str:
        return str(self.member.user.id)

    def call(self, method: str, path: str, body=None, **headers):
        if body is None:
            return self.client.generic(method.upper(), path, **{f"HTTP_{k}": v for k, v in headers.items()})
        return self.client.generic(
            method.upper(),
            path,
            _json(body),
            content_type="application/json",
            **{f"HTTP_{k}": v for k, v in headers.items()},
        )

    def get(self, path: str, **headers):
        return self.call("GET", path, **headers)

    def post(self, path: str, body=None, **headers):
        return self.call("POST", path, body, **headers)

    def patch(self, path: str, body=None):
        return self.call("PATCH", path, body)

    def delete(self, path: str):
        return self.call("DELETE", path)

    # --- shortcuts that must succeed ---------------------------------------------------------------------------

    def channel(self, name: str, visibility: str = "public", members=()) -> dict:
        response = self.post(
            "/team-chat/channels", {"name": name, "visibility": visibility, "memberIds": [m.id for m in members]}
        )
        assert response.status_code == 201, response.content
        return response.json()

    def thread(self, *others) -> dict:
        response = self.post("/team-chat/threads", {"memberIds": [other.id for other in others]})
        assert response.status_code in (200, 201), response.content
        return response.json()

    def say(self, room: dict, body: str = "hello", mentions=(), *, kind: str | None = None) -> dict:
        kind = kind or ("threads" if "memberIds" in room else "channels")
        response = self.post(
            f"/team-chat/{kind}/{room['id']}/messages", {"body": body, "mentionUserIds": [m.id for m in mentions]}
        )
        assert response.status_code == 201, response.content
        return response.json()


def _json(body) -> str:
    import json

    return json.dumps(body)


def person(member: Member) -> Person:
    return Person(member=member, client=member.session_client())
