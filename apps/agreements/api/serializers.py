"""Wire shapes of the agreements routes (snake_case here, camelCase on the wire)."""

from rest_framework import serializers

from apps.agreements.models import Agreement


class AgreementRefSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=Agreement.Kind.values)
    version = serializers.CharField()
    title = serializers.CharField()


class AcceptedBySerializer(serializers.Serializer):
    id = serializers.UUIDField(allow_null=True, help_text="null once the person's account is gone.")
    name = serializers.CharField(help_text="The name (or e-mail) of the person when they accepted.")


class AcceptanceSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    accepted_at = serializers.DateTimeField()
    accepted_by = serializers.SerializerMethodField()

    def get_accepted_by(self, acceptance) -> AcceptedBySerializer:
        return AcceptedBySerializer({"id": acceptance.accepted_by_id, "name": acceptance.accepted_by_name}).data


class AcceptanceSerializer(AcceptanceSummarySerializer):
    agreement = AgreementRefSerializer()
    address_block = serializers.CharField(help_text="The network accepted from (/24 IPv4, /48 IPv6), not the address.")


class AgreementSerializer(serializers.Serializer):
    """An AgreementState (apps.agreements.selectors) rendered."""

    id = serializers.UUIDField(source="agreement.id")
    kind = serializers.ChoiceField(source="agreement.kind", choices=Agreement.Kind.values)
    version = serializers.CharField(source="agreement.version")
    title = serializers.CharField(source="agreement.title")
    published_at = serializers.DateTimeField(source="agreement.published_at")
    effective_at = serializers.DateTimeField(source="agreement.effective_at")
    requires_acceptance = serializers.BooleanField(source="agreement.requires_acceptance")
    current = serializers.BooleanField(help_text="false: a newer version of this kind has been published.")
    pending = serializers.BooleanField(
        help_text="true: current, needs acceptance, and the practice has not accepted it."
    )
    acceptance = AcceptanceSummarySerializer(allow_null=True, help_text="The practice's acceptance of this version.")


class AgreementDetailSerializer(AgreementSerializer):
    body = serializers.CharField(
        source="agreement.body", help_text="The full text, paragraphs separated by blank lines."
    )


class AgreementListSerializer(serializers.Serializer):
    items = AgreementSerializer(many=True, help_text="The current version of each kind, terms first.")
    pending_count = serializers.IntegerField()
