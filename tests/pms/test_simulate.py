"""manage.py simulate_pms posts correctly signed callbacks, as the PMS would: run against the test server's views
through a live server thread."""

import pytest
from django.core.management import call_command

from apps.pms.models import PmsReceipt, PmsSyncReview

pytestmark = pytest.mark.django_db(transaction=True)


def test_simulate_pms_plays_every_scenario(owner, live_server, pms, settings, capsys):
    from tests.pms.conftest import API_KEY, post_json

    settings.CELERY_TASK_ALWAYS_EAGER = True
    api = owner.api_client()
    created = post_json(api, "/settings/pms/connections", {"name": "PMS", "baseUrl": pms.base_url, "apiKey": API_KEY})
    assert created.status_code == 201, created.content
    body = created.json()
    url = live_server.url + "/webhooks" + body["callbackUrl"].split("/webhooks", 1)[1]

    call_command("simulate_pms", url=url, secret=body["signingSecret"], item_id="SIM1")

    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == [
        "patient",
        "appointment",
        "replay (first)",
        "replay (same delivery id)",
        "replay (new delivery id, same revision)",
        "conflict (other content, same revision)",
        "oversized (101 events)",
    ]
    assert all(": 200 " in line for line in out), out
    assert '"duplicate":true' in out[3].replace(" ", "")
    assert '"reason":"too_many_events"' in out[6].replace(" ", "")
    receipts = PmsReceipt.objects.for_org(owner.organization)
    assert receipts.count() == 6  # the duplicate stored nothing
    assert receipts.filter(state="rejected", reason="too_many_events").count() == 1
    assert PmsSyncReview.objects.for_org(owner.organization).filter(provider_item_id="SIM1").count() == 1
