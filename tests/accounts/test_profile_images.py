"""Avatar (/user/avatar) and practice logo (/organization/logo): type from the bytes, 5 MB, storage through Django's
storage API, ETag and 304, replacement and removal of files, roles and tenant isolation."""

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from apps.accounts.models import Organization, StoredImage, User
from apps.accounts.services import media
from tests.factories import MembershipFactory
from tests.helpers import assert_error

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x01" * 64
GIF = b"GIF89a\x01\x00\x01\x00" + b"\x02" * 64
WEBP = b"RIFF\x50\x00\x00\x00WEBPVP8 " + b"\x03" * 64
TEXT = b"hello, this is not a picture at all\n"
FIVE_MB = 5 * 1024 * 1024
AVATAR_TYPES = ["image/jpeg", "image/png", "image/webp", "image/gif"]
LOGO_TYPES = ["image/jpeg", "image/png", "image/webp"]


@pytest.fixture(autouse=True)
def media_dir(settings, tmp_path):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": tmp_path}},
    }
    return tmp_path


def stored_files(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def multipart(**parts) -> bytes:
    return encode_multipart(BOUNDARY, parts)


def put_raw(client, path, data, content_type="application/octet-stream", **kwargs):
    return client.put(path, data, content_type=content_type, **kwargs)


def put_file(client, path, data, name="picture.png", content_type="image/png"):
    upload = SimpleUploadedFile(name, data, content_type=content_type)
    return client.put(path, multipart(file=upload), content_type=MULTIPART_CONTENT)


def etag_of(data: bytes) -> str:
    return f'"{hashlib.sha256(data).hexdigest()}"'


# --- who may call -------------------------------------------------------------------------------------------


def call(client, method, path):
    if method == "put":
        return put_raw(client, path, PNG, content_type="image/png")
    return getattr(client, method)(path)


ROUTES = [
    ("get", "/user/avatar"),
    ("put", "/user/avatar"),
    ("delete", "/user/avatar"),
    ("get", "/organization/logo"),
    ("put", "/organization/logo"),
    ("delete", "/organization/logo"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_api_keys_are_refused(owner, media_dir, method, path):
    response = call(owner.api_client(), method, path)

    assert_error(response, 403, "BROWSER_SESSION_REQUIRED")
    assert StoredImage.objects.count() == 0
    assert stored_files(media_dir) == []


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_without_credentials_401(db, client, method, path):
    response = call(client, method, path)

    assert_error(response, 401, "UNAUTHENTICATED")


def test_put_needs_the_csrf_token(owner, media_dir):
    client = owner.session_client()
    del client.defaults["HTTP_X_CSRFTOKEN"]

    response = put_raw(client, "/user/avatar", PNG)

    assert_error(response, 403, "CSRF_FAILED")
    assert stored_files(media_dir) == []


# --- avatar -------------------------------------------------------------------------------------------------


def test_no_avatar_is_404(owner):
    assert_error(owner.session_client().get("/user/avatar"), 404, "NOT_FOUND")


def test_raw_upload_then_get(owner, media_dir):
    client = owner.session_client()

    response = put_raw(client, "/user/avatar", PNG, content_type="image/png")

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"contentType", "size", "etag", "createdAt"}
    assert body["contentType"] == "image/png"
    assert body["size"] == len(PNG)
    assert body["etag"] == etag_of(PNG)
    got = client.get("/user/avatar")
    assert got.status_code == 200
    assert got.content == PNG
    assert got["Content-Type"] == "image/png"
    assert got["ETag"] == etag_of(PNG)
    assert "private" in got["Cache-Control"]
    assert got["X-Content-Type-Options"] == "nosniff"
    digest = hashlib.sha256(PNG).hexdigest()
    assert stored_files(media_dir) == [f"avatars/{owner.user.id}/{digest}.png"]


def test_multipart_png_named_jpg_is_stored_as_png(owner, media_dir):
    client = owner.session_client()

    response = put_file(client, "/user/avatar", PNG, name="holiday.jpg", content_type="image/jpeg")

    assert response.status_code == 200, response.content
    assert response.json()["contentType"] == "image/png"
    assert client.get("/user/avatar")["Content-Type"] == "image/png"
    [name] = stored_files(media_dir)
    assert "holiday" not in name and name.endswith(f"{hashlib.sha256(PNG).hexdigest()}.png")


@pytest.mark.parametrize(
    ("data", "content_type"), [(JPEG, "image/jpeg"), (PNG, "image/png"), (WEBP, "image/webp"), (GIF, "image/gif")]
)
def test_every_avatar_type_is_accepted(owner, data, content_type):
    client = owner.session_client()

    response = put_raw(client, "/user/avatar", data)

    assert response.status_code == 200, response.content
    assert response.json()["contentType"] == content_type
    assert client.get("/user/avatar").content == data


def test_text_named_png_is_refused(owner, media_dir):
    client = owner.session_client()

    response = put_file(client, "/user/avatar", TEXT, name="avatar.png", content_type="image/png")

    body = assert_error(response, 400, "UNSUPPORTED_IMAGE_TYPE")
    assert body["details"]["allowedTypes"] == AVATAR_TYPES
    assert "JPEG, PNG, WebP or GIF" in body["message"]
    assert stored_files(media_dir) == []
    assert StoredImage.objects.count() == 0


def test_raw_text_with_an_image_content_type_is_refused(owner, media_dir):
    response = put_raw(owner.session_client(), "/user/avatar", TEXT, content_type="image/png")

    assert_error(response, 400, "UNSUPPORTED_IMAGE_TYPE")
    assert stored_files(media_dir) == []


def test_exactly_five_mb_is_accepted(owner):
    data = PNG + b"\x00" * (FIVE_MB - len(PNG))

    response = put_raw(owner.session_client(), "/user/avatar", data)

    assert response.status_code == 200, response.content
    assert response.json()["size"] == FIVE_MB


@pytest.mark.parametrize("extra", [1, 64 * 1024, 2 * 1024 * 1024])
def test_raw_over_five_mb_is_413(owner, media_dir, extra):
    data = PNG + b"\x00" * (FIVE_MB - len(PNG) + extra)

    response = put_raw(owner.session_client(), "/user/avatar", data)

    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert stored_files(media_dir) == []
    assert StoredImage.objects.count() == 0


def test_multipart_file_over_five_mb_is_413(owner, media_dir):
    data = PNG + b"\x00" * (FIVE_MB - len(PNG) + 1)

    response = put_file(owner.session_client(), "/user/avatar", data)

    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert stored_files(media_dir) == []


def test_multipart_rules(owner, media_dir):
    client = owner.session_client()
    picture = SimpleUploadedFile("a.png", PNG)

    unknown = client.put("/user/avatar", multipart(file=picture, caption="me"), content_type=MULTIPART_CONTENT)
    missing = client.put("/user/avatar", multipart(), content_type=MULTIPART_CONTENT)
    two = client.put(
        "/user/avatar", multipart(file=[picture, SimpleUploadedFile("b.png", PNG)]), content_type=MULTIPART_CONTENT
    )
    not_a_file = client.put("/user/avatar", multipart(file="text"), content_type=MULTIPART_CONTENT)
    broken = client.put("/user/avatar", b"garbage", content_type="multipart/form-data")

    assert assert_error(unknown, 400, "VALIDATION_ERROR")["details"]["fields"] == {
        "caption": ["is not a field you can send here"]
    }
    for response in (missing, two):
        assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"] == {
            "file": ["exactly one image file is required"]
        }
    assert_error(not_a_file, 400, "VALIDATION_ERROR")
    assert_error(broken, 400, "VALIDATION_ERROR")
    assert stored_files(media_dir) == []


def test_empty_body_is_refused(owner):
    response = put_raw(owner.session_client(), "/user/avatar", b"")

    assert assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]["body"]


def test_etag_and_304(owner):
    client = owner.session_client()
    put_raw(client, "/user/avatar", JPEG)
    etag = etag_of(JPEG)

    for header in (etag, f"W/{etag}", f'"other", {etag}', f'W/"other", W/{etag}', "*"):
        response = client.get("/user/avatar", headers={"If-None-Match": header})
        assert response.status_code == 304, header
        assert response.content == b""
        assert response["ETag"] == etag
        assert "private" in response["Cache-Control"]
    for header in ('"other"', etag[:-2] + '"', "garbage"):
        response = client.get("/user/avatar", headers={"If-None-Match": header})
        assert response.status_code == 200, header
        assert response.content == JPEG


def test_get_answers_bytes_whatever_accept_says(owner):
    client = owner.session_client()
    put_raw(client, "/user/avatar", WEBP)

    response = client.get("/user/avatar", headers={"Accept": "image/avif,image/webp"})

    assert response.status_code == 200
    assert response.content == WEBP


def test_replacing_deletes_the_old_file(owner, media_dir, django_capture_on_commit_callbacks):
    client = owner.session_client()
    put_raw(client, "/user/avatar", PNG)
    [old_name] = stored_files(media_dir)
    old_id = User.objects.get(pk=owner.user.pk).avatar_id

    with django_capture_on_commit_callbacks(execute=True):
        response = put_raw(client, "/user/avatar", JPEG)

    assert response.status_code == 200, response.content
    [new_name] = stored_files(media_dir)
    assert new_name != old_name and new_name.endswith(".jpg")
    assert not StoredImage.objects.filter(id=old_id).exists()
    assert StoredImage.objects.count() == 1
    assert client.get("/user/avatar").content == JPEG


def test_uploading_the_same_picture_again_changes_nothing(owner, media_dir, django_capture_on_commit_callbacks):
    client = owner.session_client()
    first = put_raw(client, "/user/avatar", PNG).json()

    with django_capture_on_commit_callbacks(execute=True):
        again = put_raw(client, "/user/avatar", PNG)

    assert again.json() == first
    assert len(stored_files(media_dir)) == 1
    assert StoredImage.objects.count() == 1


def test_delete_removes_the_avatar(owner, media_dir, django_capture_on_commit_callbacks):
    client = owner.session_client()
    put_raw(client, "/user/avatar", GIF)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.delete("/user/avatar")

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True}
    assert stored_files(media_dir) == []
    assert StoredImage.objects.count() == 0
    assert User.objects.get(pk=owner.user.pk).avatar_id is None
    assert_error(client.get("/user/avatar"), 404, "NOT_FOUND")
    assert_error(client.delete("/user/avatar"), 404, "NOT_FOUND")


def test_avatars_are_per_person(owner, member_factory):
    colleague = member_factory(role="manager", organization=owner.organization)
    put_raw(owner.session_client(), "/user/avatar", PNG)

    assert_error(colleague.session_client().get("/user/avatar"), 404, "NOT_FOUND")


def test_a_file_missing_from_storage_is_404_not_500(owner, media_dir):
    client = owner.session_client()
    put_raw(client, "/user/avatar", PNG)
    for path in media_dir.rglob("*.png"):
        path.unlink()

    assert_error(client.get("/user/avatar"), 404, "NOT_FOUND")


def test_a_person_without_a_practice_has_an_avatar(owner):
    owner.membership.delete()
    client = owner.session_client()

    assert put_raw(client, "/user/avatar", PNG).status_code == 200
    assert client.get("/user/avatar").content == PNG


# --- logo ---------------------------------------------------------------------------------------------------


def test_logo_upload_then_get(owner, media_dir):
    client = owner.session_client()

    response = put_file(client, "/organization/logo", WEBP, name="logo.png")

    assert response.status_code == 200, response.content
    assert response.json()["contentType"] == "image/webp"
    got = client.get("/organization/logo")
    assert got.content == WEBP
    assert got["Content-Type"] == "image/webp"
    assert got["ETag"] == etag_of(WEBP)
    assert "X-Organization-ID" in got["Vary"]
    digest = hashlib.sha256(WEBP).hexdigest()
    assert stored_files(media_dir) == [f"logos/{owner.organization.id}/{digest}.webp"]
    assert client.get("/organization/logo", headers={"If-None-Match": etag_of(WEBP)}).status_code == 304


def test_gif_logo_is_refused(owner, media_dir):
    response = put_raw(owner.session_client(), "/organization/logo", GIF, content_type="image/gif")

    body = assert_error(response, 400, "UNSUPPORTED_IMAGE_TYPE")
    assert body["details"]["allowedTypes"] == LOGO_TYPES
    assert "JPEG, PNG or WebP" in body["message"]
    assert stored_files(media_dir) == []
    assert Organization.objects.get(pk=owner.organization.pk).logo_id is None


def test_logo_over_five_mb_is_413(owner, media_dir):
    response = put_raw(owner.session_client(), "/organization/logo", PNG + b"\x00" * FIVE_MB)

    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert stored_files(media_dir) == []


def test_logo_replace_and_delete(owner, media_dir, django_capture_on_commit_callbacks):
    client = owner.session_client()
    put_raw(client, "/organization/logo", PNG)

    with django_capture_on_commit_callbacks(execute=True):
        put_raw(client, "/organization/logo", JPEG)
    assert [name.rsplit(".", 1)[1] for name in stored_files(media_dir)] == ["jpg"]

    with django_capture_on_commit_callbacks(execute=True):
        response = client.delete("/organization/logo")
    assert response.json() == {"ok": True}
    assert stored_files(media_dir) == []
    assert StoredImage.objects.count() == 0
    assert_error(client.get("/organization/logo"), 404, "NOT_FOUND")


@pytest.mark.parametrize("role", ["manager"])
def test_settings_updaters_may_change_the_logo(member_factory, role):
    member = member_factory(role=role)

    assert put_raw(member.session_client(), "/organization/logo", PNG).status_code == 200


@pytest.mark.parametrize("role", ["front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse"])
def test_other_roles_read_but_cannot_change_the_logo(owner, member_factory, media_dir, role):
    put_raw(owner.session_client(), "/organization/logo", PNG)
    member = member_factory(role=role, organization=owner.organization)
    client = member.session_client()
    before = stored_files(media_dir)

    assert client.get("/organization/logo").content == PNG
    put = put_raw(client, "/organization/logo", JPEG)
    delete = client.delete("/organization/logo")

    assert assert_error(put, 403, "PERMISSION_DENIED")["details"] == {"permission": "settings:update"}
    assert_error(delete, 403, "PERMISSION_DENIED")
    assert stored_files(media_dir) == before
    assert client.get("/organization/logo").content == PNG


def test_another_practice_never_sees_or_changes_the_logo(owner, outsider, media_dir):
    put_raw(owner.session_client(), "/organization/logo", PNG)
    before = stored_files(media_dir)
    client = outsider.session_client()
    header = {"X-Organization-ID": str(owner.organization.id)}

    assert_error(client.get("/organization/logo"), 404, "NOT_FOUND")
    assert_error(client.get("/organization/logo", headers=header), 403, "ORGANIZATION_FORBIDDEN")
    assert_error(put_raw(client, "/organization/logo", JPEG, headers=header), 403, "ORGANIZATION_FORBIDDEN")
    assert_error(client.delete("/organization/logo", headers=header), 403, "ORGANIZATION_FORBIDDEN")
    assert_error(client.delete("/organization/logo"), 404, "NOT_FOUND")
    assert stored_files(media_dir) == before
    assert owner.session_client().get("/organization/logo").content == PNG

    put_raw(client, "/organization/logo", JPEG)  # the outsider's own practice
    assert owner.session_client().get("/organization/logo").content == PNG
    assert client.get("/organization/logo").content == JPEG


def test_member_of_two_practices_reads_the_selected_ones_logo(owner, outsider):
    put_raw(owner.session_client(), "/organization/logo", PNG)
    put_raw(outsider.session_client(), "/organization/logo", JPEG)
    MembershipFactory(organization=outsider.organization, user=owner.user, role="analyst")
    client = owner.session_client()

    mine = client.get("/organization/logo", headers={"X-Organization-ID": str(owner.organization.id)})
    theirs = client.get("/organization/logo", headers={"X-Organization-ID": str(outsider.organization.id)})
    refused = put_raw(client, "/organization/logo", WEBP, headers={"X-Organization-ID": str(outsider.organization.id)})

    assert mine.content == PNG
    assert theirs.content == JPEG
    assert_error(refused, 403, "PERMISSION_DENIED")


# --- the checks themselves ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (JPEG, "image/jpeg"),
        (PNG, "image/png"),
        (GIF, "image/gif"),
        (b"GIF87a" + b"\x00" * 8, "image/gif"),
        (WEBP, "image/webp"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", None),
        (b"\x89PNG", None),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
        (b"", None),
    ],
)
def test_sniffing(data, expected):
    assert media.sniff_image_type(data) == expected
