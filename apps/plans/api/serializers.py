"""Wire shapes of procedures, fees, treatment plans, items and templates (camelCase on the wire)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.fields import StrictBooleanField, StrictIntegerField, TenantRelatedField, TextField
from apps.core.serializers import NonEmptyPatchSerializer, OffsetQuerySerializer, StrictSerializer
from apps.patients.public import Practitioner
from apps.plans import rules, selectors
from apps.plans.models import Category, FeeSource, ItemStatus, PlanStatus, Procedure, TreatmentTemplate

# --- fields -----------------------------------------------------------------------------------------------------------


class ToothField(StrictIntegerField):
    default_error_messages = {"tooth": "must be an FDI tooth number: permanent 11-48, primary 51-85"}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not rules.tooth_valid(value):
            self.fail("tooth")
        return value


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "enum": list(rules.SURFACE_ORDER)},
        "uniqueItems": True,
        "maxItems": 6,
        "description": "Surfaces as a set: M mesial, O occlusal, D distal, B buccal, L lingual, I incisal. Incisors "
        "and canines take M D B L I, premolars and molars M O D B L.",
    }
)
class SurfacesField(serializers.Field):
    """A set of surface letters on the wire; the canonical string ("MOD") inside."""

    default_error_messages = {
        "type": "must be an array of surface letters",
        "letter": "must be letters of M, O, D, B, L, I",
        "duplicate": "must not repeat a surface",
    }

    def to_internal_value(self, data):
        if not isinstance(data, list) or len(data) > len(rules.SURFACE_ORDER):
            self.fail("type")
        if not all(isinstance(letter, str) and letter in rules.SURFACE_ORDER and len(letter) == 1 for letter in data):
            self.fail("letter")
        if len(set(data)) != len(data):
            self.fail("duplicate")
        return rules.canonical_surfaces(data)

    def to_representation(self, value):
        return list(value)


def _money(**kwargs):
    return StrictIntegerField(min_value=0, max_value=rules.MAX_FEE, **kwargs)


# --- procedures -------------------------------------------------------------------------------------------------------


class ProcedureSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    code = serializers.CharField()
    name = serializers.CharField()
    category = serializers.ChoiceField(choices=Category.choices)
    default_fee = serializers.IntegerField(help_text="Integer minor units of currency.")
    currency = serializers.CharField(help_text="ISO 4217: the practice's currency.")
    tooth_required = serializers.BooleanField()
    surfaces_required = serializers.BooleanField()
    archived = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_archived(self, procedure) -> bool:
        return procedure.archived_at is not None


class ProcedureListQuerySerializer(OffsetQuerySerializer):
    limit = serializers.IntegerField(min_value=1, max_value=200, default=100)
    category = serializers.ChoiceField(choices=Category.choices, required=False)
    include_archived = StrictBooleanField(required=False, default=False)

    def to_internal_value(self, data):
        if "include_archived" in data:
            value = data["include_archived"]
            data = {**data, "include_archived": {"true": True, "false": False}.get(value, value)}
        return super().to_internal_value(data)


class ProcedurePageSerializer(serializers.Serializer):
    items = ProcedureSerializer(many=True)
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()

    class Meta:
        ref_name = "ProcedurePage"


class ProcedureCreateSerializer(StrictSerializer):
    code = TextField(min_length=1, max_length=16)
    name = TextField(min_length=1, max_length=120)
    category = serializers.ChoiceField(choices=Category.choices, default=Category.OTHER)
    default_fee = _money(help_text="Integer minor units of the practice's currency.")
    tooth_required = StrictBooleanField(default=False)
    surfaces_required = StrictBooleanField(default=False)

    def validate_code(self, value):
        value = value.strip()
        if not value or any(ch.isspace() for ch in value):
            raise serializers.ValidationError("must be letters, digits and punctuation without spaces")
        return value

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return value.strip()

    def validate(self, attrs):
        if attrs.get("surfaces_required") and not attrs.get("tooth_required"):
            raise serializers.ValidationError(
                {"surfacesRequired": ["a procedure that needs surfaces also needs a tooth"]}
            )
        return attrs


class ProcedureUpdateSerializer(NonEmptyPatchSerializer):
    name = TextField(min_length=1, max_length=120, required=False)
    category = serializers.ChoiceField(choices=Category.choices, required=False)
    default_fee = _money(required=False, help_text="Applies to items added from now on; existing items keep theirs.")
    tooth_required = StrictBooleanField(required=False)
    surfaces_required = StrictBooleanField(required=False)
    archived = StrictBooleanField(required=False, help_text="An archived procedure cannot be added to plans.")

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return value.strip()


# --- fees -------------------------------------------------------------------------------------------------------------


class FeeSerializer(serializers.Serializer):
    procedure_id = serializers.UUIDField()
    procedure_code = serializers.CharField(source="procedure.code")
    procedure_name = serializers.CharField(source="procedure.name")
    amount = serializers.IntegerField(help_text="Integer minor units of currency.")
    currency = serializers.CharField()
    default_fee = serializers.IntegerField(source="procedure.default_fee")
    updated_at = serializers.DateTimeField()


class FeeListSerializer(serializers.Serializer):
    price_list_id = serializers.UUIDField()
    items = FeeSerializer(many=True)

    class Meta:
        ref_name = "PriceListFees"


class FeeEntrySerializer(StrictSerializer):
    procedure_id = TenantRelatedField(Procedure, source="procedure")
    amount = _money(allow_null=True, help_text="Integer minor units; null removes the fee (the default applies).")


class FeeSetSerializer(StrictSerializer):
    fees = FeeEntrySerializer(many=True, allow_empty=False, max_length=500)

    def validate_fees(self, value):
        ids = [entry["procedure"].id for entry in value]
        if len(set(ids)) != len(ids):
            raise serializers.ValidationError("names a procedure twice")
        return value


# --- plans ------------------------------------------------------------------------------------------------------------


class TotalsSerializer(serializers.Serializer):
    total = serializers.IntegerField(help_text="Planned and completed items, minor units (cancelled left out).")
    completed = serializers.IntegerField()
    remaining = serializers.IntegerField(help_text="Items still planned.")
    item_count = serializers.IntegerField(source="itemCount")


class PhaseTotalsSerializer(TotalsSerializer):
    phase = serializers.IntegerField()


class ItemSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    plan_id = serializers.UUIDField()
    procedure_id = serializers.UUIDField()
    procedure_code = serializers.CharField(source="procedure.code")
    procedure_name = serializers.CharField(source="procedure.name")
    tooth = serializers.IntegerField(allow_null=True)
    surfaces = SurfacesField()
    quantity = serializers.IntegerField()
    phase = serializers.IntegerField()
    fee = serializers.IntegerField(help_text="Unit fee in minor units of the plan's currency, fixed when added.")
    fee_source = serializers.ChoiceField(choices=FeeSource.choices)
    line_total = serializers.SerializerMethodField(help_text="fee x quantity.")
    practitioner_id = serializers.UUIDField(allow_null=True)
    status = serializers.ChoiceField(choices=ItemStatus.choices)
    completed_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_line_total(self, item) -> int:
        return item.fee * item.quantity


class PlanSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    title = serializers.SerializerMethodField()
    status = serializers.ChoiceField(choices=PlanStatus.choices)
    currency = serializers.CharField()
    practitioner_id = serializers.UUIDField(allow_null=True)
    created_by_id = serializers.UUIDField(allow_null=True)
    status_changed_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    totals = serializers.SerializerMethodField()

    def get_title(self, plan) -> str:
        return selectors.plan_content(plan).get("title", "")

    @extend_schema_field(TotalsSerializer)
    def get_totals(self, plan):
        return TotalsSerializer(self.context["totals"][plan.id]["totals"]).data


class PlanDetailSerializer(PlanSerializer):
    notes = serializers.SerializerMethodField()
    phases = serializers.SerializerMethodField()
    items = serializers.SerializerMethodField()

    def get_notes(self, plan) -> str:
        return selectors.plan_content(plan).get("notes", "")

    @extend_schema_field(PhaseTotalsSerializer(many=True))
    def get_phases(self, plan):
        return PhaseTotalsSerializer(self.context["totals"][plan.id]["phases"], many=True).data

    @extend_schema_field(ItemSerializer(many=True))
    def get_items(self, plan):
        return ItemSerializer(self.context["items"], many=True).data


class PlanListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=PlanStatus.choices, required=False)


class PlanPageSerializer(serializers.Serializer):
    items = PlanSerializer(many=True)
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()

    class Meta:
        ref_name = "TreatmentPlanPage"


def _clean_text(value: str) -> str:
    return value.strip()


class PlanCreateSerializer(StrictSerializer):
    title = TextField(min_length=1, max_length=200)
    notes = TextField(max_length=rules.MAX_TEXT, required=False, allow_blank=True, default="", trim_whitespace=False)
    practitioner_id = TenantRelatedField(
        Practitioner,
        source="practitioner",
        allow_archived=False,
        required=False,
        allow_null=True,
        help_text="Default: the practitioner profile linked to the author's account, if any.",
    )

    def validate_title(self, value):
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return _clean_text(value)


class PlanUpdateSerializer(NonEmptyPatchSerializer):
    title = TextField(min_length=1, max_length=200, required=False)
    notes = TextField(max_length=rules.MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)
    practitioner_id = TenantRelatedField(
        Practitioner, source="practitioner", allow_archived=False, required=False, allow_null=True
    )

    def validate_title(self, value):
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return _clean_text(value)


class PlanStatusSerializer(StrictSerializer):
    status = serializers.ChoiceField(
        choices=[s for s in PlanStatus.values if s != PlanStatus.COMPLETED],
        help_text="completed is reached through the items, never asked for.",
    )


# --- items ------------------------------------------------------------------------------------------------------------


class ItemCreateSerializer(StrictSerializer):
    procedure_id = TenantRelatedField(Procedure, source="procedure", allow_archived=False)
    tooth = ToothField(required=False, allow_null=True, help_text="FDI: permanent 11-48, primary 51-85.")
    surfaces = SurfacesField(required=False)
    quantity = StrictIntegerField(min_value=1, max_value=rules.MAX_QUANTITY, default=1)
    phase = StrictIntegerField(min_value=1, max_value=rules.MAX_PHASE, default=1)
    fee = _money(
        required=False,
        allow_null=True,
        help_text="A manual unit fee. Left out: the patient's price-list fee, else the procedure's default fee.",
    )
    practitioner_id = TenantRelatedField(
        Practitioner, source="practitioner", allow_archived=False, required=False, allow_null=True
    )


class ItemUpdateSerializer(NonEmptyPatchSerializer):
    tooth = ToothField(required=False, allow_null=True)
    surfaces = SurfacesField(required=False)
    quantity = StrictIntegerField(min_value=1, max_value=rules.MAX_QUANTITY, required=False)
    phase = StrictIntegerField(min_value=1, max_value=rules.MAX_PHASE, required=False)
    fee = _money(required=False, help_text="A manual unit fee.")
    practitioner_id = TenantRelatedField(
        Practitioner, source="practitioner", allow_archived=False, required=False, allow_null=True
    )


class ItemStatusSerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=[ItemStatus.COMPLETED, ItemStatus.CANCELLED])


class ItemStatusResultSerializer(serializers.Serializer):
    item = ItemSerializer()
    plan_status = serializers.ChoiceField(choices=PlanStatus.choices)
    totals = TotalsSerializer()


# --- templates --------------------------------------------------------------------------------------------------------


class TemplateItemSerializer(serializers.Serializer):
    procedure_id = serializers.UUIDField()
    procedure_code = serializers.CharField(source="procedure.code")
    procedure_name = serializers.CharField(source="procedure.name")
    tooth_required = serializers.BooleanField(source="procedure.tooth_required")
    phase = serializers.IntegerField()
    quantity = serializers.IntegerField()
    surfaces = SurfacesField()


class TemplateSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    items = TemplateItemSerializer(many=True, source="items.all")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class TemplatePageSerializer(serializers.Serializer):
    items = TemplateSerializer(many=True)
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()

    class Meta:
        ref_name = "TreatmentTemplatePage"


class TemplateItemWriteSerializer(StrictSerializer):
    procedure_id = TenantRelatedField(Procedure, source="procedure", allow_archived=False)
    phase = StrictIntegerField(min_value=1, max_value=rules.MAX_PHASE, default=1)
    quantity = StrictIntegerField(min_value=1, max_value=rules.MAX_QUANTITY, default=1)
    surfaces = SurfacesField(required=False, help_text="For a procedure on a tooth; the tooth is given when applied.")

    def validate(self, attrs):
        procedure, surfaces = attrs["procedure"], attrs.get("surfaces", "")
        if surfaces and not procedure.tooth_required:
            raise serializers.ValidationError({"surfaces": [f"procedure {procedure.code} is not done on a tooth"]})
        if not surfaces and procedure.surfaces_required:
            raise serializers.ValidationError({"surfaces": [f"procedure {procedure.code} needs surfaces"]})
        if surfaces and not (set(surfaces) <= rules.ANTERIOR_SURFACES or set(surfaces) <= rules.POSTERIOR_SURFACES):
            raise serializers.ValidationError({"surfaces": ["O and I are never surfaces of the same tooth"]})
        return attrs


class _TemplateNameMixin:
    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return value.strip()


class TemplateCreateSerializer(_TemplateNameMixin, StrictSerializer):
    name = TextField(min_length=1, max_length=120)
    items = TemplateItemWriteSerializer(many=True, allow_empty=False, max_length=rules.MAX_TEMPLATE_ITEMS)


class TemplateUpdateSerializer(_TemplateNameMixin, NonEmptyPatchSerializer):
    name = TextField(min_length=1, max_length=120, required=False)
    items = TemplateItemWriteSerializer(
        many=True, allow_empty=False, max_length=rules.MAX_TEMPLATE_ITEMS, required=False
    )


class TemplateApplySerializer(StrictSerializer):
    template_id = TenantRelatedField(TreatmentTemplate, source="template")
    tooth = ToothField(
        required=False, allow_null=True, help_text="Needed when a procedure of the template is done on a tooth."
    )


class TemplateApplyResultSerializer(serializers.Serializer):
    items = ItemSerializer(many=True)
    totals = TotalsSerializer()
