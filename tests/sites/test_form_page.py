"""The hosted form page (GET /form-page/{token}): a plain HTML form posting to the capture URL, its security
headers, the 404 page, and the whole trip a visitor makes without JavaScript: the page, a form post to its action,
the thank-you page and the lead."""

from html.parser import HTMLParser
from urllib.parse import urlencode, urlsplit

import pytest
from django.conf import settings
from django.test import Client

from apps.capture.models import AttributionTouch, CaptureSubmission
from apps.patients.models import MarketingConsent, Patient
from tests.helpers import assert_error
from tests.sites.conftest import CAPTURE_FORMS, make_capture_form, post_json, token_of

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
FORM_TYPE = "application/x-www-form-urlencoded"


class FormReader(HTMLParser):
    """The page's form as a browser sees it: action, method, enctype and the inputs it would send."""

    def __init__(self):
        super().__init__()
        self.form: dict = {}
        self.inputs: dict[str, dict] = {}
        self.h1 = ""
        self._in_h1 = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.form = attrs
        elif tag in ("input", "textarea") and attrs.get("name"):
            self.inputs[attrs["name"]] = attrs | {"tag": tag}
        elif tag == "h1":
            self._in_h1 = True

    def handle_endtag(self, tag):
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data):
        if self._in_h1:
            self.h1 += data


def read_page(response) -> FormReader:
    reader = FormReader()
    reader.feed(response.content.decode())
    return reader


def form_page(form: dict, query: str = "", **extra):
    return Client().get(f"/form-page/{token_of(form)}" + (f"?{query}" if query else ""), **extra)


def test_the_page_is_a_plain_form_posting_to_the_capture_url(owner, capture_form):
    response = form_page(capture_form, HTTP_ACCEPT=BROWSER_ACCEPT)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    page = read_page(response)
    assert page.h1 == owner.organization.name
    assert page.form["action"] == f"{settings.SVC_BASE_URL}/capture/{token_of(capture_form)}"
    assert page.form["action"] == capture_form["captureUrl"]
    assert page.form["method"] == "post"
    assert page.form["enctype"] == FORM_TYPE
    visible = ("first_name", "last_name", "email", "phone", "message", "marketing_consent")
    assert set(page.inputs) == {*visible, "_svc_hp", "_svc_form_page"}
    assert page.inputs["_svc_form_page"]["type"] == "hidden"
    assert page.inputs["email"]["type"] == "email"
    # An e-mail or a phone: neither alone is required (phone-only leads are welcome); the server checks the pair.
    assert "required" in page.inputs["first_name"]
    assert "required" not in page.inputs["email"] and "required" not in page.inputs["phone"]
    assert page.inputs["phone"]["type"] == "tel"
    assert page.inputs["message"]["tag"] == "textarea"
    assert (page.inputs["marketing_consent"]["type"], page.inputs["marketing_consent"]["value"]) == ("checkbox", "yes")
    assert "required" not in page.inputs["marketing_consent"]
    honeypot = page.inputs["_svc_hp"]
    assert (honeypot["type"], honeypot["tabindex"], honeypot["autocomplete"]) == ("text", "-1", "off")
    content = response.content.decode()
    # Every visible input has a label; the consent wording names the practice and the way out; no script at all.
    for name in visible:
        assert f'<label for="f-{name}"' in content
    assert f"receive news and offers from {owner.organization.name} by email and text message" in content
    assert "withdraw this at any time" in content
    assert "<script" not in content


def test_security_headers_let_any_site_embed_the_page_and_nothing_load(capture_form):
    response = form_page(capture_form)

    csp = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["style-src"].startswith("'nonce-")
    nonce = directives["style-src"][len("'nonce-") : -1]
    assert f'<style nonce="{nonce}">' in response.content.decode()
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(settings.SVC_BASE_URL))
    assert directives["form-action"] == f"'self' {origin}"
    assert directives["frame-ancestors"] == "*"
    assert "X-Frame-Options" not in response
    assert response["Cache-Control"] == "no-store"
    assert response["Referrer-Policy"] == "same-origin"  # a form post keeps its Origin (CSRF)
    assert '<meta name="referrer" content="same-origin">' in response.content.decode()
    # A fresh nonce each time.
    assert form_page(capture_form)["Content-Security-Policy"] != csp


def test_marketing_parameters_of_the_page_url_become_hidden_fields(capture_form):
    query = urlencode(
        {
            "utm_source": "google",
            "utm_campaign": '"><script>alert(1)</script>',
            "gclid": "abc123",
            "other": "kept out",
            "utm_term": "x" * 256,
            "first_name": "Mallory",
        }
    )

    response = form_page(capture_form, query)

    page = read_page(response)
    hidden = {name: attrs["value"] for name, attrs in page.inputs.items() if attrs.get("type") == "hidden"}
    assert hidden == {
        "utm_source": "google",
        "utm_campaign": '"><script>alert(1)</script>',
        "gclid": "abc123",
        "_svc_form_page": "1",
    }
    assert "<script>alert(1)" not in response.content.decode()
    assert "value" not in page.inputs["first_name"]


@pytest.mark.parametrize("state", ["paused", "archived", "signed", "calls", "unknown"])
def test_unusable_tokens_answer_the_same_404_page(api, state):
    form = make_capture_form(api, kind="incoming_calls") if state == "calls" else make_capture_form(api)
    if state in ("paused", "archived"):
        action = {"paused": "pause", "archived": "archive"}[state]
        assert post_json(api, f"{CAPTURE_FORMS}/{form['id']}/{action}").status_code == 200
    if state == "signed":
        assert post_json(api, f"{CAPTURE_FORMS}/{form['id']}/signing/enable").status_code == 200
    path = "/form-page/cap_unknown" if state == "unknown" else f"/form-page/{token_of(form)}"

    page = Client().get(path, HTTP_ACCEPT=BROWSER_ACCEPT)

    assert page.status_code == 404
    assert page["Content-Type"] == "text/html; charset=utf-8"
    assert "This form is not available" in page.content.decode()
    assert "<form" not in page.content.decode()
    assert page["Cache-Control"] == "no-store"
    # A client that asks for JSON gets the envelope.
    assert_error(Client().get(path, HTTP_ACCEPT="application/json"), 404, "NOT_FOUND")


def test_the_page_is_behind_the_public_screen(settings, capture_form):
    settings.SVC_PUBLIC_SCREEN_RATE = "1/m"

    assert form_page(capture_form).status_code == 200
    response = form_page(capture_form, HTTP_ACCEPT="application/json")
    assert_error(response, 429, "RATE_LIMITED")
    assert int(response["Retry-After"]) >= 1

    # A browser gets a page a person can read (same status and Retry-After), not the JSON envelope.
    page = form_page(capture_form, HTTP_ACCEPT=BROWSER_ACCEPT)
    assert page.status_code == 429
    assert page["Content-Type"] == "text/html; charset=utf-8"
    assert int(page["Retry-After"]) >= 1
    assert "Too many attempts" in page.content.decode()


def test_only_get_and_head(capture_form):
    assert Client().head(f"/form-page/{token_of(capture_form)}").status_code == 200
    assert_error(Client().post(f"/form-page/{token_of(capture_form)}"), 405, "METHOD_NOT_ALLOWED")


# --- the visitor's whole trip ---------------------------------------------------------------------------------


def test_a_visitor_fills_the_page_and_becomes_a_lead(owner, capture_form, django_capture_on_commit_callbacks):
    browser = Client(HTTP_ACCEPT=BROWSER_ACCEPT)
    page = read_page(browser.get(f"/form-page/{token_of(capture_form)}?utm_source=newsletter&utm_medium=email"))
    typed = {
        "first_name": "Anna",
        "last_name": "Smith",
        "email": "anna.smith@example.com",
        "phone": "+44 7700 900123",
        "message": "I would like to ask about implants.",
        "marketing_consent": page.inputs["marketing_consent"]["value"],
    }
    # What the browser sends: the typed values, the hidden inputs, and the empty honeypot.
    sent = {name: typed.get(name, attrs.get("value", "")) for name, attrs in page.inputs.items()}
    action = urlsplit(page.form["action"])

    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post(action.path, urlencode(sent), content_type=page.form["enctype"])

    assert response.status_code == 201, response.content
    assert response["Content-Type"] == "text/html; charset=utf-8"
    content = response.content.decode()
    assert "Thank you" in content and owner.organization.name in content
    assert "frame-ancestors *" in response["Content-Security-Policy"]
    assert "X-Frame-Options" not in response
    patient = Patient.objects.for_org(owner.organization).get(email="anna.smith@example.com")
    assert (patient.first_name, patient.last_name) == ("Anna", "Smith")
    [submission] = CaptureSubmission.objects.for_org(owner.organization).filter(form_id=capture_form["id"])
    assert submission.status == CaptureSubmission.Status.PROCESSED
    assert "_svc_hp" not in submission.fields
    touch = AttributionTouch.objects.for_org(owner.organization).get(patient=patient)
    assert (touch.utm_source, touch.utm_medium) == ("newsletter", "email")
    consent = MarketingConsent.objects.for_org(owner.organization).filter(patient=patient)
    assert consent.filter(status=MarketingConsent.State.GRANTED).exists()


def test_a_filled_honeypot_gets_the_thank_you_page_and_records_nothing(owner, capture_form):
    response = Client().post(
        f"/capture/{token_of(capture_form)}",
        urlencode({"first_name": "Bot", "email": "bot@example.com", "_svc_hp": "gotcha"}),
        content_type=FORM_TYPE,
        HTTP_ACCEPT=BROWSER_ACCEPT,
    )

    assert response.status_code == 201
    assert "Thank you" in response.content.decode()
    assert not CaptureSubmission.objects.for_org(owner.organization).exists()


@pytest.mark.parametrize(
    ("content_type", "body", "accept"),
    [
        (FORM_TYPE, urlencode({"email": "a@example.com"}), None),
        (FORM_TYPE, urlencode({"email": "a@example.com"}), "*/*"),
        (FORM_TYPE, urlencode({"email": "a@example.com"}), "application/json, text/html"),
        ("application/json", '{"email": "a@example.com"}', BROWSER_ACCEPT),
    ],
)
def test_everything_else_keeps_the_json_answer(capture_form, content_type, body, accept):
    extra = {"HTTP_ACCEPT": accept} if accept else {}

    response = Client().post(f"/capture/{token_of(capture_form)}", body, content_type=content_type, **extra)

    assert response.status_code == 201, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"ok": True}


# --- what cannot become a lead is answered on the page, not thanked for ----------------------------------------


def _page_post(form: dict, typed: dict, **extra):
    """What the hosted page's form sends from a browser: the typed values, its marker and the empty honeypot."""
    body = typed | {"_svc_form_page": "1", "_svc_hp": ""}
    return Client().post(
        f"/capture/{token_of(form)}", urlencode(body), content_type=FORM_TYPE, HTTP_ACCEPT=BROWSER_ACCEPT, **extra
    )


class ErrorReader(FormReader):
    """The page's inputs plus the error shown next to each field (data-error-for)."""

    def __init__(self):
        super().__init__()
        self.errors: dict[str, str] = {}
        self.textareas: dict[str, str] = {}
        self._error_for = self._textarea = None

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        attrs = dict(attrs)
        self._error_for = attrs.get("data-error-for")
        self._textarea = attrs.get("name") if tag == "textarea" else None

    def handle_data(self, data):
        super().handle_data(data)
        if self._error_for:
            self.errors[self._error_for] = self.errors.get(self._error_for, "") + data
        if self._textarea:
            self.textareas[self._textarea] = self.textareas.get(self._textarea, "") + data

    def handle_endtag(self, tag):
        super().handle_endtag(tag)
        self._error_for = self._textarea = None


def read_errors(response) -> ErrorReader:
    reader = ErrorReader()
    reader.feed(response.content.decode())
    return reader


def test_an_email_the_processor_cannot_use_is_shown_next_to_the_field_not_thanked_for(owner, capture_form):
    typed = {"first_name": "Jane", "email": "jane@gmail", "message": "Do you do implants?", "marketing_consent": "yes"}

    response = _page_post(capture_form, typed, QUERY_STRING="utm_source=newsletter")

    assert response.status_code == 400
    assert response["Content-Type"] == "text/html; charset=utf-8"
    content = response.content.decode()
    assert "Thank you" not in content
    page = read_errors(response)
    assert page.errors == {"email": "Enter a complete e-mail address, like jane@example.com."}
    assert page.inputs["email"]["aria-invalid"] == "true"
    assert page.inputs["email"]["aria-describedby"] == "f-email-error"
    # What was typed is kept, to correct rather than retype; the page still posts to the capture URL.
    assert (page.inputs["first_name"]["value"], page.inputs["email"]["value"]) == ("Jane", "jane@gmail")
    assert page.textareas["message"] == "Do you do implants?"
    assert "checked" in page.inputs["marketing_consent"]
    assert page.inputs["utm_source"]["value"] == "newsletter"
    assert page.form["action"] == capture_form["captureUrl"]
    assert "frame-ancestors *" in response["Content-Security-Policy"]
    # Nothing stored: the patient corrects it on the page.
    assert not CaptureSubmission.objects.for_org(owner.organization).exists()


def test_neither_email_nor_phone_nor_name_is_asked_for_on_the_page(owner, capture_form):
    response = _page_post(capture_form, {"first_name": " ", "email": "", "phone": "12", "message": "Hello"})

    assert response.status_code == 400
    errors = read_errors(response).errors
    assert errors == {"first_name": "Enter your first name.", "phone": "Enter a phone number with at least 5 digits."}
    empty = read_errors(_page_post(capture_form, {"first_name": "Jane"})).errors
    assert set(empty) == {"email", "phone"} and "e-mail address or a phone number" in empty["email"]
    assert not CaptureSubmission.objects.for_org(owner.organization).exists()


def test_a_phone_only_lead_from_the_page_becomes_a_lead(owner, capture_form, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = _page_post(capture_form, {"first_name": "Phone", "phone": "+44 7700 900123", "email": ""})

    assert response.status_code == 201, response.content
    assert "Thank you" in response.content.decode()
    patient = Patient.objects.for_org(owner.organization).get(phone_mobile="+44 7700 900123")
    assert patient.first_name == "Phone" and not patient.email
    [submission] = CaptureSubmission.objects.for_org(owner.organization)
    assert submission.status == CaptureSubmission.Status.PROCESSED


@pytest.mark.parametrize(
    "typed",
    [
        {"email": "jane@gmail"},
        {"email": "jane@example.com"},
        {"phone": "1234"},
        {"phone": "12345"},
        {"telephone": "020 7946 0000"},
        {"email": "jane@gmail", "phone": "+39 333 1234567"},
        {"email": "x" * 250 + "@example.com"},
        {"phone": "1" * 41},
        {},
    ],
)
def test_the_page_refuses_exactly_what_the_processor_would_not_make_a_lead_of(
    owner, capture_form, django_capture_on_commit_callbacks, typed
):
    typed = {"first_name": "Same rule"} | typed
    on_page = _page_post(capture_form, typed)
    with django_capture_on_commit_callbacks(execute=True):
        sent_by_a_site = Client().post(
            f"/capture/{token_of(capture_form)}",
            typed,
            content_type="application/json",
            HTTP_X_SERVICE_DELIVERY_ID="site",
        )
    assert sent_by_a_site.status_code == 201
    submission = CaptureSubmission.objects.for_org(owner.organization).get(delivery_id="site")

    assert on_page.status_code in (201, 400)
    assert (on_page.status_code == 400) == (submission.status == CaptureSubmission.Status.REJECTED)


def test_a_failed_browser_post_is_a_page_and_a_client_keeps_the_envelope(capture_form):
    too_big = urlencode({"first_name": "Jane", "phone": "+44 7700 900123", "message": "x" * (300 * 1024)})

    page = Client().post(
        f"/capture/{token_of(capture_form)}", too_big, content_type=FORM_TYPE, HTTP_ACCEPT=BROWSER_ACCEPT
    )
    assert page.status_code == 413
    assert page["Content-Type"] == "text/html; charset=utf-8"
    assert "Too much was sent" in page.content.decode() and '"code"' not in page.content.decode()
    assert_error(
        Client().post(f"/capture/{token_of(capture_form)}", too_big, content_type=FORM_TYPE), 413, "PAYLOAD_TOO_LARGE"
    )

    gone = Client().post("/capture/cap_unknown", {"phone": "12345"}, HTTP_ACCEPT=BROWSER_ACCEPT)
    assert gone.status_code == 404 and "This form is not available" in gone.content.decode()
