"""Wire shapes of the profile routes: /user/me (update), /user/avatar, /organization/logo, /user/sessions."""

import phonenumbers
from rest_framework import serializers

from apps.core.fields import TextField
from apps.core.serializers import StrictSerializer


class UserUpdateInput(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    phone_mobile = TextField(
        required=False,
        allow_blank=True,
        max_length=40,
        help_text="Your own mobile number in international form (+44 7700 900123), where campaign test sends by "
        "SMS and WhatsApp go; empty to remove it.",
    )

    def validate_phone_mobile(self, value: str) -> str:
        if not value.strip():
            return ""
        try:
            number = phonenumbers.parse(value, None)
        except phonenumbers.NumberParseException:
            raise serializers.ValidationError("must be an international number starting with +") from None
        if not phonenumbers.is_possible_number(number):
            raise serializers.ValidationError("is not a valid mobile number")
        return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)

    def to_internal_value(self, data):
        if isinstance(data, dict) and "email" in data:
            raise serializers.ValidationError({"email": ["cannot be changed here"]})
        return super().to_internal_value(data)


class ImageUploadInput(StrictSerializer):
    """The multipart form of a picture upload; any part but `file` is refused (profile_views._multipart_file)."""

    file = serializers.FileField(help_text="The picture. Its type is read from its bytes, not its name.")


class StoredImageOutput(serializers.Serializer):
    content_type = serializers.CharField(help_text="Detected from the bytes: image/jpeg, image/png, image/webp, …")
    size = serializers.IntegerField(min_value=1, help_text="Bytes.")
    etag = serializers.SerializerMethodField(help_text="The quoted SHA-256 the GET route answers as ETag.")
    created_at = serializers.DateTimeField()

    def get_etag(self, image) -> str:
        return f'"{image.sha256}"'


class UserSessionOutput(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField(help_text="Updated at most once a minute.")
    expires_at = serializers.DateTimeField()
    ip_address = serializers.IPAddressField(allow_null=True, help_text="The address that signed in.")
    user_agent = serializers.CharField(allow_blank=True, help_text="The browser that signed in (truncated).")
    current = serializers.BooleanField(help_text="This is the session making the request.")


class RevokedOutput(serializers.Serializer):
    revoked = serializers.IntegerField(min_value=0, help_text="How many sessions were ended.")
