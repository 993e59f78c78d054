"""How a patient list row (and a tag) reads on the wire: the patient routes and the Today view render it."""

from rest_framework import serializers

from apps.core.wire import Camelized, datetime_string, uuid_string
from apps.patients.models import Patient


class TagSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(min_length=1, max_length=64)
    color = serializers.RegexField(r"^#[0-9a-fA-F]{6}$", required=False, allow_blank=True, default="")
    created_at = serializers.DateTimeField(read_only=True)

    class Meta:
        ref_name = "Tag"


_LIST_FIELDS = (
    "id",
    "first_name",
    "last_name",
    "preferred_name",
    "title",
    "email",
    "phone_mobile",
    "status",
    "date_of_birth",
    "city",
    "location_id",
    "lead_source_id",
    "contact_attempts",
    "sms_opt_out",
    "email_opt_out",
    "whatsapp_opt_out",
    "archived_at",
    "merged_into_id",
    "created_at",
    "updated_at",
)


class PatientListItemSerializer(serializers.ModelSerializer):
    merged_into_patient_id = serializers.UUIDField(source="merged_into_id", allow_null=True, read_only=True)
    location_id = serializers.UUIDField(allow_null=True, read_only=True)
    lead_source_id = serializers.UUIDField(allow_null=True, read_only=True)
    tags = TagSerializer(many=True, read_only=True, required=False, help_text="Present with embed=tags.")

    class Meta:
        model = Patient
        ref_name = "PatientListItem"
        fields = [f for f in _LIST_FIELDS if f != "merged_into_id"] + ["merged_into_patient_id", "tags"]

    def get_fields(self):
        fields = super().get_fields()
        # Without embed=tags the field is left out, so no row reads its tags (no query per row).
        if self.context.get("embed_tags") is False:
            fields.pop("tags")
        return fields


# --- the list row from values, without a serializer per row ---------------------------------------------------------

# Columns a list row is rendered from (PatientListItemSerializer's fields, read with .values()).
LIST_COLUMNS = _LIST_FIELDS
TAG_COLUMNS = ("id", "name", "color", "created_at")


def tag_row(values: dict) -> Camelized:
    """TagSerializer's output, camelCased as on the wire, for a .values(*TAG_COLUMNS) row."""
    return Camelized(
        id=str(values["id"]),
        name=values["name"],
        color=values["color"],
        createdAt=datetime_string(values["created_at"]),
    )


def patient_list_row(values: dict, tags: list[dict] | None = None) -> Camelized:
    """PatientListItemSerializer's output as the renderer writes it (the same keys, camelCased, order and values)
    for a .values(*LIST_COLUMNS) row; with `tags` (tag_row dicts, in name order) the embed=tags form. A list page
    renders in a fraction of the serializer's time (~0.3 ms of field objects per row), and the renderer does not
    walk the row again (Camelized); tests/patients prove the output identical (schema and bodies)."""
    date_of_birth = values["date_of_birth"]
    row = Camelized(
        id=str(values["id"]),
        firstName=values["first_name"],
        lastName=values["last_name"],
        preferredName=values["preferred_name"],
        title=values["title"],
        email=values["email"],
        phoneMobile=values["phone_mobile"],
        status=values["status"],
        dateOfBirth=None if date_of_birth is None else date_of_birth.isoformat(),
        city=values["city"],
        locationId=uuid_string(values["location_id"]),
        leadSourceId=uuid_string(values["lead_source_id"]),
        contactAttempts=values["contact_attempts"],
        smsOptOut=values["sms_opt_out"],
        emailOptOut=values["email_opt_out"],
        whatsappOptOut=values["whatsapp_opt_out"],
        archivedAt=datetime_string(values["archived_at"]),
        createdAt=datetime_string(values["created_at"]),
        updatedAt=datetime_string(values["updated_at"]),
        mergedIntoPatientId=uuid_string(values["merged_into_id"]),
    )
    if tags is not None:
        row["tags"] = tags
    return row


# --- one patient from values (GET /patients/{id} without embeds) ------------------------------------------------------

# Columns the patient row is rendered from (PatientSerializer's fields, read with .values()).
DETAIL_COLUMNS = (
    "id",
    "location_id",
    "title",
    "first_name",
    "last_name",
    "preferred_name",
    "ethnicity_code",
    "date_of_birth",
    "gender",
    "fiscal_code",
    "sts_opposition",
    "email",
    "phone_mobile",
    "phone_other",
    "address_line1",
    "address_line2",
    "city",
    "province",
    "postal_code",
    "country",
    "language",
    "preferred_contact_method",
    "preferred_contact_time",
    "sms_opt_out",
    "email_opt_out",
    "whatsapp_opt_out",
    "lead_source_id",
    "referred_by_patient_id",
    "medical_alert",
    "note",
    "default_price_list_id",
    "dentist_practitioner_id",
    "hygienist_practitioner_id",
    "custom_fields",
    "status",
    "archived_at",
    "merged_into_id",
    "contact_attempts",
    "created_at",
    "updated_at",
)


def patient_row(values: dict, tags: list[dict]) -> Camelized:
    """PatientSerializer's output (also PatientDetailSerializer's without embeds) as the renderer writes it, for a
    .values(*DETAIL_COLUMNS) row and its tags' .values(*TAG_COLUMNS) rows in name order. customFields keeps its
    keys verbatim, as the renderer's ignore_fields do. tests/patients prove it identical."""
    date_of_birth = values["date_of_birth"]
    custom_fields = values["custom_fields"]
    return Camelized(
        id=str(values["id"]),
        locationId=uuid_string(values["location_id"]),
        title=values["title"],
        firstName=values["first_name"],
        lastName=values["last_name"],
        preferredName=values["preferred_name"],
        ethnicityCode=values["ethnicity_code"],
        dateOfBirth=None if date_of_birth is None else date_of_birth.isoformat(),
        gender=values["gender"],
        fiscalCode=values["fiscal_code"],
        stsOpposition=values["sts_opposition"],
        email=values["email"],
        phoneMobile=values["phone_mobile"],
        phoneOther=values["phone_other"],
        addressLine1=values["address_line1"],
        addressLine2=values["address_line2"],
        city=values["city"],
        province=values["province"],
        postalCode=values["postal_code"],
        country=values["country"],
        language=values["language"],
        preferredContactMethod=values["preferred_contact_method"],
        preferredContactTime=values["preferred_contact_time"],
        smsOptOut=values["sms_opt_out"],
        emailOptOut=values["email_opt_out"],
        whatsappOptOut=values["whatsapp_opt_out"],
        leadSourceId=uuid_string(values["lead_source_id"]),
        referredByPatientId=uuid_string(values["referred_by_patient_id"]),
        medicalAlert=values["medical_alert"],
        note=values["note"],
        defaultPriceListId=uuid_string(values["default_price_list_id"]),
        dentistPractitionerId=uuid_string(values["dentist_practitioner_id"]),
        hygienistPractitionerId=uuid_string(values["hygienist_practitioner_id"]),
        customFields=None if custom_fields is None else {str(key): value for key, value in custom_fields.items()},
        status=values["status"],
        archivedAt=datetime_string(values["archived_at"]),
        mergedIntoPatientId=uuid_string(values["merged_into_id"]),
        contactAttempts=values["contact_attempts"],
        tags=[tag_row(tag) for tag in tags],
        createdAt=datetime_string(values["created_at"]),
        updatedAt=datetime_string(values["updated_at"]),
    )
