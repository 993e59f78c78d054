"""The public /widget/{embedKey}/* surface through HTTP: config, visitors, threads, messages, origins, tenancy."""

from apps.conversations.models import Conversation, Message
from apps.events.models import Event
from apps.patients.models import Patient
from apps.widget.models import Visitor
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.widget.conftest import ORIGIN, make_widget, open_thread, post_json, start_visitor


def send(client, key, token, body="Hello, do you do implants?", **extra):
    return post_json(
        client,
        f"/widget/{key}/thread/messages",
        {"body": body, **extra},
        HTTP_ORIGIN=ORIGIN,
        HTTP_X_WIDGET_VISITOR=token,
    )


def test_config_for_an_allowed_origin_with_cors(client, owner, widget):
    response = client.get(f"/widget/{widget['embedKey']}/config", HTTP_ORIGIN=ORIGIN)
    assert response.status_code == 200
    body = response.json()
    assert body["practiceName"] == owner.organization.name and body["greeting"] == "Hi! How can we help?"
    assert body["online"] is True and body["officeHours"] == {}
    assert response["Access-Control-Allow-Origin"] == ORIGIN and "Origin" in response["Vary"]
    preflight = client.options(f"/widget/{widget['embedKey']}/thread/messages", HTTP_ORIGIN=ORIGIN)
    assert preflight.status_code == 204 and "X-Widget-Visitor" in preflight["Access-Control-Allow-Headers"]


def test_other_origins_unknown_keys_and_inactive_widgets_are_refused(api, client, widget):
    key = widget["embedKey"]
    refused = client.get(f"/widget/{key}/config", HTTP_ORIGIN="https://evil.example")
    assert_error(refused, 403, "WIDGET_ORIGIN_NOT_ALLOWED")
    assert "Access-Control-Allow-Origin" not in refused
    assert_error(client.post(f"/widget/{key}/visitors", HTTP_ORIGIN="https://evil.example"), 403,
                 "WIDGET_ORIGIN_NOT_ALLOWED")  # fmt: skip
    assert not Visitor.objects.unscoped().exists()
    for unknown in ("wk_nope", "wk_%00", f"{key}%00", "%00"):
        assert_error(client.get(f"/widget/{unknown}/config"), 404, "NOT_FOUND")
        assert_error(client.post(f"/widget/{unknown}/visitors"), 404, "NOT_FOUND")
    assert client.get(f"/widget/{key}/config").status_code == 200  # no Origin: not a browser page
    assert (
        api.patch(f"/widget-connections/{widget['id']}", {"active": False}, content_type="application/json").status_code
        == 200
    )
    assert_error(client.get(f"/widget/{key}/config", HTTP_ORIGIN=ORIGIN), 404, "NOT_FOUND")


def test_a_visitor_opens_a_thread_and_writes_to_the_inbox(api, client, owner, widget, committed):
    key = widget["embedKey"]
    token = start_visitor(client, key)
    thread = client.get(f"/widget/{key}/thread", HTTP_X_WIDGET_VISITOR=token).json()
    assert thread == {"open": False, "name": "", "messages": [], "nextCursor": None}
    assert_error(send(client, key, token), 409, "WIDGET_THREAD_NOT_OPEN")

    opened = open_thread(client, key, token, phone="+44 7700 900123")
    assert opened.status_code == 201 and opened.json()["open"] is True
    patient = Patient.objects.for_org(owner.organization).get()
    assert (
        patient.status == "enquiry"
        and patient.email == "vera@example.com"
        and patient.lead_source.name == "Chat widget"
    )
    assert open_thread(client, key, token, name="Someone Else").status_code == 200  # the first details stay

    sent = committed(send, client, key, token, clientMessageId="m-1")
    assert sent.status_code == 201, sent.content
    message = Message.objects.for_org(owner.organization).get()
    assert message.direction == "inbound" and message.channel == "widget" and message.body.startswith("Hello")
    conversation = Conversation.objects.for_org(owner.organization).get()
    assert conversation.patient_id == patient.id and conversation.channel == "widget"
    types = set(Event.objects.for_org(owner.organization).values_list("type", flat=True))
    assert {"conversation.created", "message.received"} <= types
    for event in Event.objects.for_org(owner.organization).filter(type="message.received"):
        assert "Hello" not in str(event.data)

    again = send(client, key, token, clientMessageId="m-1")
    assert again.status_code == 200 and again.json()["id"] == sent.json()["id"]
    assert Message.objects.for_org(owner.organization).count() == 1

    inbox = api.get(f"/conversations/{conversation.id}/messages").json()
    assert [item["body"] for item in inbox["items"]] == ["Hello, do you do implants?"]


def test_a_known_patient_is_matched_and_sees_only_their_own_messages(api, client, owner, widget, committed):
    key = widget["embedKey"]
    known = PatientFactory(organization=owner.organization, email="known@example.com")
    first, second = start_visitor(client, key), start_visitor(client, key)
    assert open_thread(client, key, first, email="KNOWN@example.com").status_code == 201
    assert open_thread(client, key, second, email="known@example.com").status_code == 201
    assert Patient.objects.for_org(owner.organization).count() == 1
    assert {v.patient_id for v in Visitor.objects.for_org(owner.organization)} == {known.id}
    committed(send, client, key, first, body="first visitor")
    committed(send, client, key, second, body="second visitor")
    mine = client.get(f"/widget/{key}/thread", HTTP_X_WIDGET_VISITOR=second).json()
    assert [m["body"] for m in mine["messages"]] == ["second visitor"]


def test_staff_reply_reaches_the_thread_and_cursor_reads(api, client, owner, widget, visitor, committed):
    key = widget["embedKey"]
    committed(send, client, key, visitor)
    conversation = Conversation.objects.for_org(owner.organization).get()
    reply = committed(post_json, api, f"/conversations/{conversation.id}/messages", {"body": "Yes we do!"})
    assert reply.status_code in (201, 202), reply.content
    stored = Message.objects.for_org(owner.organization).get(direction="outbound")
    assert stored.status == "sent" and stored.sandbox is False
    page = client.get(f"/widget/{key}/thread/messages", HTTP_X_WIDGET_VISITOR=visitor).json()
    assert [(m["sender"], m["body"]) for m in page["items"]] == [
        ("visitor", "Hello, do you do implants?"),
        ("practice", "Yes we do!"),
    ]
    after = client.get(f"/widget/{key}/thread/messages?after={page['nextCursor']}", HTTP_X_WIDGET_VISITOR=visitor)
    assert after.json() == {"items": [], "nextCursor": page["nextCursor"]}
    assert_error(client.get(f"/widget/{key}/thread/messages?after=junk", HTTP_X_WIDGET_VISITOR=visitor), 400,
                 "VALIDATION_ERROR")  # fmt: skip


def test_bad_tokens_and_bodies(client, owner, widget, visitor):
    key = widget["embedKey"]
    for token in (None, "wv_" + "x" * 43, "garbage", visitor + "x", visitor[:-1] + "\x00"):
        headers = {"HTTP_X_WIDGET_VISITOR": token} if token else {}
        assert_error(client.get(f"/widget/{key}/thread", **headers), 401, "WIDGET_VISITOR_UNKNOWN")
    for body in ({"body": ""}, {"body": "  "}, {"body": "x" * 4097}, {"body": 5}, {"body": "a", "extra": 1},
                 {"body": "a", "clientMessageId": "bad id!"}, {"body": "a\x00b"}):  # fmt: skip
        response = post_json(client, f"/widget/{key}/thread/messages", body, HTTP_X_WIDGET_VISITOR=visitor)
        assert_error(response, 400, "VALIDATION_ERROR")
    big = client.post(f"/widget/{key}/thread/messages", "x" * (256 * 1024 + 1), content_type="application/json",
                      HTTP_X_WIDGET_VISITOR=visitor)  # fmt: skip
    assert big.status_code == 413
    new = start_visitor(client, key)
    for details in ({"name": "A"}, {"name": "", "email": "a@b.co"}, {"name": "A", "email": "nope"},
                    {"name": "A", "phone": "abc"}):  # fmt: skip
        assert_error(
            open_thread(client, key, new, **details)
            if "email" in details
            else post_json(client, f"/widget/{key}/thread", details, HTTP_X_WIDGET_VISITOR=new),
            400,
            "VALIDATION_ERROR",
        )
    assert not Message.objects.for_org(owner.organization).exists()


def test_another_practices_visitor_and_widget(api, client, owner, outsider, widget, visitor):
    other_widget = make_widget(outsider.api_client(), allowedOrigins=[])
    assert_error(client.get(f"/widget/{other_widget['embedKey']}/thread", HTTP_X_WIDGET_VISITOR=visitor), 401,
                 "WIDGET_VISITOR_UNKNOWN")  # fmt: skip
    other = outsider.api_client()
    assert_error(other.get(f"/widget-connections/{widget['id']}"), 404, "NOT_FOUND")
    assert other.get("/widget-connections").json()["total"] == 1
    assert_error(other.patch(f"/widget-connections/{widget['id']}", {"name": "x"}, content_type="application/json"),
                 404, "NOT_FOUND")  # fmt: skip
