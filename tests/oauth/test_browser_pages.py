"""The OAuth pages people post from (sign-in, consent): a referrer policy that lets the browser's post carry its
Origin (no-referrer makes it "Origin: null", which the CSRF check refuses), and every failure there a page a person
can read, while API clients on the same routes keep the JSON envelope."""

from urllib.parse import urlencode

from django.test import Client

from apps.oauth.models import Grant
from tests.helpers import assert_error
from tests.oauth.conftest import AUTHORIZE, CONSENT, CONTINUE, consent_form, new_authorization

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
SIGN_IN = f"{CONTINUE}?{urlencode({'next': AUTHORIZE + '?x=1'})}"


def _assert_keeps_origin(response):
    assert response.status_code == 200, response.content
    # Both the header (SecurityMiddleware, SECURE_REFERRER_POLICY) and the page's meta tag: same-origin keeps the
    # Origin on the page's own form post; no-referrer (or any policy that strips it) sends "Origin: null".
    assert response["Referrer-Policy"] == "same-origin"
    content = response.content.decode()
    assert '<meta name="referrer" content="same-origin">' in content
    assert "no-referrer" not in content


def test_sign_in_and_consent_pages_let_their_post_carry_the_origin(signed_in, app_client_id):
    _assert_keeps_origin(Client().get(SIGN_IN))
    _assert_keeps_origin(signed_in.get(new_authorization(app_client_id).url()))


def _assert_readable_page(response, status: int, *texts: str):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("text/html")
    content = response.content.decode()
    assert "<h1>" in content and '"code"' not in content
    for text in texts:
        assert text in content


def test_a_csrf_failure_on_consent_is_a_page_for_a_browser_and_the_envelope_for_a_client(signed_in, app_client_id):
    form = consent_form(signed_in, new_authorization(app_client_id))
    data = form["fields"] | {"allow": "true", "csrfmiddlewaretoken": "forged"}

    page = signed_in.post(CONSENT, data, HTTP_ACCEPT=BROWSER_ACCEPT)
    _assert_readable_page(page, 403, "This page could not be sent", "reload the page and try again")
    assert "CSRF" not in page.content.decode()  # words for a person, not Django's reason
    assert_error(signed_in.post(CONSENT, data, HTTP_ACCEPT="application/json"), 403, "CSRF_FAILED")
    assert_error(signed_in.post(CONSENT, data), 403, "CSRF_FAILED")  # no Accept: the envelope
    assert not Grant.objects.exists()


def test_a_csrf_failure_on_sign_in_is_a_page(owner, password):
    browser = Client(enforce_csrf_checks=True)
    assert browser.get(SIGN_IN).status_code == 200
    body = {"next": AUTHORIZE + "?x=1", "step": "password", "email": owner.user.email, "password": password}

    page = browser.post(CONTINUE, body, HTTP_ACCEPT=BROWSER_ACCEPT)  # the form's token is missing

    _assert_readable_page(page, 403, "This page could not be sent")
    assert "_auth_user_id" not in browser.session


def test_an_unexpected_failure_on_consent_is_a_page_with_a_reference(monkeypatch, owner, signed_in, app_client_id):
    from apps.oauth import views

    form = consent_form(signed_in, new_authorization(app_client_id))

    def broken(*args, **kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(views.ConsentView, "form_valid", broken)
    data = form["fields"] | {"organization_id": str(owner.organization.id), "allow": "true"}

    page = signed_in.post(CONSENT, data, HTTP_ACCEPT=BROWSER_ACCEPT)

    _assert_readable_page(page, 500, "Something went wrong", "Reference: ")
    assert "database on fire" not in page.content.decode()
    response = signed_in.post(CONSENT, data, HTTP_ACCEPT="application/json")
    assert response.status_code == 500 and response.json()["code"] == "INTERNAL_ERROR"
