"""Wire shapes of online booking (camelCase on the wire; snake_case here)."""

from rest_framework import serializers

from apps.core.fields import AwareDateTimeField, StrictIntegerField, StrictUUIDField, TenantRelatedField, TextField
from apps.core.serializers import StrictSerializer
from apps.journeys.public import Treatment
from apps.patients.public import Location, Practitioner

MAX_HORIZON_DAYS = 365


# --- settings ---------------------------------------------------------------------------------------------------------


class PageWriteSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=200)
    active = serializers.BooleanField(required=False)
    treatment_ids = serializers.ListField(
        child=TenantRelatedField(Treatment, allow_archived=False),
        source="treatments",
        required=False,
        max_length=200,
        help_text="Treatments offered; empty offers every active treatment.",
    )
    location_ids = serializers.ListField(
        child=TenantRelatedField(Location, allow_archived=False),
        source="locations",
        required=False,
        max_length=200,
        help_text="Locations offered; empty offers every location.",
    )
    practitioner_ids = serializers.ListField(
        child=TenantRelatedField(Practitioner, allow_archived=False),
        source="practitioners",
        required=False,
        max_length=200,
        help_text="Practitioners bookable; empty makes every active practitioner with working hours bookable.",
    )
    lead_time_minutes = StrictIntegerField(min_value=0, max_value=60 * 24 * 30, required=False)
    horizon_days = StrictIntegerField(min_value=1, max_value=MAX_HORIZON_DAYS, required=False)
    slot_minutes = StrictIntegerField(min_value=5, max_value=480, required=False)
    change_notice_minutes = StrictIntegerField(
        min_value=0,
        max_value=60 * 24 * 30,
        required=False,
        help_text="How long before the appointment a patient may still cancel or reschedule online.",
    )
    consent_text = TextField(
        min_length=1,
        max_length=2000,
        required=False,
        help_text="The marketing-consent wording beside the booking form's unticked checkbox; kept as the "
        "consent's evidence when a patient ticks it. Default: a sentence asking for news and offers by e-mail and "
        "text message.",
    )


class PagePatchSerializer(PageWriteSerializer):
    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("give at least one field to change")
        return attrs


class PageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    active = serializers.BooleanField()
    token = serializers.CharField(help_text="The opaque token publishing the page: /booking/{token}/…")
    treatment_ids = serializers.SerializerMethodField()
    location_ids = serializers.SerializerMethodField()
    practitioner_ids = serializers.SerializerMethodField()
    lead_time_minutes = serializers.IntegerField()
    horizon_days = serializers.IntegerField()
    slot_minutes = serializers.IntegerField()
    change_notice_minutes = serializers.IntegerField()
    consent_text = serializers.CharField(help_text="The marketing-consent wording the booking form shows.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_treatment_ids(self, page) -> list[str]:
        return sorted(str(t.id) for t in page.treatments.all())

    def get_location_ids(self, page) -> list[str]:
        return sorted(str(loc.id) for loc in page.locations.all())

    def get_practitioner_ids(self, page) -> list[str]:
        return sorted(str(p.id) for p in page.practitioners.all())


class PageListSerializer(serializers.Serializer):
    items = PageSerializer(many=True)


# --- public -----------------------------------------------------------------------------------------------------------


class NamedSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class PublicConfigSerializer(serializers.Serializer):
    name = serializers.CharField()
    practice_name = serializers.CharField()
    timezone = serializers.CharField(help_text="The practice's IANA timezone: days and working hours are its own.")
    treatments = NamedSerializer(many=True)
    locations = NamedSerializer(many=True)
    practitioners = NamedSerializer(many=True)
    lead_time_minutes = serializers.IntegerField()
    horizon_days = serializers.IntegerField()
    slot_minutes = serializers.IntegerField()
    first_day = serializers.DateField()
    last_day = serializers.DateField()
    consent_text = serializers.CharField(
        help_text="The marketing-consent wording to show beside an unticked checkbox; ticked, complete it with "
        "marketingConsent=true."
    )


class AvailabilityQuerySerializer(StrictSerializer):
    start = serializers.DateField(help_text="First local day (practice timezone).")
    end = serializers.DateField(help_text="Last local day, inclusive; at most the page's horizon after start.")
    practitioner_id = StrictUUIDField(required=False)
    location_id = StrictUUIDField(required=False)

    def validate(self, attrs):
        if attrs["end"] < attrs["start"]:
            raise serializers.ValidationError({"end": "must not be before start"})
        return attrs


class SlotSerializer(serializers.Serializer):
    practitioner_id = serializers.UUIDField()
    location_id = serializers.UUIDField(allow_null=True)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()


class AvailabilitySerializer(serializers.Serializer):
    timezone = serializers.CharField()
    slots = SlotSerializer(many=True)


class HoldCreateSerializer(StrictSerializer):
    practitioner_id = StrictUUIDField()
    starts_at = AwareDateTimeField()
    location_id = StrictUUIDField(required=False, allow_null=True)
    treatment_id = StrictUUIDField(required=False, allow_null=True)


class HoldSerializer(serializers.Serializer):
    hold_id = serializers.CharField(source="key", help_text="Opaque; completes the booking before expiresAt.")
    practitioner_id = serializers.UUIDField()
    location_id = serializers.UUIDField(allow_null=True)
    treatment_id = serializers.UUIDField(allow_null=True)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


class CompleteSerializer(StrictSerializer):
    first_name = TextField(min_length=1, max_length=200)
    last_name = TextField(max_length=200, required=False, allow_blank=True)
    email = serializers.EmailField(max_length=254, required=False, allow_blank=True)
    phone = TextField(max_length=40, required=False, allow_blank=True)
    notes = TextField(max_length=2000, required=False, allow_blank=True)
    marketing_consent = serializers.BooleanField(
        required=False,
        default=False,
        help_text="The patient ticked the page's consent wording (consentText of the config): marketing consent is "
        "recorded for the e-mail and/or SMS channel of the contact details given, with that wording as evidence. "
        "Absent or false records nothing.",
    )

    def validate_phone(self, value):
        if value and sum(ch.isdigit() for ch in value) < 6:
            raise serializers.ValidationError("must contain at least 6 digits")
        return value

    def validate(self, attrs):
        if not attrs.get("email") and not attrs.get("phone"):
            raise serializers.ValidationError({"email": "give an e-mail address or a phone number"})
        return attrs


class BookingSerializer(serializers.Serializer):
    uid = serializers.CharField(help_text="Opaque: manages the booking at /booking/manage/{uid}.")
    status = serializers.CharField(source="appointment.status")
    practitioner = NamedSerializer(source="appointment.practitioner")
    location = NamedSerializer(source="appointment.location", allow_null=True)
    treatment = NamedSerializer(source="appointment.treatment", allow_null=True)
    starts_at = serializers.DateTimeField(source="appointment.starts_at")
    ends_at = serializers.DateTimeField(source="appointment.ends_at")
    can_change_until = serializers.SerializerMethodField()

    def get_can_change_until(self, booking) -> str:
        from datetime import timedelta

        moment = booking.appointment.starts_at - timedelta(minutes=booking.page.change_notice_minutes)
        return serializers.DateTimeField().to_representation(moment)


class CancelSerializer(StrictSerializer):
    reason = TextField(max_length=500, required=False, allow_blank=True)


class RescheduleSerializer(StrictSerializer):
    starts_at = AwareDateTimeField()
    practitioner_id = StrictUUIDField(required=False)
