"""Issue 26 §3: the edges of a public post — too many fields or files, malformed multipart, bytes that are not
UTF-8 — answer 400 in the envelope and store nothing (before: 500 tracebacks, or a lead stored altered)."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.capture.conftest import FORM_TYPE, capture_path, counts, public_post, submissions_of
from tests.helpers import assert_error

LEAD = {"first_name": "Maria", "email": "maria@example.com"}


def test_more_than_1000_form_fields_is_400_too_many_fields(owner, create_form):
    form = create_form()
    before = counts(owner.organization)
    body = "&".join(f"f{i}=x" for i in range(1001))

    response = Client().post(capture_path(form), body, content_type=FORM_TYPE)

    body = assert_error(response, 400, "TOO_MANY_FIELDS")
    assert body["details"] == {"maxFields": 1000}
    assert counts(owner.organization) == before


def test_more_than_1000_query_parameters_is_400_on_public_routes(owner, create_form):
    query = "&".join(f"p{i}=1" for i in range(1001))
    form = create_form()
    before = counts(owner.organization)

    assert_error(Client().get(f"/health?{query}"), 400, "TOO_MANY_FIELDS")
    assert_error(public_post(form, LEAD, query=query), 400, "TOO_MANY_FIELDS")
    assert_error(Client().get(f"/patients?{query}"), 400, "TOO_MANY_FIELDS")
    assert counts(owner.organization) == before


def test_more_than_100_files_is_400_too_many_files(owner, create_form, media_root):
    form = create_form()
    before = counts(owner.organization)
    files = {f"file{i}": SimpleUploadedFile(f"f{i}.txt", b"x", content_type="text/plain") for i in range(101)}

    response = Client().post(capture_path(form), LEAD | files)

    assert_error(response, 400, "TOO_MANY_FILES")
    assert counts(owner.organization) == before


def test_malformed_multipart_is_400_in_the_envelope(owner, create_form):
    form = create_form()
    before = counts(owner.organization)
    body = b'--xx\r\nContent-Disposition: form-data; name="first_name"\r\n\r\nMaria\r\n--yy'

    response = Client().post(capture_path(form), body, content_type="multipart/form-data")  # no boundary

    assert_error(response, 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before


def test_invalid_utf8_in_a_urlencoded_post_is_refused_not_stored_altered(owner, create_form):
    form = create_form()
    before = counts(owner.organization)
    for raw in (b"first_name=Mar%FFa&email=maria%40example.com", b"first_name=Mar\xe9a&email=maria%40example.com"):
        response = Client().post(capture_path(form), raw, content_type=FORM_TYPE)

        body = assert_error(response, 400, "VALIDATION_ERROR")
        assert body["details"]["fields"] == {"body": ["is not valid UTF-8"]}
    assert counts(owner.organization) == before


def test_valid_utf8_in_a_urlencoded_post_is_kept_exactly(owner, create_form):
    form = create_form()

    response = Client().post(
        capture_path(form), "first_name=Mar%C3%ADa+Jos%C3%A9&email=maria%40example.com", content_type=FORM_TYPE
    )

    assert response.status_code == 201, response.content
    assert submissions_of(owner.organization, form).get().fields["first_name"] == "María José"


def test_invalid_utf8_in_a_multipart_field_is_refused(owner, create_form):
    form = create_form()
    before = counts(owner.organization)
    boundary = "xx"
    body = (
        b'--xx\r\nContent-Disposition: form-data; name="first_name"\r\n\r\nMar\xffa\r\n'
        b'--xx\r\nContent-Disposition: form-data; name="email"\r\n\r\nmaria@example.com\r\n--xx--\r\n'
    )

    response = Client().post(capture_path(form), body, content_type=f"multipart/form-data; boundary={boundary}")

    assert_error(response, 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before


def test_invalid_utf8_in_the_query_of_a_capture_is_refused(owner, create_form):
    form = create_form()
    before = counts(owner.organization)

    response = public_post(form, LEAD, query="utm_source=ads%FF")

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"query": ["is not valid UTF-8"]}
    assert counts(owner.organization) == before
