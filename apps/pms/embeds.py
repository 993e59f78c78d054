"""GET /patients/{id}?embed=pms, answered by this area (apps.patients.embeds registry): the patient's link to the
connected PMS — ids and sync timestamps only, never clinical content."""

from rest_framework import serializers

from apps.patients.public import PatientEmbed
from apps.pms import selectors


class PatientPmsLinkSerializer(serializers.Serializer):
    connection_id = serializers.UUIDField()
    provider = serializers.CharField()
    provider_patient_id = serializers.CharField()
    linked_at = serializers.DateTimeField()
    last_synced_at = serializers.DateTimeField()
    sync_state = serializers.ChoiceField(
        choices=["synced", "review"], help_text="review: a conflicting change from the PMS waits in the review queue."
    )

    class Meta:
        ref_name = "PatientPmsLink"


class PatientPmsSerializer(serializers.Serializer):
    link = PatientPmsLinkSerializer(allow_null=True, help_text="The newest link; null when the patient has none.")
    links = PatientPmsLinkSerializer(many=True, help_text="Every link (a PMS may hold duplicates of one person).")

    class Meta:
        ref_name = "PatientPms"


def render(*, organization, patient) -> dict:
    links = [
        {
            "connection_id": link.connection_id,
            "provider": link.connection.provider,
            "provider_patient_id": link.provider_patient_id,
            "linked_at": link.linked_at,
            "last_synced_at": link.last_synced_at,
            "sync_state": link.sync_state,
        }
        for link in selectors.patient_links(organization=organization, patient_id=patient.id)[:20]
    ]
    return PatientPmsSerializer({"link": links[0] if links else None, "links": links}).data


PMS_EMBED = PatientEmbed(
    name="pms",
    field=lambda: PatientPmsSerializer(required=False, help_text="With embed=pms: the link to the connected PMS."),
    render=render,
)
