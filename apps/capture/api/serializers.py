from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.capture.fields import ATTRIBUTION_FIELDS, DEFAULT_FIELDS, MAX_FIELD_NAME, valid_target
from apps.capture.models import CaptureForm, CaptureSubmission, IntakeReviewItem
from apps.core.fields import StrictUUIDField, TenantRelatedField
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer, offset_page_serializer
from apps.journeys.public import Treatment
from apps.patients.public import LeadSource, Location

MAPPING_HELP = (
    "Incoming field name → target. A target is one of the default field names ("
    + ", ".join(DEFAULT_FIELDS)
    + "), a marketing parameter ("
    + ", ".join(sorted(ATTRIBUTION_FIELDS))
    + '), "custom:<key>" to keep the value in the patient\'s customFields under <key>, or "ignore". Fields not '
    "named here are read by their own name: default names and marketing parameters as such, anything else kept "
    "as a custom field."
)


class FieldMappingField(serializers.DictField):
    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", MAPPING_HELP)
        super().__init__(child=serializers.CharField(max_length=MAX_FIELD_NAME + 7), **kwargs)

    def to_internal_value(self, data):
        mapping = super().to_internal_value(data)
        if len(mapping) > 200:
            raise serializers.ValidationError("at most 200 fields")
        for name, target in mapping.items():
            if not name or len(name) > MAX_FIELD_NAME:
                raise serializers.ValidationError(f"field names are 1 to {MAX_FIELD_NAME} characters")
            if not valid_target(target):
                raise serializers.ValidationError(f'"{name}": unknown target "{target}"')
        return mapping


class ActiveTreatmentField(TenantRelatedField):
    def __init__(self, **kwargs):
        super().__init__(Treatment, **kwargs)

    def to_internal_value(self, data):
        treatment = super().to_internal_value(data)
        if not treatment.active:
            self.fail("archived")
        return treatment


class CaptureFormWriteSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=200)
    kind = serializers.ChoiceField(
        choices=CaptureForm.Kind.choices,
        default=CaptureForm.Kind.FORM_SUBMISSIONS,
        help_text="What arrives: website form submissions, or incoming calls (one post per call, phone required).",
    )
    delivery_mode = serializers.ChoiceField(
        choices=CaptureForm.Mode.choices,
        default=CaptureForm.Mode.PUBLIC,
        help_text="public: browser form posts without credentials. signed: JSON with an HMAC signature; the signing "
        "secret is in the creation response, once.",
    )
    default_treatment_id = ActiveTreatmentField(source="default_treatment", required=False, allow_null=True)
    lead_source_id = TenantRelatedField(
        LeadSource, source="lead_source", required=False, allow_null=True, allow_archived=False
    )
    location_id = TenantRelatedField(Location, source="location", required=False, allow_null=True, allow_archived=False)
    field_mapping = FieldMappingField(required=False)
    confirm_mapping = serializers.BooleanField(
        default=False,
        help_text="Confirm the mapping now. Until the mapping is confirmed, submissions are parked (stored, not "
        "turned into leads) and replayed on confirmation.",
    )


class CaptureFormUpdateSerializer(CaptureFormWriteSerializer):
    """PATCH: name, defaults and mapping. Mode changes go through the signing routes, status through pause, resume
    and archive."""

    def get_fields(self):
        fields = super().get_fields()
        for name in ("delivery_mode", "confirm_mapping"):
            fields.pop(name)
        return fields


class SigningSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    previous_secret_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="Until then the previous secret is accepted too (24 hours after a rotation)."
    )

    class Meta:
        ref_name = "CaptureSigning"


class CaptureFormSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=CaptureForm.Kind.choices)
    delivery_mode = serializers.ChoiceField(choices=CaptureForm.Mode.choices)
    status = serializers.ChoiceField(choices=CaptureForm.Status.choices)
    capture_url = serializers.CharField(help_text="POST submissions here. The token in it is the form's routing key.")
    form_page_url = serializers.CharField(
        allow_null=True, help_text="The hosted form page (public form submissions only)."
    )
    default_treatment_id = serializers.UUIDField(allow_null=True)
    lead_source_id = serializers.UUIDField(allow_null=True)
    location_id = serializers.UUIDField(allow_null=True)
    field_mapping = serializers.DictField(child=serializers.CharField())
    mapping_confirmed_at = serializers.DateTimeField(allow_null=True)
    parked_submissions = serializers.IntegerField(help_text="Waiting for the mapping's confirmation.")
    unmapped_fields = serializers.ListField(
        child=serializers.CharField(),
        help_text="Field names seen in parked submissions that are neither default names, marketing parameters "
        "nor in the mapping.",
    )
    signing = SigningSerializer()
    archived_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "CaptureForm"


class CaptureFormCreatedSerializer(CaptureFormSerializer):
    signing_secret = serializers.CharField(
        allow_null=True, help_text="Signed mode only, shown once: store it now to sign posts."
    )

    class Meta:
        ref_name = "CaptureFormCreated"


class CaptureFormSecretSerializer(CaptureFormSerializer):
    signing_secret = serializers.CharField(help_text="Shown once.")

    class Meta:
        ref_name = "CaptureFormWithSecret"


CaptureFormListSerializer = offset_page_serializer(CaptureFormSerializer, "CaptureFormPage")


class CaptureFormListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=CaptureForm.Status.choices, required=False)
    include_archived = serializers.BooleanField(default=False, help_text="Archived forms are left out unless true.")


class MappingConfirmSerializer(StrictSerializer):
    field_mapping = FieldMappingField(required=False, help_text="Replaces the mapping; omit to confirm it as it is.")


class MappingConfirmedSerializer(serializers.Serializer):
    form = CaptureFormSerializer()
    replaying = serializers.IntegerField(help_text="Parked submissions queued for processing, oldest first.")

    class Meta:
        ref_name = "CaptureMappingConfirmed"


class SubmissionSerializer(serializers.Serializer):
    """A submission as the settings page shows it: what happened, and the field names it carried (the values are
    the patient's data and stay with the patient)."""

    id = serializers.UUIDField()
    delivery_id = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=CaptureSubmission.Status.choices)
    field_names = serializers.ListField(child=serializers.CharField())
    patient_id = serializers.UUIDField(allow_null=True)
    patient_created = serializers.BooleanField()
    journey_id = serializers.UUIDField(allow_null=True)
    problem = serializers.CharField()
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    processed_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "CaptureSubmission"


SubmissionPageSerializer = offset_page_serializer(SubmissionSerializer, "CaptureSubmissionPage")


class SubmissionListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=CaptureSubmission.Status.choices, required=False)


class CaptureAcceptedSerializer(serializers.Serializer):
    ok = serializers.BooleanField()

    class Meta:
        ref_name = "CaptureAccepted"


# --- intake review ----------------------------------------------------------------------------------------------


class ReviewItemSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=IntakeReviewItem.Status.choices)
    reasons = serializers.ListField(child=serializers.ChoiceField(choices=IntakeReviewItem.Reason.choices))
    patient_id = serializers.UUIDField(
        allow_null=True, help_text="null when the capture could not become a lead (reason no_usable_contact)."
    )
    submitted_fields = serializers.SerializerMethodField(
        help_text="The fields as submitted, for an item without a patient (no_usable_contact): name, the e-mail or "
        "phone as typed, message. null otherwise (the data is on the patient)."
    )
    form_id = serializers.UUIDField(allow_null=True)
    submission_id = serializers.UUIDField(allow_null=True)
    resolution_note = serializers.CharField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    resolved_by_user_id = serializers.UUIDField(source="resolved_by_id", allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "IntakeReviewItem"

    @extend_schema_field({"type": "object", "additionalProperties": True, "nullable": True})
    def get_submitted_fields(self, item) -> dict | None:
        if item.patient_id is not None or item.submission is None:
            return None
        return item.submission.fields


ReviewPageSerializer = offset_page_serializer(ReviewItemSerializer, "IntakeReviewPage")


class ReviewListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=IntakeReviewItem.Status.choices, default=IntakeReviewItem.Status.OPEN)
    patient_id = StrictUUIDField(required=False)


class ReviewCloseSerializer(StrictSerializer):
    note = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")
