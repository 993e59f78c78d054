"""POST /webhooks/telephony/{token}/failover-probe: 200 {"status": "ok"} only when a database query and the media
storage check both answer; 503 {"status": "unavailable", "dependency": "database"} when the database does not
(its connection killed under the request), "r2" when the storage does not (a store that cannot write)."""

import psycopg
import pytest
from django.db import connection as database

from apps.dialer.models import DialerConnection
from tests.conftest import make_member
from tests.dialer.conftest import TelnyxAccount, connect, token_of
from tests.helpers import assert_error


def probe(client, line):
    return client.post(f"/webhooks/telephony/{token_of(line)}/failover-probe")


@pytest.mark.django_db
def test_ok_when_the_database_and_the_storage_answer(api, line, client, media):
    response = probe(client, line)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert not list(media.rglob("*probe*/*"))  # the probe object is deleted again


@pytest.mark.django_db
def test_unknown_or_disconnected_tokens_answer_404(api, line, client):
    assert_error(client.post("/webhooks/telephony/" + "x" * 32 + "/failover-probe"), 404, "NOT_FOUND")
    api.delete(f"/dialer/connections/{line['id']}")
    assert_error(probe(client, line), 404, "NOT_FOUND")


@pytest.mark.django_db
def test_storage_down_answers_503_r2(line, client, settings, tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the bucket should be")
    settings.STORAGES = {
        **settings.STORAGES,
        "dialer-test": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(blocked / "media")},
        },
    }
    response = probe(client, line)
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "dependency": "r2"}


@pytest.mark.django_db(transaction=True)
def test_database_down_answers_503_database(client):
    owner = make_member()
    line = connect(owner.api_client(), TelnyxAccount())
    with database.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = database.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    with psycopg.connect(**params, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    try:
        response = probe(client, line)
    finally:
        database.close()  # the killed connection; the next query opens a new one
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "dependency": "database"}
    # The database answers again: so does the probe.
    assert probe(client, line).json() == {"status": "ok"}
    assert DialerConnection.objects.for_org(owner.organization).count() == 1
