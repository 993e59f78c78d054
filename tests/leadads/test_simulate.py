"""manage.py simulate_lead_ad posts correctly signed callbacks to a running server, as each platform would; the
worker (eager here) makes the leads."""

import pytest
from django.core.management import call_command

from apps.leadads.models import DataDeletionRequest, LeadAdConnection, LeadAdSubmission
from tests.leadads.conftest import META_USER, make_connection


@pytest.mark.django_db(transaction=True)
def test_simulate_each_platform_through_a_running_server(owner, live_server, capsys):
    api = owner.api_client()
    meta = make_connection(api, "meta_platform")
    video = make_connection(api, "short_video")
    search = make_connection(api, "search_ads")

    call_command("simulate_lead_ad", "meta_platform", meta["id"], "--url", live_server.url)
    call_command("simulate_lead_ad", "short_video", video["id"], "--count", "3", "--url", live_server.url)
    call_command("simulate_lead_ad", "search_ads", search["id"], "--routing-token", search["routingToken"],
                 "--google-key", search["googleKey"], "--url", live_server.url)  # fmt: skip
    output = capsys.readouterr().out
    assert output.count("→ 200") == 3, output

    submissions = LeadAdSubmission.objects.for_org(owner.organization)
    assert {s.platform for s in submissions} == {"meta_platform", "short_video", "search_ads"}
    assert submissions.count() == 5 and all(s.status == "processed" for s in submissions)

    call_command("simulate_lead_ad", "data_deletion", "--user-id", META_USER, "--url", live_server.url)
    assert '"confirmation_code"' in capsys.readouterr().out
    assert DataDeletionRequest.objects.count() == 1
    assert LeadAdConnection.objects.for_org(owner.organization).get(id=meta["id"]).health == "disconnected"
