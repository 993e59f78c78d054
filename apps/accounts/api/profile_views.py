"""The signed-in person's profile: /user/me, /user/avatar, /organization/logo and /user/sessions.

All browser session only (machine credentials get 403 BROWSER_SESSION_REQUIRED). Pictures are uploaded with PUT as
multipart/form-data (field `file`) or as the raw image body, and served back with an ETag for conditional GETs.
"""

from django.contrib.auth import logout
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.http import HttpResponse, HttpResponseNotModified
from django.http.multipartparser import MultiPartParserError
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.accounts.api import profile_serializers as ps
from apps.accounts.api import serializers as s
from apps.accounts.models import StoredImage, User
from apps.accounts.services import email_verification, media, profile
from apps.accounts.services import sessions as user_sessions
from apps.core.errors import NotFound, PayloadTooLarge, ValidationFailed
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.permissions import ACCOUNT_AREA, AUTHENTICATED
from apps.core.views import BaseApiView

# Room for the multipart envelope (boundaries, part headers) around a picture of the largest size.
MULTIPART_ALLOWANCE = 64 * 1024
CACHE_CONTROL = "private, no-cache"


class AccountView(BaseApiView):
    """The caller's own account: a browser session is needed (/user refuses machine credentials before routing,
    apps.core.middleware.BrowserSessionSurfaceMiddleware), a practice is not."""

    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA

    def serializer_context(self) -> dict:
        return {"request": self.request, "view": self}


# --- /user/me -----------------------------------------------------------------------------------------------


class UserMeView(AccountView):
    @extend_schema(tags=["user"], responses={200: s.UserProfileOutput}, summary="Your profile")
    def get(self, request):
        return Response(s.UserProfileOutput(request.user).data)

    @extend_schema(
        tags=["user"],
        request=ps.UserUpdateInput,
        responses={200: s.UserProfileOutput},
        summary="Change your profile (name, your own mobile number); the e-mail address is not changed here",
        description="Browser session only. Changes name and phoneMobile (international form, stored as E.164; "
        "where your campaign test sends by SMS and WhatsApp go): email and unknown fields answer 400 "
        "VALIDATION_ERROR naming them.",
    )
    def patch(self, request):
        data = self.parse_body(ps.UserUpdateInput)
        user = profile.user_profile_update(user=request.user, **data.validated_data)
        return Response(s.UserProfileOutput(user).data)


class EmailChangeView(AccountView):
    @extend_schema(
        tags=["user"],
        request=s.EmailChangeInput,
        responses={200: s.StatusOutput},
        summary="Change your e-mail address (by a link sent to the new one)",
        description="Browser session only. Sends a link to newEmail; the sign-in address changes only when it is "
        "opened (GET /auth/verify-email), and it is verified then. Answers 200 {status: true} whether or not the "
        "new address has an account (that is said only when the link is opened: 409 EMAIL_TAKEN). 3 links an hour "
        "per address.",
    )
    def post(self, request):
        data = self.parse_body(s.EmailChangeInput).validated_data
        email_verification.email_change_request(user=request.user, new_email=data["new_email"])
        return Response({"status": True})


# --- pictures -----------------------------------------------------------------------------------------------


def etag_matches(header: str, etag: str) -> bool:
    """If-None-Match uses the weak comparison: W/"x" matches "x"; a list matches when any member does."""
    if not header:
        return False
    tags = parse_etags(header)
    return tags == ["*"] or any(tag.removeprefix("W/") == etag for tag in tags)


def _multipart_file(django_request, rules: media.ImageRules) -> bytes:
    try:
        fields, files = django_request.parse_file_upload(django_request.META, django_request)
    except RequestDataTooBig:
        raise PayloadTooLarge(details={"maxBytes": rules.max_bytes}) from None
    except (MultiPartParserError, SuspiciousOperation) as exc:
        raise ValidationFailed.for_field("body", f"is not a valid multipart/form-data body ({exc})") from None
    try:
        unknown = sorted((set(fields) | set(files)) - {"file"})
        if unknown:
            raise ValidationFailed(
                f"{unknown[0]}: is not a field you can send here",
                details={"fields": {name: ["is not a field you can send here"] for name in unknown}},
            )
        uploads = files.getlist("file")
        if len(uploads) != 1:
            raise ValidationFailed.for_field("file", "exactly one image file is required")
        return uploads[0].read(rules.max_bytes + 1)  # the size rule then answers 413 past the limit
    finally:
        for upload in files.values():
            upload.close()


def read_upload(request, rules: media.ImageRules) -> bytes:
    """The picture of a PUT: the `file` part of a multipart/form-data body, or else the raw body."""
    django_request = request._request
    if (django_request.content_type or "").lower() == "multipart/form-data":
        return _multipart_file(django_request, rules)
    data = django_request.body
    if not data:
        raise ValidationFailed.for_field("body", "an image is required (a raw image body or the multipart field file)")
    return data


_IMAGE_CONTENT = {media_type: OpenApiTypes.BINARY for media_type in (media.JPEG, media.PNG, media.WEBP, media.GIF)}


def _get_schema(summary: str, types: tuple[str, ...]) -> dict:
    return {
        "summary": summary,
        "description": "Browser session only. The bytes with their Content-Type, ETag (the quoted SHA-256), "
        "Cache-Control: private, no-cache, X-Content-Type-Options: nosniff and a sandboxing CSP; a matching "
        'If-None-Match (also W/"…", lists and *) answers 304. Pictures are served only through this route, never by '
        "a public URL; none set answers 404.",
        "parameters": [
            OpenApiParameter(
                "If-None-Match",
                str,
                OpenApiParameter.HEADER,
                description="The ETag of the copy you hold; an unchanged picture answers 304 with no body.",
            )
        ],
        "responses": {
            **{
                (200, media_type): OpenApiResponse(
                    OpenApiTypes.BINARY,
                    description="The picture's bytes, with ETag (its quoted SHA-256) and Cache-Control: private.",
                )
                for media_type in types
            },
            304: OpenApiResponse(description="Not modified: the If-None-Match ETag is current."),
        },
    }


def _put_schema(summary: str, types: tuple[str, ...], labels: str) -> dict:
    return {
        "summary": summary,
        "description": f"{labels} up to 5 MB, sent as multipart/form-data (field `file`) or as the raw image "
        "body. The type is read from the bytes (magic numbers), never from the file name or Content-Type: "
        "anything else answers 400 UNSUPPORTED_IMAGE_TYPE with details.allowedTypes; over 5 MB answers 413.",
        "request": {
            "multipart/form-data": ps.ImageUploadInput,
            **{media_type: OpenApiTypes.BINARY for media_type in types},
            "application/octet-stream": OpenApiTypes.BINARY,
        },
        "responses": {200: ps.StoredImageOutput},
    }


class ImageView(BaseApiView):
    """GET/PUT/DELETE of one picture. Subclasses say whose picture it is."""

    max_body_bytes = media.MAX_IMAGE_BYTES + MULTIPART_ALLOWANCE
    rules: media.ImageRules
    vary: tuple[str, ...] = ()

    def perform_content_negotiation(self, request, force=False):
        # The GET answers image bytes whatever Accept says (an <img> asks for image/*); errors stay JSON.
        return super().perform_content_negotiation(request, force=True)

    def serializer_context(self) -> dict:
        return {"request": self.request, "view": self}

    def picture_response(self, request, image: StoredImage | None, missing: str) -> HttpResponse:
        if image is None:
            raise NotFound(missing)
        etag = media.quoted_etag(image)
        if etag_matches(request.headers.get("If-None-Match", ""), etag):
            response = HttpResponseNotModified()
        else:
            response = HttpResponse(media.image_bytes(image), content_type=image.content_type)
            response["Content-Security-Policy"] = "default-src 'none'; sandbox"
            response["X-Content-Type-Options"] = "nosniff"
        response["ETag"] = etag
        response["Cache-Control"] = CACHE_CONTROL
        if self.vary:
            patch_vary_headers(response, self.vary)
        return response


class UserAvatarView(ImageView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    rules = media.AVATAR

    @extend_schema(tags=["user"], **_get_schema("Your avatar (conditional GET with If-None-Match)", media.AVATAR.types))
    def get(self, request):
        image = User.objects.select_related("avatar").get(pk=request.user.pk).avatar
        return self.picture_response(request, image, "You have no avatar.")

    @extend_schema(tags=["user"], **_put_schema("Set your avatar", media.AVATAR.types, "JPEG, PNG, WebP or GIF"))
    def put(self, request):
        image = media.avatar_replace(user=request.user, data=read_upload(request, self.rules))
        return Response(ps.StoredImageOutput(image).data)

    @extend_schema(
        tags=["user"],
        request=None,
        responses={200: s.OkOutput},
        summary="Remove your avatar",
        description="Browser session only. The stored file is deleted once the change commits.",
    )
    def delete(self, request):
        media.avatar_remove(user=request.user)
        return Response({"ok": True})


class OrganizationLogoView(ImageView):
    permission = {"GET": "member:read", "PUT": "settings:update", "DELETE": "settings:update"}
    scope_area = "settings"
    rules = media.LOGO
    vary = ("X-Organization-ID",)

    @extend_schema(
        tags=["organization"],
        **_get_schema("The active practice's logo (conditional GET with If-None-Match)", media.LOGO.types),
    )
    def get(self, request):
        return self.picture_response(request, self.organization.logo, "The practice has no logo.")

    @extend_schema(
        tags=["organization"], **_put_schema("Set the active practice's logo", media.LOGO.types, "JPEG, PNG or WebP")
    )
    def put(self, request):
        image = media.logo_replace(organization=self.organization, data=read_upload(request, self.rules))
        return Response(ps.StoredImageOutput(image).data)

    @extend_schema(
        tags=["organization"],
        request=None,
        responses={200: s.OkOutput},
        summary="Remove the active practice's logo",
        description="Permission settings:update; browser session only. The stored file is deleted once the change "
        "commits.",
    )
    def delete(self, request):
        media.logo_remove(organization=self.organization)
        return Response({"ok": True})


# --- /user/sessions -----------------------------------------------------------------------------------------


class UserSessionListView(AccountView):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        tags=["user"],
        responses={200: ps.UserSessionOutput(many=True)},
        summary="Your signed-in browser sessions, newest first (expired ones are left out)",
    )
    def get(self, request):
        current = user_sessions.current_digest(request._request) or ""
        queryset = user_sessions.session_list(user=request.user).annotate(
            current=ExpressionWrapper(Q(key_digest=current), output_field=BooleanField())
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return Response(paginator.get_paginated_response_data(ps.UserSessionOutput(page, many=True).data))


class UserSessionView(AccountView):
    @extend_schema(
        tags=["user"],
        request=None,
        responses={200: s.OkOutput},
        summary="End one of your sessions (its cookie stops working at once; your own signs you out)",
        description="Browser session only. The ended session's cookie answers 401 at once; ending the current one "
        "signs you out. Someone else's session id answers 404.",
    )
    def delete(self, request, id):
        django_request = request._request
        was_current = user_sessions.session_end(
            user=request.user, session_id=id, current=user_sessions.current_digest(django_request)
        )
        if was_current:
            user_sessions.record_sign_out(django_request=django_request)
            logout(django_request)
        return Response({"ok": True})


class UserSessionRevokeOthersView(AccountView):
    @extend_schema(
        tags=["user"],
        request=None,
        responses={200: ps.RevokedOutput},
        summary="End all your sessions but this one",
    )
    def post(self, request):
        revoked = user_sessions.session_end_others(
            user=request.user, current=user_sessions.current_digest(request._request)
        )
        return Response({"revoked": revoked})
