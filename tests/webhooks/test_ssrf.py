"""Destination safety of the outbound sender (spec "Outbound webhook events": https on port 443, a public DNS
hostname resolving only to public addresses, no userinfo, no redirect; issue 4 "Destination safety").

DNS is the fake table of tests/webhooks/conftest.py (sender.resolve replaced); nothing here leaves the machine:
where sender.post would connect, httpx.Client.send is replaced by a recorder.
"""

import ipaddress
import uuid

import httpx
import pytest
from django.db import transaction
from django.utils import timezone

from apps.core.errors import ValidationFailed
from apps.events import services as event_services
from apps.events.services import Actor, emit
from apps.webhooks import delivery, sender, services
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint

# Refused on their shape alone (no DNS needed).
SHAPE_HOSTILE = [
    pytest.param("http://hooks.example.com/", id="http"),
    pytest.param("https://hooks.example.com:8443/", id="port-8443"),
    pytest.param("https://hooks.example.com:80/", id="port-80"),
    pytest.param("https://user:pw@hooks.example.com/", id="userinfo"),
    pytest.param("https://user@hooks.example.com/", id="username-only"),
    pytest.param("https://hooks.example.com@evil.com/", id="userinfo-trick"),
    pytest.param("https://127.0.0.1/", id="loopback-v4"),
    pytest.param("https://[::1]/", id="loopback-v6"),
    pytest.param("https://10.1.2.3/", id="10/8"),
    pytest.param("https://172.16.0.1/", id="172.16/12"),
    pytest.param("https://192.168.1.1/", id="192.168/16"),
    pytest.param("https://169.254.169.254/", id="metadata"),
    pytest.param("https://93.184.216.34/", id="public-ip-literal"),
    pytest.param("https://2130706433/", id="decimal-ip"),
    pytest.param("https://0177.0.0.1/", id="octal-ip"),
    pytest.param("https://0x7f.1/", id="hex-ip"),
    pytest.param("https://0x7f000001/", id="hex-ip-whole"),
    pytest.param("https://127.1/", id="short-ip"),
    pytest.param("https://2130706433./", id="decimal-ip-trailing-dot"),
    pytest.param("https://[::ffff:127.0.0.1]/", id="v4-mapped-v6"),
    pytest.param("https://[fc00::1]/", id="ula"),
    pytest.param("https://[fe80::1%25eth0]/", id="link-local-with-zone"),
    pytest.param("https://localhost/", id="localhost"),
    pytest.param("https://intranet/", id="single-label"),
    pytest.param("ftp://hooks.example.com/", id="ftp"),
    pytest.param("https:///path", id="no-host"),
    pytest.param("https://hooks.example.com:99999/", id="bad-port"),
    pytest.param("https://hooks.example.com/" + "a" * 2048, id="url-over-2048-bytes"),
    pytest.param("https://hooks.example.com/" + "\u00e9" * 1020, id="url-over-2048-utf8-bytes"),
]

# Shaped like a fine https URL; refused once the (fake) DNS answers are looked at.
DNS_HOSTILE = [
    pytest.param("https://internal.example.com/", id="private"),
    pytest.param("https://mixed.example.com/", id="one-bad-address-spoils-it"),
    pytest.param("https://metadata.example.com/", id="metadata"),
    pytest.param("https://v6local.example.com/", id="v6-loopback"),
    pytest.param("https://ula.example.com/", id="ula"),
    pytest.param("https://mapped.example.com/", id="v4-mapped-loopback"),
    pytest.param("https://cgnat.example.com/", id="cgnat"),
    pytest.param("https://nonexistent.example.com/", id="does-not-resolve"),
]


@pytest.fixture(params=["production", "development"])
def mode(request, settings):
    """Every refusal holds with the development loopback allowance on too (it only admits http loopback)."""
    settings.DEBUG = request.param == "development"
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = request.param == "development"
    return request.param


@pytest.fixture
def sends(monkeypatch):
    """Replaces the network: records every request httpx would send and answers 200."""
    sent: list[httpx.Request] = []

    def send(self, request, **kwargs):
        sent.append(request)
        return httpx.Response(200, content=b"ok", request=request)

    monkeypatch.setattr(httpx.Client, "send", send)
    return sent


@pytest.mark.parametrize("url", SHAPE_HOSTILE)
def test_hostile_url_shapes_are_refused(url, mode):
    with pytest.raises(sender.UnsafeDestination):
        sender.check_url_shape(url)
    with pytest.raises(sender.UnsafeDestination):
        sender.vet(url)


@pytest.mark.parametrize("url", DNS_HOSTILE)
def test_names_resolving_to_non_public_addresses_are_refused(url, mode):
    assert sender.check_url_shape(url)[0::2] == ("https", 443)
    with pytest.raises(sender.UnsafeDestination):
        sender.vet(url)


@pytest.mark.parametrize(
    "address",
    [
        "0.0.0.0",
        "127.0.0.2",
        "100.64.0.1",
        "192.0.0.1",
        "192.0.2.1",
        "198.18.0.1",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "fe80::1",
        "fe80::1%eth0",
        "ff02::1",
        "ff0e::1",
        "2001:db8::1",
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "64:ff9b:1::a00:1",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "::ffff:10.0.0.1",
        "::7f00:1",  # IPv4-compatible 127.0.0.1 (deprecated ::/96, not global unicast)
        "::a00:1",  # IPv4-compatible 10.0.0.1
        "::ffff:0:7f00:1",  # IPv4-translated 127.0.0.1 (SIIT ::ffff:0:0/96)
    ],
)
def test_any_non_public_dns_answer_is_refused(address, fake_dns, monkeypatch, mode):
    monkeypatch.setitem(fake_dns, "answer.example.com", [address])
    with pytest.raises(sender.UnsafeDestination):
        sender.vet("https://answer.example.com/")
    # …also when it hides behind a public one.
    monkeypatch.setitem(fake_dns, "answer.example.com", ["93.184.216.34", address])
    with pytest.raises(sender.UnsafeDestination):
        sender.vet("https://answer.example.com/")


def test_a_name_with_no_addresses_is_refused(fake_dns, monkeypatch):
    monkeypatch.setitem(fake_dns, "empty.example.com", [])
    with pytest.raises(sender.UnsafeDestination, match="does not resolve"):
        sender.vet("https://empty.example.com/")


@pytest.mark.parametrize(
    ("url", "pinned", "host"),
    [
        ("https://hooks.example.com/path?x=1", "https://93.184.216.34:443/path?x=1", "hooks.example.com"),
        ("https://hooks.example.com:443/path", "https://93.184.216.34:443/path", "hooks.example.com"),
        ("https://alias.example.com/", "https://93.184.216.34:443/", "alias.example.com"),
        ("https://HOOKS.Example.COM./in", "https://93.184.216.34:443/in", "hooks.example.com"),
    ],
)
def test_allowed_urls_are_pinned_to_the_vetted_address(url, pinned, host, mode):
    destination = sender.vet(url)

    assert destination == sender.Destination(url=pinned, host=host, address="93.184.216.34")


def test_an_ipv6_address_is_pinned_in_brackets(fake_dns, monkeypatch):
    monkeypatch.setitem(fake_dns, "v6.example.com", ["2606:2800:220:1::1"])

    destination = sender.vet("https://v6.example.com/hook")

    assert destination.url == "https://[2606:2800:220:1::1]:443/hook"
    assert destination.host == "v6.example.com"
    assert ipaddress.ip_address(destination.address) == ipaddress.ip_address("2606:2800:220:1::1")


def test_a_url_of_exactly_2048_bytes_is_allowed():
    url = "https://hooks.example.com/" + "a" * (2048 - len("https://hooks.example.com/"))
    assert len(url.encode()) == 2048
    assert sender.vet(url).host == "hooks.example.com"


# --- the development loopback allowance -------------------------------------------------------------------------


@pytest.mark.parametrize(("debug", "allow"), [(False, True), (True, False), (False, False)])
@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/", "http://localhost:8080/hook"])
def test_loopback_is_refused_unless_both_debug_and_the_allowance_are_on(url, debug, allow, settings):
    settings.DEBUG = debug
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = allow
    with pytest.raises(sender.UnsafeDestination):
        sender.vet(url)


@pytest.mark.parametrize(
    ("url", "host"), [("http://127.0.0.1:8080/", "127.0.0.1"), ("http://localhost:8080/hook", "localhost")]
)
def test_loopback_is_allowed_in_development(url, host, settings):
    settings.DEBUG = True
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = True

    destination = sender.vet(url)

    assert destination.url == url
    assert destination.host == host
    assert destination.address == "127.0.0.1"


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1:8080/",
        "https://localhost:8080/",
        "http://10.0.0.1:8080/",
        "http://127.0.0.2:8080/",
        "http://[::1]:8080/",
        "http://user:pw@127.0.0.1:8080/",
        "http://hooks.example.com:8080/",
    ],
)
def test_the_loopback_allowance_admits_nothing_else(url, settings):
    settings.DEBUG = True
    settings.SVC_WEBHOOKS_ALLOW_LOOPBACK = True
    with pytest.raises(sender.UnsafeDestination):
        sender.vet(url)


# --- the sender -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", SHAPE_HOSTILE + DNS_HOSTILE)
def test_post_to_an_unsafe_url_makes_no_connection(url, sends, mode):
    outcome = sender.post(url, b"{}", {"Content-Type": "application/json"})

    assert outcome.status is None
    assert outcome.error.startswith("unsafe destination")
    assert sends == []


def test_post_connects_to_the_vetted_address_with_the_name_for_host_and_sni(fake_dns, monkeypatch, sends):
    """A rebinding resolver: public at the check, loopback on any later lookup. The request goes to the vetted
    address, with Host and SNI naming the host, and no second lookup happens between check and connect."""
    lookups = []
    answers = iter([["93.184.216.99"], ["127.0.0.1"], ["127.0.0.1"]])

    def rebinding_resolve(host, port):
        lookups.append((host, port))
        return next(answers)

    monkeypatch.setattr(sender, "resolve", rebinding_resolve)
    clients = []
    real_init = httpx.Client.__init__

    def init(self, *args, **kwargs):
        clients.append(kwargs)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(httpx.Client, "__init__", init)
    body = b'{"version":"1"}'

    outcome = sender.post(
        "https://hooks.example.com/in?x=1", body, {"Content-Type": "application/json", "X-Service-Delivery-Id": "d1"}
    )

    assert (outcome.status, outcome.error, outcome.snippet) == (200, "", "ok")
    assert lookups == [("hooks.example.com", 443)]
    [request] = sends
    assert request.method == "POST"
    assert request.url.scheme == "https"
    assert request.url.host == "93.184.216.99"
    assert request.url.port in (None, 443)
    assert request.url.raw_path == b"/in?x=1"
    assert request.headers["Host"] == "hooks.example.com"
    assert request.extensions["sni_hostname"] == "hooks.example.com"
    assert request.headers["X-Service-Delivery-Id"] == "d1"
    assert request.content == body
    [options] = clients
    assert options["follow_redirects"] is False
    assert options["trust_env"] is False


def test_post_pins_an_ipv6_address(fake_dns, monkeypatch, sends):
    monkeypatch.setitem(fake_dns, "hooks.example.com", ["2606:2800:220:1::1"])

    sender.post("https://hooks.example.com/", b"{}", {})

    [request] = sends
    assert request.url.host == "2606:2800:220:1::1"
    assert request.headers["Host"] == "hooks.example.com"
    assert request.extensions["sni_hostname"] == "hooks.example.com"


def test_post_refuses_a_body_over_64_kib_without_connecting(sends):
    outcome = sender.post("https://hooks.example.com/", b"x" * (64 * 1024 + 1), {})

    assert outcome.status is None
    assert "65536" in outcome.error
    assert sends == []


def test_an_endpoint_whose_name_now_resolves_inward_gets_no_request(owner, fake_dns, monkeypatch, sends):
    """Registered while public; DNS then points inside. Every send checks again (no connection is made)."""
    monkeypatch.setattr(event_services, "_committed_listeners", [])
    created = services.endpoint_create(
        organization=owner.organization,
        user=None,
        name="Hook",
        url="https://hooks.example.com/in",
        events=["patient.created"],
    )
    WebhookEndpoint.objects.for_org(owner.organization).filter(id=created.endpoint.id).update(
        verified_at=timezone.now(), enabled=True
    )
    with transaction.atomic():
        emit(
            organization=owner.organization,
            type="patient.created",
            subject_type="patient",
            subject_id=uuid.uuid4(),
            actor=Actor.system(),
        )
    delivery.fan_out()
    monkeypatch.setitem(fake_dns, "hooks.example.com", ["10.0.0.5"])

    delivery.drain_endpoint(created.endpoint.id)

    assert sends == []
    [d] = WebhookDelivery.objects.for_org(owner.organization).filter(endpoint_id=created.endpoint.id)
    assert d.attempts == 1
    assert d.response_status is None
    assert d.last_error.startswith("unsafe destination")
    assert d.status != WebhookDelivery.Status.DELIVERED


@pytest.mark.parametrize("url", ["https://internal.example.com/", "https://127.0.0.1/", "http://hooks.example.com/"])
def test_registration_refuses_unsafe_urls(owner, url):
    with pytest.raises(ValidationFailed):
        services.endpoint_create(
            organization=owner.organization, user=None, name="Hook", url=url, events=["patient.created"]
        )
    assert not WebhookEndpoint.objects.for_org(owner.organization).exists()
