"""How an attribution touch reads on the wire (GET /patients/{id}?embed=touches)."""

from rest_framework import serializers

from apps.capture.selectors import touches_of_patient


class AttributionTouchSerializer(serializers.Serializer):
    """Where a captured lead came from (GET /patients/{id}?embed=touches), newest first."""

    id = serializers.UUIDField()
    form_id = serializers.UUIDField(allow_null=True)
    submission_id = serializers.UUIDField(allow_null=True)
    utm_source = serializers.CharField()
    utm_medium = serializers.CharField()
    utm_campaign = serializers.CharField()
    utm_term = serializers.CharField()
    utm_content = serializers.CharField()
    utm_id = serializers.CharField()
    click_id_type = serializers.CharField(help_text="gclid, fbclid, msclkid, ttclid, …; blank without one.")
    click_id = serializers.CharField()
    landing_url = serializers.CharField()
    referrer = serializers.CharField()
    occurred_at = serializers.DateTimeField()

    class Meta:
        ref_name = "AttributionTouch"


def embed_touches_field() -> serializers.Field:
    return AttributionTouchSerializer(many=True, required=False, help_text="Capture attribution, newest first.")


def embed_touches(*, organization, patient) -> list:
    """GET /patients/{id}?embed=touches (registered in CaptureConfig.ready)."""
    touches = touches_of_patient(organization=organization, patient_id=patient.id)
    return AttributionTouchSerializer(touches, many=True).data
