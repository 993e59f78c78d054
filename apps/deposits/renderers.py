"""How a deposit request reads on the wire: the deposits routes and the patient embed (GET /patients/{id}?embed=
deposits) render it. The payment-provider ids stay in the database."""

from rest_framework import serializers

from apps.deposits import links
from apps.deposits.models import DepositStatus
from apps.deposits.selectors import EMBED_LIMIT, deposits_of_patient


class DepositRequestSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    journey_id = serializers.UUIDField(allow_null=True)
    amount = serializers.IntegerField(help_text="In the currency's minor unit (pence, cents).")
    currency = serializers.CharField(help_text="ISO 4217, lower case.")
    reason = serializers.CharField()
    status = serializers.ChoiceField(choices=DepositStatus.choices)
    refunded_amount = serializers.IntegerField(help_text="Refunded so far (minor units); equals amount when refunded.")
    patient_link = serializers.SerializerMethodField(
        help_text="The patient's link (GET /l/{token}) while the request is sent and the link has not expired; null "
        "otherwise."
    )
    sent_at = serializers.DateTimeField(allow_null=True)
    link_expires_at = serializers.DateTimeField(allow_null=True)
    paid_at = serializers.DateTimeField(allow_null=True)
    cancelled_at = serializers.DateTimeField(allow_null=True)
    expired_at = serializers.DateTimeField(allow_null=True)
    refunded_at = serializers.DateTimeField(allow_null=True)
    created_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "DepositRequest"

    def get_patient_link(self, deposit) -> str | None:
        if deposit.status != DepositStatus.SENT:
            return None
        return links.for_deposit(deposit)


def embed_deposits_field() -> serializers.Field:
    return DepositRequestSerializer(
        many=True, required=False, help_text=f"The patient's deposit requests, newest first (at most {EMBED_LIMIT})."
    )


def embed_deposits(*, organization, patient) -> list:
    """GET /patients/{id}?embed=deposits (registered in DepositsConfig.ready)."""
    rows = deposits_of_patient(organization=organization, patient_id=patient.id)
    return DepositRequestSerializer(rows, many=True).data
