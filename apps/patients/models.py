from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce, Concat, Lower, Upper

from apps.core.models import TenantModel


class Status(models.TextChoices):
    ENQUIRY = "enquiry"
    LEAD = "lead"
    PATIENT = "patient"
    INACTIVE = "inactive"
    ARCHIVED = "archived"
    DECEASED = "deceased"


SETTABLE_STATUSES = (Status.ENQUIRY, Status.LEAD, Status.PATIENT, Status.INACTIVE, Status.DECEASED)


class Gender(models.TextChoices):
    MALE = "male"
    FEMALE = "female"
    OTHER = "other"
    UNKNOWN = "unknown"


class ContactMethod(models.TextChoices):
    PHONE = "phone"
    SMS = "sms"
    EMAIL = "email"
    WHATSAPP = "whatsapp"


class NamedTenantRecord(TenantModel):
    """A small practice-owned reference record (location, lead source, price list, practitioner)."""

    name = models.CharField(max_length=200)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.name


class Location(NamedTenantRecord):
    pass


class LeadSource(NamedTenantRecord):
    pass


class PriceList(NamedTenantRecord):
    pass


class Practitioner(NamedTenantRecord):
    class Kind(models.TextChoices):
        DENTIST = "dentist"
        HYGIENIST = "hygienist"
        OTHER = "other"

    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.DENTIST)


class Tag(TenantModel):
    name = models.CharField(max_length=64)
    color = models.CharField(max_length=7, blank=True, help_text="#rrggbb")

    class Meta:
        constraints = [
            models.UniqueConstraint(F("organization"), Lower("name"), name="patients_tag_org_name_ci_unique")
        ]

    def __str__(self) -> str:
        return self.name


def digits_of(field: str):
    return models.Func(
        Coalesce(F(field), Value("")), Value(r"[^0-9]"), Value(""), Value("g"), function="REGEXP_REPLACE"
    )


# Everything the typo-tolerant search looks at, lower-cased, phones reduced to digits. A stored generated column
# (immutable expression), so the trigram index is on plain text and every write keeps it current.
SEARCH_DOCUMENT = Lower(
    Concat(
        *[
            part
            for name in (
                "first_name",
                "last_name",
                "preferred_name",
                "email",
                "fiscal_code",
                "address_line1",
                "city",
                "postal_code",
            )
            for part in (Coalesce(F(name), Value("")), Value(" "))
        ],
        digits_of("phone_mobile"),
        Value(" "),
        digits_of("phone_other"),
        output_field=models.TextField(),
    )
)


# The distinct-enough words of the search document (split where pg_trgm splits: at anything not a letter or digit).
# The search matches each query word against the practice's vocabulary (SearchTerm), then finds the patients
# holding one of the similar terms through a GIN index on this array.
SEARCH_WORDS = models.Func(
    models.Func(SEARCH_DOCUMENT, Value(r"[^[:alnum:]]+"), function="regexp_split_to_array"),
    Value(""),
    function="array_remove",
    output_field=ArrayField(models.TextField()),
)


# The search words keyed by practice ('1a2b3c4d:rossi', the first 8 hex digits of organization_id): the database
# function patients_search_keys (migration 0009, IMMUTABLE SQL). Practices sharing a prefix only share posting lists
# (the query still checks organization_id). A GIN index on (organization_id, search_words) intersected the
# practice's whole posting tree with every matched term's; keyed words make each posting list one practice's.
SEARCH_KEYS = models.Func(
    F("organization"),
    F("search_words"),
    function="patients_search_keys",
    output_field=ArrayField(models.TextField()),
)


class Patient(TenantModel):
    # No single-column index: every index below leads with organization_id, and a plain one would tempt the
    # planner away from the search index for small practices.
    organization = models.ForeignKey(
        "accounts.Organization", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    location = models.ForeignKey(Location, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    title = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001 (null clears, per the contract)
    first_name = models.CharField(max_length=200)
    last_name = models.CharField(max_length=200, blank=True, default="")
    preferred_name = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    ethnicity_code = models.CharField(max_length=16, null=True, blank=True)  # noqa: DJ001
    date_of_birth = models.DateField(null=True, blank=True)
    gender = models.CharField(max_length=8, choices=Gender.choices, null=True, blank=True)  # noqa: DJ001
    fiscal_code = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    sts_opposition = models.BooleanField(default=False)
    email = models.EmailField(max_length=254, null=True, blank=True)  # noqa: DJ001
    phone_mobile = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001
    phone_other = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001
    address_line1 = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    address_line2 = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    city = models.CharField(max_length=120, null=True, blank=True)  # noqa: DJ001
    province = models.CharField(max_length=120, null=True, blank=True)  # noqa: DJ001
    postal_code = models.CharField(max_length=20, null=True, blank=True)  # noqa: DJ001
    country = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    language = models.CharField(max_length=35, null=True, blank=True)  # noqa: DJ001
    preferred_contact_method = models.CharField(  # noqa: DJ001
        max_length=8, choices=ContactMethod.choices, null=True, blank=True
    )
    preferred_contact_time = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    sms_opt_out = models.BooleanField(default=False)
    email_opt_out = models.BooleanField(default=False)
    whatsapp_opt_out = models.BooleanField(default=False)
    lead_source = models.ForeignKey(LeadSource, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    referred_by_patient = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    medical_alert = models.TextField(null=True, blank=True)  # noqa: DJ001
    note = models.TextField(null=True, blank=True)  # noqa: DJ001
    default_price_list = models.ForeignKey(
        PriceList, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    dentist_practitioner = models.ForeignKey(
        Practitioner, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    hygienist_practitioner = models.ForeignKey(
        Practitioner, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    custom_fields = models.JSONField(default=dict, blank=True)

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.LEAD)
    archived_at = models.DateTimeField(null=True, blank=True)
    # The status to restore on unarchive.
    status_before_archive = models.CharField(max_length=10, choices=Status.choices, blank=True, default="")
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    merged_at = models.DateTimeField(null=True, blank=True)
    contact_attempts = models.PositiveIntegerField(default=0)
    # Where an imported record came from (apps.transfer: "csv", "dentally", or a name the importer chose) and its id
    # there: a re-run of an import updates the patient it made, never a second one. Both null for other patients.
    external_source = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    external_id = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001

    tags = models.ManyToManyField(Tag, through="PatientTag", related_name="patients")

    search_document = models.GeneratedField(
        expression=SEARCH_DOCUMENT, output_field=models.TextField(), db_persist=True
    )
    search_words = models.GeneratedField(
        expression=SEARCH_WORDS, output_field=ArrayField(models.TextField()), db_persist=True
    )

    class Meta:
        indexes = [
            models.Index(F("organization"), F("created_at").desc(), F("id").desc(), name="patients_org_created_idx"),
            # The list's total counts a practice's active patients: an index-only scan of this small partial index.
            models.Index(
                fields=["organization"],
                condition=Q(archived_at__isnull=True, merged_into__isnull=True),
                name="patients_org_active_idx",
            ),
            models.Index(F("organization"), F("updated_at").desc(), F("id").desc(), name="patients_org_updated_idx"),
            models.Index(F("organization"), Lower("last_name"), F("id"), name="patients_org_last_name_idx"),
            models.Index(fields=["organization", "status"], name="patients_org_status_idx"),
            models.Index(fields=["organization", "email"], name="patients_org_email_idx"),
            # Lead capture matches a sender to a known patient by e-mail (any case) or phone digits.
            models.Index(F("organization"), Upper("email"), name="patients_org_email_upper_idx"),
            models.Index(F("organization"), digits_of("phone_mobile"), name="patients_org_mobile_digits_idx"),
            models.Index(F("organization"), digits_of("phone_other"), name="patients_org_other_digits_idx"),
            models.Index(fields=["organization", "lead_source"], name="patients_org_lead_source_idx"),
            models.Index(fields=["organization", "location"], name="patients_org_location_idx"),
            # Typo-tolerant search, second step: the patients holding one of the matched terms, keyed by practice
            # (SEARCH_KEYS), so a term's posting list holds that practice's patients only. No pending list
            # (fastupdate off): every non-HOT patient update would queue entries there, and each search scans the
            # whole list until a vacuum (measured: 17 ms → 480 ms).
            GinIndex(SEARCH_KEYS, name="patients_search_keys_idx", fastupdate=False),
        ]
        constraints = [
            # One patient per external id and source in a practice (NULLs are distinct: other patients carry none).
            # Not partial, so an import's INSERT ... ON CONFLICT can name it.
            models.UniqueConstraint(
                fields=["organization", "external_source", "external_id"], name="patients_external_id_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()

    @property
    def is_merged(self) -> bool:
        return self.merged_into_id is not None


class SearchTerm(TenantModel):
    """Index maintenance, not business data: the practice's search vocabulary — every word of its patients' search
    documents with the number of patients using it. Kept exact by the database trigger of migration 0005 (insert,
    update, delete of patients, set-based per statement); a word nobody in the practice uses any more is deleted,
    so an erased patient's name or e-mail does not survive here. Never written by application code."""

    organization = models.ForeignKey(
        "accounts.Organization", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    term = models.TextField()
    patients = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "term"], name="patients_searchterm_org_term_unique")
        ]
        indexes = [
            # Typo-tolerant search, first step: the practice's terms similar to a query word (word_similarity).
            GinIndex(
                F("organization"),
                OpClass(F("term"), name="gin_trgm_ops"),
                name="patients_searchterm_trgm_idx",
                fastupdate=False,
            )
        ]

    def __str__(self) -> str:
        return self.term


class SearchPosting(models.Model):
    """Index maintenance, not business data: one narrow row per distinct word of each patient not merged away —
    the practice, the word, whether the patient is active (not archived), the patient's created_at and id. The
    primary key in that order lets a one-word search read the newest matches of each similar word as one short
    index range and count them all index-only (apps.patients.selectors, POSTINGS_WINDOW). Kept exact by the
    database triggers of migration 0011 in the writing transaction; rebuilt by patients_rebuild_derived(). Never
    written by application code. No foreign keys: the patient's own delete removes its postings (the trigger)."""

    pk = models.CompositePrimaryKey("organization_id", "term", "active", "patient_created_at", "patient_id")
    organization_id = models.UUIDField()
    term = models.TextField()
    active = models.BooleanField()
    patient_created_at = models.DateTimeField()
    patient_id = models.UUIDField()

    def __str__(self) -> str:
        return self.term


# The PatientFilters keys a facet row answers (apps.patients.selectors serves a filtered list from them).
FACET_COLUMNS = (
    "updated_at",
    "status",
    "archived",
    "tag_ids",
    "lead_source_id",
    "location_id",
    "gender",
    "preferred_contact_method",
    "sms_opt_out",
    "email_opt_out",
    "whatsapp_opt_out",
    "date_of_birth",
    "contact_attempts",
    "has_email",
    "has_phone",
    "city_upper",
)


class PatientFacet(models.Model):
    """Index maintenance, not business data: one narrow row per patient not merged away, holding what the list's
    filters test (status, archived, tag ids, lead source, location, dates, opt-outs, ...). Its covering index in the
    list's default order lets a filtered list count every match and page the newest without reading a patient
    row or joining the tags (an index-only scan whose filter runs on the index tuples). Kept exact by the database
    triggers of migration 0012 (on patients and on patient tags) in the writing transaction; rebuilt by
    patients_rebuild_derived(). Never written by application code; no foreign keys (the patient's own delete
    removes its row, through the trigger)."""

    patient_id = models.UUIDField(primary_key=True)
    organization_id = models.UUIDField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    status = models.CharField(max_length=10)
    archived = models.BooleanField()
    tag_ids = ArrayField(models.UUIDField())
    lead_source_id = models.UUIDField(null=True)
    location_id = models.UUIDField(null=True)
    gender = models.CharField(max_length=8, null=True)  # noqa: DJ001 (a copy of the patient's column)
    preferred_contact_method = models.CharField(max_length=8, null=True)  # noqa: DJ001
    sms_opt_out = models.BooleanField()
    email_opt_out = models.BooleanField()
    whatsapp_opt_out = models.BooleanField()
    date_of_birth = models.DateField(null=True)
    contact_attempts = models.IntegerField()
    has_email = models.BooleanField()
    has_phone = models.BooleanField()
    city_upper = models.TextField(null=True)  # noqa: DJ001 (UPPER(city), as city__iexact compares it)
    # Not in the covering index (too wide): a custom-field filter counts through its own GIN index.
    custom_fields = models.JSONField()

    class Meta:
        indexes = [
            models.Index(
                fields=["organization_id", "-created_at", "-patient_id"],
                include=list(FACET_COLUMNS),
                name="patients_facet_list_idx",
            ),
            GinIndex(fields=["custom_fields"], opclasses=["jsonb_path_ops"], name="patients_facet_custom_idx"),
        ]

    def __str__(self) -> str:
        return str(self.patient_id)


class PatientCounter(TenantModel):
    """Index maintenance: the practice's exact patient counts (active; not merged), kept transactionally by the
    same trigger, so the unfiltered list's total is one row read instead of a count of the practice."""

    organization = models.ForeignKey(
        "accounts.Organization", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    active = models.IntegerField(default=0)
    unmerged = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization"], name="patients_patientcounter_org_unique")]


class PatientTag(TenantModel):
    patient = models.ForeignKey(Patient, on_delete=models.CASCADE, related_name="tag_links")
    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, related_name="patient_links")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "patient", "tag"], name="patients_patienttag_unique")
        ]
        indexes = [models.Index(fields=["organization", "tag", "patient"], name="patients_tag_patient_idx")]


class Activity(TenantModel):
    """The patient timeline: what happened, newest first. Other areas write their kinds through
    apps.patients.services.timeline_record, in their own transaction; `data` carries ids and the names of stages and
    treatments, never text a user typed (a note's body and an archive or lost reason are the summary)."""

    class Kind(models.TextChoices):
        CREATED = "created"
        ARCHIVED = "archived"
        UNARCHIVED = "unarchived"
        MERGED = "merged"
        STATUS_CHANGED = "status_changed"
        NOTE = "note"
        CALL = "call"
        MESSAGE = "message"
        CONSENT = "consent"
        JOURNEY_CREATED = "journey_created"
        JOURNEY_STAGE_CHANGED = "journey_stage_changed"
        JOURNEY_WON = "journey_won"
        JOURNEY_LOST = "journey_lost"
        JOURNEY_REOPENED = "journey_reopened"
        TASK_CREATED = "task_created"
        TASK_COMPLETED = "task_completed"
        TASK_CANCELLED = "task_cancelled"
        TASK_REOPENED = "task_reopened"
        APPOINTMENT_BOOKED = "appointment_booked"
        APPOINTMENT_RESCHEDULED = "appointment_rescheduled"
        APPOINTMENT_STATUS_CHANGED = "appointment_status_changed"
        APPOINTMENT_CANCELLED = "appointment_cancelled"
        CAPTURED = "captured"
        DEPOSIT_PAID = "deposit_paid"
        DEPOSIT_REFUNDED = "deposit_refunded"

    patient = models.ForeignKey(Patient, on_delete=models.CASCADE, related_name="activities")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    summary = models.TextField(blank=True, default="")
    data = models.JSONField(default=dict, blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        indexes = [
            models.Index(
                F("organization"), F("patient"), F("created_at").desc(), F("id").desc(), name="patients_activity_idx"
            )
        ]


class MarketingConsent(TenantModel):
    """One consent record per change: the latest per channel is the patient's current state."""

    class Channel(models.TextChoices):
        EMAIL = "email"
        SMS = "sms"
        WHATSAPP = "whatsapp"

    class State(models.TextChoices):
        GRANTED = "granted"
        WITHDRAWN = "withdrawn"

    patient = models.ForeignKey(Patient, on_delete=models.CASCADE, related_name="consents")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    status = models.CharField(max_length=16, choices=State.choices)
    source = models.CharField(max_length=64, help_text="Where the consent was given: form, phone, in_person, …")
    evidence = models.TextField(blank=True, default="", help_text="What proves it: wording shown, form id, …")
    recorded_at = models.DateTimeField()
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        indexes = [
            models.Index(
                F("organization"), F("patient"), F("channel"), F("recorded_at").desc(), name="patients_consent_idx"
            )
        ]


class SavedView(TenantModel):
    """A named list configuration: filters, sort and columns. Private to its owner unless shared."""

    name = models.CharField(max_length=120)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    shared = models.BooleanField(default=False)
    filters = models.JSONField(default=dict, blank=True)
    sort = models.CharField(max_length=16, default="createdAt")
    direction = models.CharField(max_length=4, default="desc")
    columns = models.JSONField(default=list, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "owner"], name="patients_savedview_owner_idx")]
        constraints = [
            models.UniqueConstraint(
                F("organization"), F("owner"), Lower("name"), name="patients_savedview_owner_name_unique"
            )
        ]


ACTIVE = Q(archived_at__isnull=True, merged_into__isnull=True)
