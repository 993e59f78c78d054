"""Wire shapes of the patients area (camelCase on the wire; snake_case here)."""

import json

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.fields import (
    UNSTORABLE_PROBLEM,
    UUID_LIST_SCHEMA,
    StrictUUIDField,
    TenantRelatedField,
    has_unstorable_text,
)
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer
from apps.patients import selectors
from apps.patients.embeds import patient_embed
from apps.patients.models import (
    SETTABLE_STATUSES,
    Activity,
    ContactMethod,
    Gender,
    LeadSource,
    Location,
    MarketingConsent,
    Patient,
    Practitioner,
    PriceList,
    Status,
)
from apps.patients.renderers import PatientListItemSerializer, TagSerializer

MAX_FILTERS_LENGTH = 4000
MAX_BULK_IDS = 500
MAX_BULK_TAGS = 20
EXPORT_ROW_CAP = 10_000


# --- patient payload ---------------------------------------------------------------------------------------------


class PatientWriteSerializer(StrictSerializer):
    """Create and update payload. On update every field is optional; nullable fields accept null to clear."""

    location_id = TenantRelatedField(Location, required=False, allow_null=True)
    title = serializers.CharField(max_length=40, required=False, allow_null=True, allow_blank=True)
    first_name = serializers.CharField(min_length=1, max_length=200)
    last_name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    preferred_name = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True)
    ethnicity_code = serializers.CharField(max_length=16, required=False, allow_null=True, allow_blank=True)
    date_of_birth = serializers.DateField(required=False, allow_null=True, input_formats=["%Y-%m-%d"])
    gender = serializers.ChoiceField(choices=Gender.choices, required=False, allow_null=True)
    fiscal_code = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    sts_opposition = serializers.BooleanField(required=False)
    email = serializers.EmailField(max_length=254, required=False, allow_null=True)
    phone_mobile = serializers.CharField(max_length=40, required=False, allow_null=True, allow_blank=True)
    phone_other = serializers.CharField(max_length=40, required=False, allow_null=True, allow_blank=True)
    address_line1 = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True)
    address_line2 = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True)
    city = serializers.CharField(max_length=120, required=False, allow_null=True, allow_blank=True)
    province = serializers.CharField(max_length=120, required=False, allow_null=True, allow_blank=True)
    postal_code = serializers.CharField(max_length=20, required=False, allow_null=True, allow_blank=True)
    country = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    language = serializers.CharField(max_length=35, required=False, allow_null=True, allow_blank=True)
    preferred_contact_method = serializers.ChoiceField(choices=ContactMethod.choices, required=False, allow_null=True)
    preferred_contact_time = serializers.CharField(max_length=100, required=False, allow_null=True, allow_blank=True)
    sms_opt_out = serializers.BooleanField(required=False)
    email_opt_out = serializers.BooleanField(required=False)
    whatsapp_opt_out = serializers.BooleanField(required=False)
    lead_source_id = TenantRelatedField(LeadSource, required=False, allow_null=True)
    referred_by_patient_id = TenantRelatedField(Patient, required=False, allow_null=True)
    medical_alert = serializers.CharField(max_length=5000, required=False, allow_null=True, allow_blank=True)
    note = serializers.CharField(max_length=20000, required=False, allow_null=True, allow_blank=True)
    default_price_list_id = TenantRelatedField(PriceList, required=False, allow_null=True)
    dentist_practitioner_id = TenantRelatedField(Practitioner, required=False, allow_null=True)
    hygienist_practitioner_id = TenantRelatedField(Practitioner, required=False, allow_null=True)
    custom_fields = serializers.DictField(
        child=serializers.JSONField(allow_null=True), required=False, help_text="String keys, any JSON values."
    )

    def validate_custom_fields(self, value):
        if has_unstorable_text(value):  # PostgreSQL's JSON cannot hold it: a 500 otherwise
            raise serializers.ValidationError(UNSTORABLE_PROBLEM)
        return value

    def validate_date_of_birth(self, value):
        from django.utils import timezone

        if value is not None and value > timezone.localdate():
            raise serializers.ValidationError("must not be in the future")
        return value

    def validate(self, attrs):
        if self.partial:
            return attrs
        if not (attrs.get("email") or attrs.get("phone_mobile")):
            raise serializers.ValidationError({"email": ["at least one of email or phoneMobile is required"]})
        return attrs


class PatientCreateSerializer(PatientWriteSerializer):
    class Meta:
        ref_name = "PatientCreate"


class PatientUpdateSerializer(PatientWriteSerializer):
    status = serializers.ChoiceField(
        choices=[(s, s) for s in SETTABLE_STATUSES],
        required=False,
        help_text="archived is set through the archive operations.",
    )

    class Meta:
        ref_name = "PatientUpdate"


# --- patient output ----------------------------------------------------------------------------------------------


class TagWriteSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=64)
    color = serializers.RegexField(r"^#[0-9a-fA-F]{6}$", required=False, allow_blank=True)

    class Meta:
        ref_name = "TagWrite"


class PatientSerializer(serializers.ModelSerializer):
    merged_into_patient_id = serializers.UUIDField(source="merged_into_id", allow_null=True, read_only=True)
    location_id = serializers.UUIDField(allow_null=True, read_only=True)
    lead_source_id = serializers.UUIDField(allow_null=True, read_only=True)
    referred_by_patient_id = serializers.UUIDField(allow_null=True, read_only=True)
    default_price_list_id = serializers.UUIDField(allow_null=True, read_only=True)
    dentist_practitioner_id = serializers.UUIDField(allow_null=True, read_only=True)
    hygienist_practitioner_id = serializers.UUIDField(allow_null=True, read_only=True)
    tags = TagSerializer(many=True, read_only=True)
    custom_fields = serializers.DictField(child=serializers.JSONField(), read_only=True)

    class Meta:
        model = Patient
        ref_name = "Patient"
        fields = [
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
            "merged_into_patient_id",
            "contact_attempts",
            "tags",
            "created_at",
            "updated_at",
        ]


class ActivitySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(
        choices=Activity.Kind.choices,
        help_text="What happened. journey_* entries carry journeyId, treatmentId/Name, pipelineId, stageId/Name and "
        "status (stage changes also fromStageId/Name); task_* entries taskId, journeyId, priority, dueAt, assigneeId; "
        "call and message entries channel, outcome and attempt.",
    )
    summary = serializers.CharField(help_text="A note's body, an archive or lost reason; else empty.")
    data = serializers.DictField(help_text="Ids and names only, never text a user typed.")
    actor_user_id = serializers.UUIDField(source="actor_id", allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "TimelineEntry"


class TimelinePageSerializer(serializers.Serializer):
    items = ActivitySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "TimelinePage"


class ConsentSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    channel = serializers.ChoiceField(choices=MarketingConsent.Channel.choices)
    status = serializers.ChoiceField(choices=MarketingConsent.State.choices)
    source = serializers.CharField(max_length=64)
    evidence = serializers.CharField(max_length=5000, required=False, allow_blank=True, default="")
    recorded_at = serializers.DateTimeField(read_only=True)
    recorded_by_user_id = serializers.UUIDField(source="recorded_by_id", read_only=True, allow_null=True)

    class Meta:
        ref_name = "MarketingConsent"


class ConsentWriteSerializer(StrictSerializer, ConsentSerializer):
    class Meta:
        ref_name = "MarketingConsentWrite"


class MarketingSummarySerializer(serializers.Serializer):
    current = ConsentSerializer(many=True, help_text="The latest consent record per channel.")
    sms_opt_out = serializers.BooleanField()
    email_opt_out = serializers.BooleanField()
    whatsapp_opt_out = serializers.BooleanField()

    class Meta:
        ref_name = "MarketingSummary"


class ConsentHistorySerializer(MarketingSummarySerializer):
    history = ConsentSerializer(many=True, help_text="Every consent record, newest first.")

    class Meta:
        ref_name = "MarketingConsentHistory"


class PatientDetailSerializer(PatientSerializer):
    """Patient plus what embed asks for. pms is null until that area exists
    (deposits and referral are answered by apps.deposits and apps.referrals); the keys appear only when embedded."""

    timeline = TimelinePageSerializer(required=False)
    pms = serializers.DictField(required=False, allow_null=True)
    marketing = MarketingSummarySerializer(required=False)

    class Meta(PatientSerializer.Meta):
        ref_name = "PatientDetail"
        fields = [
            *PatientSerializer.Meta.fields,
            "timeline",
            "pms",
            "marketing",
        ]

    def get_fields(self):
        # journeys and touches are described by the areas that answer them (apps.patients.embeds), in EMBEDS order.
        fields = super().get_fields()
        ordered = {name: field for name, field in fields.items() if name not in EMBEDS}
        for name in EMBEDS:
            embed = patient_embed(name)
            if name in fields:
                ordered[name] = fields[name]
            elif embed is not None:
                ordered[name] = embed.field()
        return ordered

    def to_representation(self, instance):
        data = super().to_representation(instance)
        embedded = self.context.get("embedded", {})
        for key in EMBEDS:
            if key in embedded:
                data[key] = embedded[key]
            else:
                data.pop(key, None)
        return data


class PatientPageSerializer(serializers.Serializer):
    items = PatientListItemSerializer(many=True)
    total = serializers.IntegerField(min_value=0)
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()

    class Meta:
        ref_name = "PatientPage"


# --- list query and PatientFilters ------------------------------------------------------------------------------


class DateTimeRangeSerializer(StrictSerializer):
    """{from, to}, both inclusive, either may be left out."""

    def get_fields(self):
        return {
            "from": serializers.DateTimeField(required=False, allow_null=True),
            "to": serializers.DateTimeField(required=False, allow_null=True),
        }

    class Meta:
        ref_name = "DateTimeRange"


class DateRangeSerializer(StrictSerializer):
    """{from, to} as YYYY-MM-DD, both inclusive, either may be left out."""

    def get_fields(self):
        return {
            "from": serializers.DateField(required=False, allow_null=True, input_formats=["%Y-%m-%d"]),
            "to": serializers.DateField(required=False, allow_null=True, input_formats=["%Y-%m-%d"]),
        }

    class Meta:
        ref_name = "DateRange"


class CountRangeSerializer(StrictSerializer):
    min = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    max = serializers.IntegerField(required=False, allow_null=True, min_value=0)

    class Meta:
        ref_name = "CountRange"


class TagMatchSerializer(StrictSerializer):
    any = serializers.ListField(child=StrictUUIDField(), required=False, max_length=50, help_text="At least one.")
    all = serializers.ListField(child=StrictUUIDField(), required=False, max_length=50, help_text="Every one.")
    none = serializers.ListField(child=StrictUUIDField(), required=False, max_length=50, help_text="None of them.")

    class Meta:
        ref_name = "TagMatch"


class PatientFiltersSerializer(StrictSerializer):
    """PatientFilters: every key optional; keys are combined with AND."""

    status = serializers.ListField(child=serializers.ChoiceField(choices=Status.choices), required=False, max_length=6)
    tag_ids = TagMatchSerializer(required=False)
    lead_source_ids = serializers.ListField(child=StrictUUIDField(), required=False, max_length=100)
    location_ids = serializers.ListField(child=StrictUUIDField(), required=False, max_length=100)
    created_at = DateTimeRangeSerializer(required=False)
    updated_at = DateTimeRangeSerializer(required=False)
    date_of_birth = DateRangeSerializer(required=False)
    contact_attempts = CountRangeSerializer(required=False)
    has_email = serializers.BooleanField(required=False)
    has_phone = serializers.BooleanField(required=False)
    sms_opt_out = serializers.BooleanField(required=False)
    email_opt_out = serializers.BooleanField(required=False)
    whatsapp_opt_out = serializers.BooleanField(required=False)
    gender = serializers.ListField(child=serializers.ChoiceField(choices=Gender.choices), required=False)
    preferred_contact_method = serializers.ListField(
        child=serializers.ChoiceField(choices=ContactMethod.choices), required=False
    )
    city = serializers.CharField(required=False, max_length=120)
    custom_fields = serializers.DictField(
        child=serializers.JSONField(allow_null=True), required=False, help_text="Equality on custom field values."
    )

    class Meta:
        ref_name = "PatientFilters"

    def validate_custom_fields(self, value):
        """Free-form JSON compared with (and, in a saved view, stored in) a JSON column: no NUL and no unpaired
        surrogate in any key or value, which PostgreSQL cannot store (a 500 otherwise)."""
        if has_unstorable_text(value):
            raise serializers.ValidationError(UNSTORABLE_PROBLEM)
        return value


def _strict_boolean(value: str, name: str) -> bool:
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise serializers.ValidationError({name: ["must be true or false"]})


class PatientListQuerySerializer(OffsetQuerySerializer):
    sort = serializers.ChoiceField(choices=selectors.SORT_NAMES, default="createdAt")
    direction = serializers.ChoiceField(choices=["asc", "desc"], default="desc")
    q = serializers.CharField(min_length=1, max_length=200, required=False, trim_whitespace=False)
    filters = serializers.CharField(
        max_length=MAX_FILTERS_LENGTH, required=False, help_text="URL-encoded JSON of PatientFilters."
    )
    embed = serializers.ChoiceField(choices=["tags"], required=False)
    status = serializers.ChoiceField(choices=Status.choices, required=False)
    tag_id = StrictUUIDField(required=False)
    lead_source_id = StrictUUIDField(required=False)
    include_archived = serializers.ChoiceField(choices=["true", "false", "1", "0"], required=False)

    def validate_q(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        if "\x00" in value:
            raise serializers.ValidationError("must not contain NUL")
        return value

    def validate_filters(self, value):
        try:
            parsed = json.loads(value)
        except ValueError:
            raise serializers.ValidationError("is not valid JSON") from None
        if not isinstance(parsed, dict):
            raise serializers.ValidationError("must be a JSON object of PatientFilters")
        from djangorestframework_camel_case.util import underscoreize

        inner = PatientFiltersSerializer(data=underscoreize(parsed, ignore_fields=("custom_fields",)))
        if not inner.is_valid():
            raise serializers.ValidationError(inner.errors)
        return inner.validated_data

    def validate(self, attrs):
        if attrs.get("sort") == selectors.RELEVANCE and not attrs.get("q"):
            raise serializers.ValidationError({"sort": ["relevance needs q"]})
        return attrs

    def to_query(self, *, ids=None) -> selectors.PatientQuery:
        data = self.validated_data
        return selectors.PatientQuery(
            q=data.get("q"),
            sort=data["sort"],
            direction=data["direction"],
            filters=data.get("filters") or {},
            status=data.get("status"),
            tag_id=data.get("tag_id"),
            lead_source_id=data.get("lead_source_id"),
            include_archived=data.get("include_archived") in ("true", "1"),
            ids=ids,
        )


EXPORT_COLUMNS = (
    "id",
    "firstName",
    "lastName",
    "preferredName",
    "title",
    "email",
    "phoneMobile",
    "phoneOther",
    "status",
    "dateOfBirth",
    "gender",
    "fiscalCode",
    "addressLineOne",
    "addressLineTwo",
    "city",
    "province",
    "postalCode",
    "country",
    "language",
    "preferredContactMethod",
    "preferredContactTime",
    "smsOptOut",
    "emailOptOut",
    "whatsappOptOut",
    "contactAttempts",
    "locationId",
    "leadSourceId",
    "tags",
    "createdAt",
    "updatedAt",
    "archivedAt",
)
DEFAULT_EXPORT_COLUMNS = (
    "id",
    "firstName",
    "lastName",
    "email",
    "phoneMobile",
    "status",
    "dateOfBirth",
    "city",
    "postalCode",
    "createdAt",
)


@extend_schema_field({"type": "string", "pattern": r"^[A-Za-z]+(,[A-Za-z]+)*$"})
class ColumnsField(serializers.CharField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        names = value.split(",")
        if not all(name.isalpha() and name.isascii() for name in names):
            raise serializers.ValidationError("must be comma-separated letters-only column names")
        unknown = [n for n in names if n not in EXPORT_COLUMNS]
        if unknown:
            raise serializers.ValidationError(f"unknown column(s): {', '.join(unknown)}")
        return tuple(names)


@extend_schema_field(UUID_LIST_SCHEMA)
class IdsField(serializers.CharField):
    """Comma-separated 36-character UUIDs, at most `max_ids` of them (the schema's maxLength says the same)."""

    def __init__(self, *, max_ids: int, **kwargs):
        self.max_ids = max_ids
        super().__init__(max_length=max_ids * 37 - 1, **kwargs)

    def to_internal_value(self, data):
        from apps.core.uuids import parse_uuid

        value = super().to_internal_value(data)
        parts = value.split(",")
        if len(parts) > self.max_ids:  # checked here: the length validators run on the parsed tuple
            raise serializers.ValidationError(f"at most {self.max_ids} ids")
        parsed = [parse_uuid(p) if len(p) == 36 else None for p in parts]
        if any(p is None for p in parsed):
            raise serializers.ValidationError("must be comma-separated 36-character UUIDs")
        return tuple(dict.fromkeys(parsed))


# The query string's `ids` holds at most this many (36,999 characters, which fit the server's request line beside
# every other parameter at its maximum); POST /patients/export takes a selection of up to EXPORT_ROW_CAP ids.
EXPORT_QUERY_IDS = 1000


class PatientExportQuerySerializer(PatientListQuerySerializer):
    limit = None
    offset = None
    embed = None
    columns = ColumnsField(required=False, max_length=2000, help_text="Comma-separated column names, in order.")
    ids = IdsField(
        required=False,
        max_ids=EXPORT_QUERY_IDS,
        help_text=f"Comma-separated patient ids, at most {EXPORT_QUERY_IDS}; send a longer selection (up to "
        f"{EXPORT_ROW_CAP}) to POST /patients/export.",
    )


class PatientExportRequestSerializer(PatientExportQuerySerializer):
    """POST /patients/export: the query's parameters as a JSON object, with `ids` an array of up to 10000."""

    ids = serializers.ListField(
        child=StrictUUIDField(),
        required=False,
        min_length=1,
        max_length=EXPORT_ROW_CAP,
        help_text=f"The selection to export, 1 to {EXPORT_ROW_CAP} patient ids.",
    )

    def validate_ids(self, value):
        return tuple(dict.fromkeys(value))

    class Meta:
        ref_name = "PatientExportRequest"


# --- bulk bodies ---------------------------------------------------------------------------------------------


def _id_list(**kwargs):
    return serializers.ListField(child=StrictUUIDField(), **kwargs)


class BulkTagsSerializer(StrictSerializer):
    patient_ids = _id_list(min_length=1, max_length=MAX_BULK_IDS)
    add_tag_ids = _id_list(required=False, max_length=MAX_BULK_TAGS)
    remove_tag_ids = _id_list(required=False, max_length=MAX_BULK_TAGS)

    def validate(self, attrs):
        if not attrs.get("add_tag_ids") and not attrs.get("remove_tag_ids"):
            raise serializers.ValidationError({"addTagIds": ["at least one of addTagIds or removeTagIds is required"]})
        return attrs

    class Meta:
        ref_name = "BulkTags"


class BulkLocationSerializer(StrictSerializer):
    patient_ids = _id_list(min_length=1, max_length=MAX_BULK_IDS)
    location_id = StrictUUIDField(allow_null=True, help_text="null clears the location.")

    class Meta:
        ref_name = "BulkLocation"


class BulkArchiveSerializer(StrictSerializer):
    patient_ids = _id_list(min_length=1, max_length=MAX_BULK_IDS)
    reason = serializers.CharField(min_length=1, max_length=2000, required=False)

    class Meta:
        ref_name = "BulkArchive"


class BulkSkippedSerializer(serializers.Serializer):
    patient_id = serializers.UUIDField()
    merged_into_patient_id = serializers.UUIDField()


class BulkResultSerializer(serializers.Serializer):
    updated = serializers.IntegerField(min_value=0, help_text="Patients whose records changed.")
    skipped = BulkSkippedSerializer(many=True, help_text="Merged patients, left untouched.")

    class Meta:
        ref_name = "BulkResult"


# --- single-patient actions -------------------------------------------------------------------------------------


class ArchiveSerializer(StrictSerializer):
    reason = serializers.CharField(min_length=1, max_length=2000, required=False)

    class Meta:
        ref_name = "Archive"


class MergeSerializer(StrictSerializer):
    duplicate_patient_id = StrictUUIDField(
        help_text="The record folded into this one; it then reports mergedIntoPatientId."
    )

    class Meta:
        ref_name = "Merge"


class ContactAttemptSerializer(StrictSerializer):
    channel = serializers.ChoiceField(choices=ContactMethod.choices)
    outcome = serializers.ChoiceField(choices=["no_answer", "voicemail", "reached", "wrong_number", "sent"])

    class Meta:
        ref_name = "ContactAttempt"


class NoteCreateSerializer(StrictSerializer):
    body = serializers.CharField(
        min_length=1, max_length=10000, help_text="The note; shown on the timeline as the entry's summary."
    )

    class Meta:
        ref_name = "NoteCreate"


class ErasureResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    recordings_scheduled = serializers.IntegerField(min_value=0)

    class Meta:
        ref_name = "ErasureResult"


EMBEDS = ("timeline", "journeys", "touches", "pms", "deposits", "referral", "marketing")


class PatientDetailQuerySerializer(StrictSerializer):
    embed = serializers.CharField(
        required=False, max_length=200, help_text=f"Comma-separated, from: {', '.join(EMBEDS)}."
    )

    def validate_embed(self, value):
        names = [n for n in value.split(",")]
        unknown = [n for n in names if n not in EMBEDS]
        if unknown:
            raise serializers.ValidationError(f"unknown embed(s): {', '.join(unknown)}; use {', '.join(EMBEDS)}")
        return tuple(dict.fromkeys(names))


# --- saved views -------------------------------------------------------------------------------------------------


@extend_schema_field(PatientFiltersSerializer)
class PatientFiltersField(serializers.DictField):
    """A PatientFilters object kept as sent (validated, stored as JSON)."""


class SavedViewSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(min_length=1, max_length=120)
    shared = serializers.BooleanField(default=False)
    filters = PatientFiltersField(required=False, default=dict)
    sort = serializers.ChoiceField(choices=selectors.SORT_NAMES, default="createdAt")
    direction = serializers.ChoiceField(choices=["asc", "desc"], default="desc")
    columns = serializers.ListField(child=serializers.ChoiceField(choices=EXPORT_COLUMNS), default=list, max_length=40)
    owner_user_id = serializers.UUIDField(source="owner_id", read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)

    class Meta:
        ref_name = "SavedView"

    def validate_filters(self, value):
        if len(json.dumps(value)) > MAX_FILTERS_LENGTH:
            raise serializers.ValidationError(f"must be at most {MAX_FILTERS_LENGTH} characters as JSON")
        inner = PatientFiltersSerializer(data=value)
        if not inner.is_valid():
            raise serializers.ValidationError(inner.errors)
        return value


class SavedViewWriteSerializer(StrictSerializer, SavedViewSerializer):
    class Meta:
        ref_name = "SavedViewWrite"


class TagListSerializer(serializers.Serializer):
    items = TagSerializer(many=True)

    class Meta:
        ref_name = "TagList"


class SavedViewListSerializer(serializers.Serializer):
    items = SavedViewSerializer(many=True)

    class Meta:
        ref_name = "SavedViewList"
