"""GET /pms-inbox/conversations: the practice's conversations as the clinical workspace sees them."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.conversations.public import ChannelConnection, Conversation
from tests.factories import PatientFactory
from tests.helpers import assert_error

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


def _connection(org, token, address):
    return ChannelConnection.objects.create(
        organization=org,
        kind="sms",
        name="SMS",
        address=address,
        routing_token=token,
        credentials_encrypted="-",
        status="active",
    )


def _conversation(org, connection, patient, minutes, **fields):
    return Conversation.objects.create(
        organization=org,
        patient=patient,
        connection=connection,
        channel=connection.kind,
        contact_address=patient.phone_mobile,
        last_message_at=T0 + timedelta(minutes=minutes),
        **fields,
    )


@pytest.fixture
def conversations(org, outsider, dentist):
    connection = _connection(org, "route-ours", "+390200000001")
    patients = [PatientFactory(organization=org) for _ in range(3)]
    rows = [
        _conversation(org, connection, patients[0], 1),
        _conversation(org, connection, patients[1], 3, status="closed"),
        _conversation(org, connection, patients[2], 2, assignee=dentist.user),
    ]
    theirs = _connection(outsider.organization, "route-theirs", "+390200000002")
    _conversation(outsider.organization, theirs, PatientFactory(organization=outsider.organization), 5)
    return rows


def test_latest_first_with_cursor_paging(front_desk, conversations):
    client = front_desk.session_client()
    first = client.get("/pms-inbox/conversations?limit=2")
    assert first.status_code == 200, first.content
    page = first.json()
    assert [c["id"] for c in page["items"]] == [str(conversations[1].id), str(conversations[2].id)]
    assert page["items"][0]["patient"]["firstName"] == conversations[1].patient.first_name
    assert page["nextCursor"]
    rest = client.get(f"/pms-inbox/conversations?limit=2&cursor={page['nextCursor']}").json()
    assert [c["id"] for c in rest["items"]] == [str(conversations[0].id)]
    assert rest["nextCursor"] is None


def test_filters(dentist, conversations):
    client = dentist.session_client()

    def ids(query):
        response = client.get(f"/pms-inbox/conversations?{query}")
        assert response.status_code == 200, response.content
        return [c["id"] for c in response.json()["items"]]

    assert ids("status=closed") == [str(conversations[1].id)]
    assert ids(f"assignee={dentist.user.id}") == [str(conversations[2].id)]
    assert ids("assignee=none") == [str(conversations[1].id), str(conversations[0].id)]
    assert ids(f"patientId={conversations[0].patient_id}") == [str(conversations[0].id)]
    assert ids("channel=email") == []


def test_bad_input_and_other_practices(owner, outsider, conversations):
    client = owner.session_client()
    assert_error(client.get("/pms-inbox/conversations?status=lost"), 400, "VALIDATION_ERROR")
    assert_error(client.get("/pms-inbox/conversations?limit=500"), 400, "VALIDATION_ERROR")
    assert_error(client.get("/pms-inbox/conversations?cursor=garbage"), 400, "VALIDATION_ERROR")
    assert_error(client.get("/pms-inbox/conversations?assignee=someone"), 400, "VALIDATION_ERROR")
    their_patient = PatientFactory(organization=outsider.organization)
    body = assert_error(client.get(f"/pms-inbox/conversations?patientId={their_patient.id}"), 400, "VALIDATION_ERROR")
    assert "patientId" in body["details"]["fields"]
    assert len(client.get("/pms-inbox/conversations").json()["items"]) == 3


def test_roles_without_pms_diary(member_factory, org):
    analyst = member_factory(role="analyst", organization=org)
    assert_error(analyst.session_client().get("/pms-inbox/conversations"), 403, "PERMISSION_DENIED")
