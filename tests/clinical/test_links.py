"""POST/GET/DELETE /settings/practitioners/{id}/user-link: a practitioner profile tied to a member account (a practice
setting: settings:update to change, settings:read to read; not a clinical route, so API keys may use it)."""

from apps.clinical.models import PractitionerLink
from apps.clinical.public import practitioner_of_user
from tests.clinical.conftest import post_json
from tests.factories import PractitionerFactory
from tests.helpers import assert_error


def _path(practitioner):
    return f"/settings/practitioners/{practitioner.id}/user-link"


def test_link_read_and_unlink(owner, dentist, practitioner):
    client = owner.session_client()
    assert client.get(_path(practitioner)).json() == {"practitionerId": str(practitioner.id), "user": None}

    response = post_json(client, _path(practitioner), {"userId": str(dentist.user.id)})

    assert response.status_code == 200, response.content
    assert response.json()["user"] == {
        "id": str(dentist.user.id),
        "name": dentist.user.name,
        "email": dentist.user.email,
    }
    assert practitioner_of_user(owner.organization, dentist.user) == practitioner
    assert client.get(_path(practitioner)).json()["user"]["id"] == str(dentist.user.id)
    # The same pair again is harmless.
    assert post_json(client, _path(practitioner), {"userId": str(dentist.user.id)}).status_code == 200

    assert client.delete(_path(practitioner)).status_code == 204
    assert practitioner_of_user(owner.organization, dentist.user) is None
    assert_error(client.delete(_path(practitioner)), 404, "NOT_FOUND")


def test_one_member_per_practitioner_and_one_practitioner_per_member(owner, dentist, front_desk, practitioner, org):
    api = owner.api_client()  # a settings route: machine credentials are fine
    assert post_json(api, _path(practitioner), {"userId": str(dentist.user.id)}).status_code == 200

    taken = post_json(api, _path(practitioner), {"userId": str(front_desk.user.id)})
    assert assert_error(taken, 409, "PRACTITIONER_ALREADY_LINKED")["details"] == {"userId": str(dentist.user.id)}
    other = PractitionerFactory(organization=org)
    assert_error(post_json(api, _path(other), {"userId": str(dentist.user.id)}), 409, "MEMBER_ALREADY_LINKED")
    assert PractitionerLink.objects.for_org(org).count() == 1


def test_bad_input_and_other_practices(owner, outsider, practitioner, org):
    api = owner.api_client()
    body = assert_error(post_json(api, _path(practitioner), {}), 400, "VALIDATION_ERROR")
    assert "userId" in body["details"]["fields"]
    assert_error(post_json(api, _path(practitioner), {"userId": "nope"}), 400, "VALIDATION_ERROR")
    unknown_key = post_json(api, _path(practitioner), {"userId": str(owner.user.id), "role": "x"})
    assert_error(unknown_key, 400, "VALIDATION_ERROR")
    # Another practice's member is not a member of this one: 400.
    outsider_member = assert_error(
        post_json(api, _path(practitioner), {"userId": str(outsider.user.id)}), 400, "VALIDATION_ERROR"
    )
    assert outsider_member["details"]["fields"] == {"userId": ["is not a member of this practice"]}
    # Another practice's practitioner: 404, nothing linked.
    theirs = PractitionerFactory(organization=outsider.organization)
    assert_error(post_json(api, _path(theirs), {"userId": str(owner.user.id)}), 404, "NOT_FOUND")
    assert_error(api.get(_path(theirs)), 404, "NOT_FOUND")
    assert_error(api.delete(_path(theirs)), 404, "NOT_FOUND")
    assert not PractitionerLink.objects.unscoped().exists()


def test_roles_without_settings_update_cannot_link(front_desk, dentist, practitioner):
    client = front_desk.session_client()
    assert client.get(_path(practitioner)).status_code == 200  # settings:read
    assert_error(post_json(client, _path(practitioner), {"userId": str(dentist.user.id)}), 403, "PERMISSION_DENIED")
    assert_error(client.delete(_path(practitioner)), 403, "PERMISSION_DENIED")
    assert_error(dentist.session_client().get(_path(practitioner)), 403, "PERMISSION_DENIED")
