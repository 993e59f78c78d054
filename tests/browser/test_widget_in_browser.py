"""The chat widget in headless Chromium against the real web tier (nginx, gunicorn, daphne) and a real Celery worker:
a visitor opens the widget on its hosted demo page (GET /widget/{embedKey}/demo), fills in the pre-chat form and sends
a message, which lands in the practice's inbox; a member answers through the API (POST /conversations/{id}/messages,
delivered by the worker's send task) and the reply appears in the widget over its socket, with the practice's typing
indicator before it. The host page's CSS does not reach the widget (Shadow DOM), and nothing is shown as HTML."""

import json
import time

import httpx
import pytest

from apps.conversations.models import Conversation, Message
from apps.patients.models import Patient
from apps.widget.models import Visitor
from tests.browser.conftest import SCREENSHOTS

pytestmark = pytest.mark.django_db(transaction=True)

REPLY = "Yes, we place implants. <b>Not bold</b>"


def test_a_visitor_chats_with_the_practice_through_the_embedded_widget(owner, web_server, start_worker, page):
    address = web_server
    worker = start_worker()
    api = httpx.Client(base_url=f"http://{address}", headers={"Authorization": f"Bearer {owner.api_key}"}, timeout=30)
    created = api.post(
        "/widget-connections",
        json={"name": "Website chat", "allowedOrigins": [f"http://{address}"], "greeting": "Hi! How can we help?"},
    )
    assert created.status_code == 201, created.text
    widget = created.json()
    assert f'src="http://{address}/static/widget/widget.js"' in widget["snippet"]
    assert httpx.get(f"http://{address}/static/widget/widget.js").status_code == 200

    problems = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(f"http://{address}/widget/{widget['embedKey']}/demo")
    assert "is among the widget\N{RIGHT SINGLE QUOTATION MARK}s allowed websites" in page.inner_text("#demo-note")

    launcher = page.locator("button[aria-label='Open chat']")  # Playwright's CSS reaches into open shadow roots
    launcher.click()
    page.wait_for_selector("text=Hi! How can we help?")
    assert launcher.get_attribute("aria-expanded") == "true"
    assert launcher.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(29, 78, 216)"  # not the page's pink
    page.get_by_label("Your name").fill("Vera Visitor")
    page.get_by_label("E-mail").fill("vera@example.com")
    page.get_by_role("button", name="Start chat").click()
    page.wait_for_selector("form.prechat", state="hidden")
    page.get_by_label("Your message").fill("Hello, do you do implants?")
    page.get_by_role("button", name="Send").click()
    page.wait_for_selector("li.msg.visitor:not(.pending):has-text('Hello, do you do implants?')")

    organization = owner.organization
    message = Message.objects.for_org(organization).get()
    assert (
        message.direction == "inbound" and message.channel == "widget" and message.body == "Hello, do you do implants?"
    )
    patient = Patient.objects.for_org(organization).get()
    assert (patient.first_name, patient.email, patient.status) == ("Vera", "vera@example.com", "enquiry")
    visitor = Visitor.objects.for_org(organization).get()
    token = page.evaluate(f"localStorage.getItem('practiceCrmWidget:{widget['embedKey']}')")
    assert token.startswith("wv_") and visitor.patient_id == patient.id
    conversation = Conversation.objects.for_org(organization).get()
    inbox = api.get(f"/conversations/{conversation.id}/messages").json()
    assert [item["body"] for item in inbox["items"]] == ["Hello, do you do implants?"]

    page.wait_for_selector("[data-practice-crm-widget][data-connection=live]", state="attached")  # the socket
    assert api.post(f"/conversations/{conversation.id}/typing").status_code == 204
    page.wait_for_selector("text=The practice is typing…")
    reply = api.post(f"/conversations/{conversation.id}/messages", json={"body": REPLY})
    assert reply.status_code in (201, 202), reply.text
    shown = page.wait_for_selector(f"li.msg.practice:has-text({json.dumps(REPLY)})")
    assert shown.evaluate("li => li.querySelector('b')") is None  # text, never markup
    assert page.locator("[role=log][aria-live=polite] li").count() == 2
    page.wait_for_selector("text=The practice is typing…", state="detached")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "widget_demo.png"), full_page=True)

    # The worker pushes the reply to the socket, then records the batch's outcome: the status may land a moment
    # after the visitor sees the message.
    stored = Message.objects.for_org(organization).get(direction="outbound")
    for _ in range(100):
        if stored.status != "queued":
            break
        time.sleep(0.1)
        stored.refresh_from_db()
    assert stored.status == "sent" and stored.body == REPLY
    assert not problems, problems
    worker.poll() is None or pytest.fail(worker.log())
