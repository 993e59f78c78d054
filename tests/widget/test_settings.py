"""Widget connections in settings: create, validation, key rotation, roles, and the widget's channel connection."""

import pytest

from apps.conversations.models import ChannelConnection
from apps.widget.models import Visitor, WidgetConnection
from tests.helpers import assert_error
from tests.widget.conftest import ORIGIN, make_widget, post_json, start_visitor

ROLES = ("owner", "manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse")


def patch_json(client, path, data):
    return client.patch(path, data, content_type="application/json")


def test_create_normalises_origins_and_makes_a_widget_channel(api, owner):
    widget = make_widget(api, allowedOrigins=["HTTPS://WWW.Smiles.example/", "https://www.smiles.example",
                                               "http://localhost:8787"],
                         officeHours={"mon": [["09:00", "12:30"], ["13:30", "17:00"]]})  # fmt: skip
    assert widget["allowedOrigins"] == ["https://www.smiles.example", "http://localhost:8787"]
    assert widget["embedKey"].startswith("wk_") and widget["embedKey"] in widget["snippet"]
    channel = ChannelConnection.objects.for_org(owner.organization).get(id=widget["channelConnectionId"])
    assert channel.kind == "widget" and channel.status == "active" and channel.address == widget["embedKey"]
    # The widget's channel is not a provider connection: /channel-connections neither lists nor serves it.
    assert api.get("/settings/channel-connections").json()["items"] == []
    assert_error(api.get(f"/settings/channel-connections/{channel.id}"), 404, "NOT_FOUND")
    refused = post_json(api, "/settings/channel-connections", {"kind": "widget", "name": "x", "address": "x"})
    assert_error(refused, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    "fields",
    [
        {"allowedOrigins": ["https://a.example/path"]},
        {"allowedOrigins": ["ftp://a.example"]},
        {"allowedOrigins": ["not a url"]},
        {"allowedOrigins": "https://a.example"},
        {"officeHours": {"monday": [["09:00", "17:00"]]}},
        {"officeHours": {"mon": [["17:00", "09:00"]]}},
        {"officeHours": {"mon": [["9am", "5pm"]]}},
        {"officeHours": {"mon": "09:00-17:00"}},
        {"officeHours": []},
        {"name": "   "},
        {"greeting": "x" * 501},
        {"unknown": 1},
    ],
)
def test_bad_settings_are_400_and_store_nothing(api, owner, fields):
    response = post_json(api, "/widget-connections", {"name": "Chat"} | fields)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert not WidgetConnection.objects.for_org(owner.organization).exists()
    assert not ChannelConnection.objects.for_org(owner.organization).exists()


def test_rotating_the_key_stops_the_old_one(api, client, owner, widget):
    old = widget["embedKey"]
    token = start_visitor(client, old)
    rotated = patch_json(api, f"/widget-connections/{widget['id']}", {"rotateKey": True}).json()
    assert rotated["embedKey"] != old
    assert_error(client.get(f"/widget/{old}/config", HTTP_ORIGIN=ORIGIN), 404, "NOT_FOUND")
    assert client.get(f"/widget/{rotated['embedKey']}/thread", HTTP_X_WIDGET_VISITOR=token).status_code == 200
    channel = ChannelConnection.objects.for_org(owner.organization).get(id=widget["channelConnectionId"])
    assert channel.address == rotated["embedKey"]
    off = patch_json(api, f"/widget-connections/{widget['id']}", {"active": False}).json()
    assert off["active"] is False
    channel.refresh_from_db()
    assert channel.status == "disconnected"


def test_office_hours_decide_online(api, client, owner):
    widget = make_widget(api, officeHours={day: [] for day in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")},
                         awayMessage="We're closed.")  # fmt: skip
    config = client.get(f"/widget/{widget['embedKey']}/config").json()
    assert config["online"] is False and config["awayMessage"] == "We're closed."
    always = make_widget(api, officeHours={day: [["00:00", "23:59"]] for day in ("mon", "tue", "wed", "thu", "fri",
                                                                                   "sat", "sun")})  # fmt: skip
    assert client.get(f"/widget/{always['embedKey']}/config").json()["online"] is True


@pytest.mark.parametrize("role", ROLES)
def test_roles(role, owner, member_factory, widget):
    client = member_factory(role=role, organization=owner.organization).api_client()
    read = client.get("/widget-connections")
    write = post_json(client, "/widget-connections", {"name": f"W {role}"})
    managers = {"owner", "manager"}
    assert write.status_code == (201 if role in managers else 403)
    assert read.status_code in (200, 403)


def test_erasing_the_patient_removes_their_visitors(api, client, owner, widget, visitor):
    patient_id = Visitor.objects.for_org(owner.organization).get().patient_id
    response = api.delete(f"/patients/{patient_id}")
    assert response.status_code == 200, response.content
    assert not Visitor.objects.for_org(owner.organization).exists()
    assert_error(client.get(f"/widget/{widget['embedKey']}/thread", HTTP_X_WIDGET_VISITOR=visitor), 401,
                 "WIDGET_VISITOR_UNKNOWN")  # fmt: skip
