"""How a patient list row (and a tag) reads on the wire: the patient routes and the Today view render it."""

from rest_framework import serializers

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
