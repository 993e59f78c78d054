"""GET /widget/{embedKey}/demo: the hosted demo page with the widget's snippet, its own CSP, and a 404 page."""

from django.conf import settings

from tests.widget.conftest import make_widget


def test_the_demo_page_embeds_the_snippet_and_says_whether_its_origin_is_allowed(api, client, owner, widget):
    response = client.get(f"/widget/{widget['embedKey']}/demo", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    script = f"{settings.SVC_BASE_URL}/static/widget/widget.js"
    assert f'<script src="{script}" data-embed-key="{widget["embedKey"]}" nonce="' in page
    assert (
        "is not among the widget\N{RIGHT SINGLE QUOTATION MARK}s allowed websites" in page
    )  # http://testserver is not allowed
    csp = response["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'nonce-" in csp and settings.SVC_BASE_URL in csp
    assert "connect-src" in csp and "ws://" in csp and response["Cache-Control"] == "no-store"

    allowed = make_widget(api, name="Here", allowedOrigins=["http://testserver"])
    assert (
        "is among the widget\N{RIGHT SINGLE QUOTATION MARK}s allowed websites"
        in client.get(f"/widget/{allowed['embedKey']}/demo").content.decode()
    )
    escaped = make_widget(api, name="<script>alert(1)</script>")
    assert "<script>alert" not in client.get(f"/widget/{escaped['embedKey']}/demo").content.decode()


def test_unknown_and_inactive_widgets_are_a_404_page(api, client, widget):
    for key in ("wk_nope", "wk_" + "x" * 32):
        response = client.get(f"/widget/{key}/demo", HTTP_ACCEPT="text/html")
        assert response.status_code == 404 and "This chat widget is not available" in response.content.decode()
    api.patch(f"/widget-connections/{widget['id']}", {"active": False}, content_type="application/json")
    assert client.get(f"/widget/{widget['embedKey']}/demo").status_code == 404
    assert client.post(f"/widget/{widget['embedKey']}/demo").status_code == 405
