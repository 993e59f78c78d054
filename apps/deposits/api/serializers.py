"""Wire shapes of the deposits area (camelCase on the wire; snake_case here)."""

from rest_framework import serializers

from apps.core.fields import StrictIntegerField, StrictUUIDField, TenantRelatedField, TextField
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer, offset_page_serializer
from apps.deposits.models import CURRENCIES, MAX_AMOUNT, DepositStatus
from apps.deposits.renderers import DepositRequestSerializer
from apps.journeys.public import Journey
from apps.patients.public import Patient


class DepositWriteSerializer(StrictSerializer):
    amount = StrictIntegerField(min_value=1, max_value=MAX_AMOUNT, help_text="Minor units (pence, cents), positive.")
    currency = serializers.ChoiceField(choices=[(c, c) for c in CURRENCIES], help_text="ISO 4217, lower case.")
    reason = TextField(min_length=1, max_length=200)
    journey_id = TenantRelatedField(
        Journey, required=False, allow_null=True, source="journey", help_text="A journey of the same patient."
    )

    def validate_reason(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value.strip()

    def to_internal_value(self, data):
        if isinstance(data, dict) and isinstance(data.get("currency"), str):
            data = {**data, "currency": data["currency"].lower()}
        return super().to_internal_value(data)


class DepositCreateSerializer(DepositWriteSerializer):
    patient_id = TenantRelatedField(Patient, source="patient")

    class Meta:
        ref_name = "DepositRequestCreate"


class DepositUpdateSerializer(DepositWriteSerializer):
    class Meta:
        ref_name = "DepositRequestUpdate"


class DepositSendSerializer(StrictSerializer):
    valid_days = StrictIntegerField(
        min_value=1, max_value=30, required=False, help_text="How long the patient link is valid (default 14 days)."
    )

    class Meta:
        ref_name = "DepositRequestSend"


DepositPageSerializer = offset_page_serializer(DepositRequestSerializer, "DepositRequestPage")


class DepositListQuerySerializer(OffsetQuerySerializer):
    patient_id = StrictUUIDField(required=False)
    journey_id = StrictUUIDField(required=False)
    status = serializers.ChoiceField(choices=DepositStatus.choices, required=False)


class CheckoutSerializer(serializers.Serializer):
    checkout_url = serializers.URLField(help_text="The payment platform's checkout page to send the patient to.")

    class Meta:
        ref_name = "DepositCheckout"


class CallbackReceivedSerializer(serializers.Serializer):
    received = serializers.BooleanField()
    duplicate = serializers.BooleanField(help_text="True when this event id was already applied (nothing changed).")

    class Meta:
        ref_name = "PaymentCallbackReceived"
