"""Reads of patients: the list with filters, typo-tolerant search and stable sorting; one record; the timeline."""

import re
from dataclasses import dataclass, field, replace
from uuid import UUID

from django.contrib.postgres.aggregates import StringAgg
from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    F,
    FloatField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    Window,
    prefetch_related_objects,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Lower, Upper

from apps.core.statements import CompiledRead
from apps.patients.errors import ExportTooLarge
from apps.patients.models import (
    Activity,
    MarketingConsent,
    Patient,
    PatientCounter,
    PatientFacet,
    PatientTag,
    SavedView,
    Status,
    Tag,
    digits_of,
)
from apps.patients.renderers import DETAIL_COLUMNS, LIST_COLUMNS, TAG_COLUMNS

# sort name on the wire → expression; every order ends with id in the same direction so pages are stable.
SORTS = {
    "createdAt": F("created_at"),
    "updatedAt": F("updated_at"),
    "lastName": Lower("last_name"),
    "firstName": Lower("first_name"),
    "status": F("status"),
    "dateOfBirth": F("date_of_birth"),
    "city": Lower("city"),
    "email": Lower("email"),
}
NOT_NULL_SORTS = frozenset({"createdAt", "updatedAt", "lastName", "firstName", "status"})
RELEVANCE = "relevance"
SEARCH_COLUMNS = ("search_document", "search_words")
SORT_NAMES = (*SORTS, RELEVANCE)

_NON_DIGITS = re.compile(r"\D")
_WORD_SPLIT = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class PatientQuery:
    """What a list or export asks for, already validated (api.serializers builds it)."""

    q: str | None = None
    sort: str = "createdAt"
    direction: str = "desc"
    filters: dict = field(default_factory=dict)
    status: str | None = None
    tag_id: UUID | None = None
    lead_source_id: UUID | None = None
    include_archived: bool = False
    ids: tuple[UUID, ...] | None = None


def search_text(q: str) -> str:
    """What the trigram search compares. For an e-mail address only the part before @ counts: every address
    shares the trigrams of its provider's domain, which would match half the practice."""
    text = q.strip().lower()
    local, at, _domain = text.partition("@")
    return local if at and len(local) >= 3 else text


def search_tokens(q: str) -> list[str]:
    """The words of the query, split where the search document is split into search_words (anything not a letter
    or digit). A query that is mostly digits (a phone typed with spaces, dashes or a +) is one digits-only word, as
    phones are in the document."""
    text = search_text(q)
    digits = _NON_DIGITS.sub("", q)
    if len(digits) >= 4 and len(digits) * 2 >= len(text.replace(" ", "")):
        return [digits]
    return list(dict.fromkeys(word for word in _WORD_SPLIT.split(text) if word))


# Terms of the practice similar to one query word: word_similarity(word, term) >= pg_trgm.word_similarity_threshold
# (0.4; `term %> word` is the form the trigram GIN index serves: prefixes and one typo) or similarity(word, term) >=
# pg_trgm.similarity_threshold (0.3, the default: whole-word comparison, which keeps two swapped letters —
# fedreica/federica, satnoro/santoro — that word similarity alone loses); a word of 4+ digits also finds the terms
# containing it (part of a phone number). Each term comes keyed by practice, as SEARCH_KEYS keys the patients' words,
# and the terms come in groups of SEARCH_GROUP_SIZE (patients_search_group, migration 0010): `keys && ANY(groups)`
# is one GIN scan per group, OR-ed into one bitmap. A single scan over all the terms costs matches x terms (a common
# surname's 289 similar terms: 9-13 ms); groups of 32 bring it to about 2 ms.
SEARCH_GROUP_SIZE = 32
_TERMS = (
    'ARRAY(SELECT array_agg("key")::patients_search_group FROM ('
    'SELECT left("organization_id"::text, 8) || \':\' || "term" AS "key", '
    '(row_number() OVER () - 1) / {group_size} AS "part" FROM "patients_searchterm" '
    'WHERE {similar}) AS "terms" GROUP BY "part")'
)
_KEYS_SQL = 'patients_search_keys("patients_patient"."organization_id", "patients_patient"."search_words")'


def _similar(column: str, token: str) -> tuple[str, list]:
    """The condition (and its parameters) under which a word in `column` is similar to one query word."""
    params = [token, token]
    condition = f"{column} %%> %s OR {column} %% %s"
    if token.isdigit() and len(token) >= 4:
        condition += f" OR {column} LIKE %s"
        params.append(f"%{token}%")
    return condition, params


def _similar_terms(organization_id, token: str) -> tuple[str, list]:
    """The WHERE clause (and its parameters) choosing the practice's vocabulary terms similar to one query word."""
    condition, params = _similar('"term"', token)
    return f'"organization_id" = %s AND ({condition})', [organization_id, *params]


# How well a similar word matches a query word: the better of word similarity and whole-word similarity.
_SCORE = "greatest(word_similarity(%s, {column}), similarity(%s, {column}))"


_BEST_WORD = (
    '(SELECT max(CASE WHEN {condition} THEN {score} ELSE 0 END) FROM unnest("patients_patient"."search_words") AS "w")'
)


def _relevance(q: str) -> RawSQL:
    """sort=relevance: for each query word, the score of the patient's best similar word (0 when none), summed.
    Word by word, so a one-word search can rank from the postings (similar terms in score order) with the same
    figures as this expression computes on the patients' words."""
    parts, params = [], []
    for token in query_words(q):
        condition, condition_params = _similar('"w"', token)
        score = _SCORE.format(column='"w"')
        parts.append(_BEST_WORD.format(condition=condition, score=score))
        params += [*condition_params, token, token]
    return RawSQL(" + ".join(parts), params, output_field=FloatField())  # noqa: S611 - constant SQL, bound values


def query_words(q: str) -> list[str]:
    """The words a search ANDs, each matched typo-tolerantly."""
    return search_tokens(q) or [search_text(q)]


def _search_condition(organization_id, q: str) -> Q:
    """Every word of the query (ANDed) must resemble a word of the patient's search document: first the similar
    terms of the practice's vocabulary (small, short strings: a cheap trigram recheck), then the patients holding
    one of them through the GIN index on their practice-keyed words (patients_search_keys_idx), group by group."""
    condition = Q()
    for token in query_words(q):
        similar, params = _similar_terms(organization_id, token)
        groups = _TERMS.format(similar=similar, group_size=SEARCH_GROUP_SIZE)
        # Constant SQL text (the only variation is _TERMS_DIGITS); every value is a bound parameter. The
        # expression is SEARCH_KEYS exactly, so the planner matches it to patients_search_keys_idx.
        overlap = f"{_KEYS_SQL} && ANY({groups})"
        condition &= Q(RawSQL(overlap, params, output_field=BooleanField()))  # noqa: S611
    return condition


def _tag_exists(tag_ids) -> Exists:
    return Exists(PatientTag.objects.unscoped().filter(patient_id=OuterRef("id"), tag_id__in=list(tag_ids)))


class _PatientTests:
    """The conditions that are not a plain comparison of one column, as the patients table answers them."""

    archived = Q(archived_at__isnull=False)
    has_email = Q(email__isnull=False) & ~Q(email="")
    has_phone = (Q(phone_mobile__isnull=False) & ~Q(phone_mobile="")) | (
        Q(phone_other__isnull=False) & ~Q(phone_other="")
    )

    @staticmethod
    def city(value: str) -> Q:
        return Q(city__iexact=value)

    @staticmethod
    def custom_fields(value: dict) -> Q:
        return Q(custom_fields__contains=value)

    @staticmethod
    def tags_any(tag_ids) -> Q:
        return Q(_tag_exists(tag_ids))

    @staticmethod
    def tags_none(tag_ids) -> Q:
        return ~Q(_tag_exists(tag_ids))

    @classmethod
    def tags_all(cls, tag_ids) -> Q:
        condition = Q()
        for tag_id in tag_ids:
            condition &= cls.tags_any([tag_id])
        return condition


class _FacetTests(_PatientTests):
    """The same conditions on patients_patientfacet (PatientFacet), where it differs: flags computed by its trigger,
    the upper-cased city, the tag ids as an array. Custom fields are compared as on the patients table."""

    archived = Q(archived=True)
    has_email = Q(has_email=True)
    has_phone = Q(has_phone=True)

    @staticmethod
    def city(value: str) -> Q:
        return Q(city_upper=Upper(Value(value)))

    @staticmethod
    def tags_any(tag_ids) -> Q:
        return Q(tag_ids__overlap=list(tag_ids))

    @staticmethod
    def tags_none(tag_ids) -> Q:
        return ~Q(tag_ids__overlap=list(tag_ids))

    @staticmethod
    def tags_all(tag_ids) -> Q:
        return Q(tag_ids__contains=list(tag_ids))


def _conditions(query: PatientQuery, tests) -> Q:
    """The list's own parameters and the PatientFilters keys (snake_case here, camelCase on the wire), ANDed, on
    either table: `tests` is _PatientTests or _FacetTests. Merged records, the selection and the search are the
    callers' part."""
    condition = Q()
    if query.status == Status.ARCHIVED:
        condition &= tests.archived
    elif not query.include_archived:
        condition &= ~tests.archived
    if query.status:
        condition &= Q(status=query.status)
    if query.tag_id:
        condition &= tests.tags_any([query.tag_id])
    if query.lead_source_id:
        condition &= Q(lead_source_id=query.lead_source_id)
    filters = query.filters
    simple_in = {
        "status": "status__in",
        "lead_source_ids": "lead_source_id__in",
        "location_ids": "location_id__in",
        "gender": "gender__in",
        "preferred_contact_method": "preferred_contact_method__in",
    }
    for key, lookup in simple_in.items():
        if key in filters:
            condition &= Q(**{lookup: filters[key]})
    for key in ("sms_opt_out", "email_opt_out", "whatsapp_opt_out"):
        if key in filters:
            condition &= Q(**{key: filters[key]})
    for key in ("created_at", "updated_at", "date_of_birth"):
        bounds = filters.get(key) or {}
        if bounds.get("from") is not None:
            condition &= Q(**{f"{key}__gte": bounds["from"]})
        if bounds.get("to") is not None:
            condition &= Q(**{f"{key}__lte": bounds["to"]})
    attempts = filters.get("contact_attempts") or {}
    if attempts.get("min") is not None:
        condition &= Q(contact_attempts__gte=attempts["min"])
    if attempts.get("max") is not None:
        condition &= Q(contact_attempts__lte=attempts["max"])
    for key in ("has_email", "has_phone"):
        if key in filters:
            test = getattr(tests, key)
            condition &= test if filters[key] else ~test
    if filters.get("city"):
        condition &= tests.city(filters["city"])
    if filters.get("custom_fields"):
        condition &= tests.custom_fields(filters["custom_fields"])
    tags = filters.get("tag_ids") or {}
    for key in ("any", "all", "none"):
        if tags.get(key):
            condition &= getattr(tests, f"tags_{key}")(tags[key])
    return condition


def patient_filtered(*, organization, query: PatientQuery) -> QuerySet[Patient]:
    """Rows matching the query, unordered. Merged records never appear; archived ones only when asked for."""
    # The search columns are for the database only: reading them would widen every row (and spill sorts to disk).
    queryset = Patient.objects.for_org(organization).defer(*SEARCH_COLUMNS).filter(merged_into__isnull=True)
    queryset = queryset.filter(_conditions(query, _PatientTests))
    if query.ids is not None:
        queryset = queryset.filter(id__in=query.ids)
    if query.q:
        queryset = queryset.filter(_search_condition(getattr(organization, "pk", organization), query.q))
    return queryset


# A filtered list without a search (nor a selection) counts on the facets
# (patients_patientfacet, migration 0012): an index-only scan of its covering index, filtered on the index tuples.
# In the orders the facets hold (created_at; updated_at, a top-N sort of those tuples) the page's ids come from
# the same index, then the rows by id.
FACET_SORTS = {"createdAt": "created_at", "updatedAt": "updated_at"}


def _facets_serve(query: PatientQuery) -> bool:
    return not query.q and query.ids is None


def _facet_filtered(organization, query: PatientQuery) -> QuerySet[PatientFacet]:
    organization_id = getattr(organization, "pk", organization)
    return PatientFacet.objects.filter(organization_id=organization_id).filter(_conditions(query, _FacetTests))


def _facets_page(organization, query: PatientQuery, *, limit: int, offset: int):
    facets = _facet_filtered(organization, query)
    total = facets.count()
    if query.sort not in FACET_SORTS:
        matching = patient_filtered(organization=organization, query=query)
        return list(patient_ordered(matching, query).values(*LIST_COLUMNS)[offset : offset + limit]), total
    column = FACET_SORTS[query.sort]
    order = (f"-{column}", "-patient_id") if query.direction == "desc" else (column, "patient_id")
    ids = list(facets.order_by(*order).values_list("patient_id", flat=True)[offset : offset + limit])
    return _rows_by_id(organization, ids), total


def patient_ordered(queryset: QuerySet, query: PatientQuery) -> QuerySet:
    descending = query.direction == "desc"
    if query.sort == RELEVANCE:
        queryset = queryset.annotate(relevance=_relevance(query.q))
        expression = F("relevance")
    else:
        expression = SORTS[query.sort]
    if query.sort in NOT_NULL_SORTS and not (query.q or query.filters or query.tag_id or query.ids):
        # Plain order matches the (organization, created_at DESC, id DESC)-style indexes: the page is an index
        # scan. With a search or filters the matching rows are few; a sort of them beats walking the index.
        primary = expression.desc() if descending else expression.asc()
    else:
        primary = expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True)
    return queryset.order_by(primary, F("id").desc() if descending else F("id").asc())


def patient_export_rows(*, organization, query: PatientQuery, sources: list[str], row_cap: int) -> QuerySet:
    """The export's rows as a values_list of `sources` (column names; "tag_names" is the patient's tags joined by
    ";"), in the list's order. More than `row_cap` matching rows raises EXPORT_TOO_LARGE before anything is read."""
    matching = patient_filtered(organization=organization, query=query)
    if matching.order_by()[: row_cap + 1].count() > row_cap:
        raise ExportTooLarge(details={"maxRows": row_cap})
    rows = patient_ordered(matching, replace(query, ids=None))  # ordered as the list would be, selection or not
    if "tag_names" in sources:
        names = (
            PatientTag.objects.unscoped()
            .filter(patient_id=OuterRef("id"))
            .values("patient_id")
            .annotate(names=StringAgg("tag__name", delimiter=";", order_by="tag__name"))
            .values("names")
        )
        rows = rows.annotate(tag_names=Subquery(names))
    return rows.values_list(*sources)


def _tags_prefetch() -> Prefetch:
    return Prefetch("tags", queryset=Tag.unscoped_objects.order_by(Lower("name")))


def with_tags(queryset: QuerySet) -> QuerySet:
    return queryset.prefetch_related(_tags_prefetch())


def patients_for_update(*, organization) -> QuerySet[Patient]:
    """The practice's patients, each row read locked (SELECT ... FOR UPDATE) until the transaction ends."""
    return Patient.objects.for_org(organization).select_for_update()


def patient_tags_loaded(patient: Patient) -> Patient:
    """The patient with its tags fetched (one query), in the order the patient routes render them."""
    prefetch_related_objects([patient], _tags_prefetch())
    return patient


def patient_page(*, organization, query: PatientQuery, limit: int, offset: int, embed_tags: bool):
    """(rows of the page, total, tags): rows are dicts of apps.patients.renderers.LIST_COLUMNS (rendered by
    patient_list_row, no model instances built), tags {patient id: [tag values, name order]} with embed_tags, else
    None. At most three statements (four with tags), whatever the page size.

    Unfiltered, the total is the practice's counter row and the page an index scan. A one-word search in the default
    order pages and counts on the postings; other searches find their matches once: one statement pages them and
    counts them all (count(*) OVER (), computed before the LIMIT) on narrow rows, then the page's rows are read by
    id. Filters without a search count on the facets (index-only), whose index also gives the page's ids in the
    created or updated order; then the rows by id."""
    if query.q and _postings_serve(query, limit=limit, offset=offset):
        rows, total = _postings_page(organization, query, limit=limit, offset=offset)
    elif query.q:
        matching = patient_filtered(organization=organization, query=query)
        rows, total = _search_page(organization, matching, query, limit=limit, offset=offset)
    else:
        total = _plain_total(organization, query)
        if total is None and _facets_serve(query):
            rows, total = _facets_page(organization, query, limit=limit, offset=offset)
        elif total is None:
            matching = patient_filtered(organization=organization, query=query)
            total = matching.count()
            rows = list(patient_ordered(matching, query).values(*LIST_COLUMNS)[offset : offset + limit])
        else:  # unfiltered: the same statement, compiled once per sort, direction, archive choice and page
            shape = (query.sort, query.direction, query.include_archived, offset, limit)
            rows = _PLAIN_PAGE.dicts(shape, getattr(organization, "pk", organization))
    return rows, total, (_tags_of(organization, rows) if embed_tags else None)


def _tags_of(organization, rows: list[dict]) -> dict:
    """{patient id: [tag values in the order the patient routes render them]} for these rows, one query."""
    tags: dict = {row["id"]: [] for row in rows}
    if not tags:
        return tags
    links = (
        PatientTag.objects.for_org(organization)
        .filter(patient_id__in=list(tags))
        .order_by(Lower("tag__name"))
        .values_list("patient_id", *(f"tag__{column}" for column in TAG_COLUMNS))
    )
    for patient_id, *values in links:
        tags[patient_id].append(dict(zip(TAG_COLUMNS, values, strict=True)))
    return tags


# A one-word search in the list's default order (newest or oldest first, nothing else filtered) reads the postings
# (patients_searchposting, migration 0011): per similar term, the first offset + limit postings of active patients
# in that order (one short backward or forward range of the primary key each), merged; and the exact total, every
# posting of those terms counted once per patient, index-only. Its cost follows the page and the number of similar
# terms, not the number of matching patients. Pages past POSTINGS_WINDOW, several words, other sorts and filters take
# the GIN path (_search_page), whose cost follows the matches.
POSTINGS_WINDOW = 500
_POSTINGS_SQL = """
WITH "similar" AS (SELECT ARRAY(SELECT "term" FROM "patients_searchterm" WHERE {similar}) AS "terms")
SELECT
    (SELECT count(DISTINCT p."patient_id") FROM "patients_searchposting" p, "similar" s
     WHERE p."organization_id" = %s AND p."term" = ANY(s."terms") AND p."active") AS "total",
    ARRAY(
        SELECT "patient_id" FROM (
            SELECT DISTINCT "first"."patient_created_at", "first"."patient_id"
            FROM "similar" s CROSS JOIN LATERAL unnest(s."terms") AS w("term") CROSS JOIN LATERAL (
                SELECT p."patient_created_at", p."patient_id" FROM "patients_searchposting" p
                WHERE p."organization_id" = %s AND p."term" = w."term" AND p."active"
                ORDER BY p."patient_created_at" {direction}, p."patient_id" {direction} LIMIT %s
            ) AS "first"
        ) AS "candidates"
        ORDER BY "patient_created_at" {direction}, "patient_id" {direction} LIMIT %s OFFSET %s
    ) AS "ids"
"""


def _postings_serve(query: PatientQuery, *, limit: int, offset: int) -> bool:
    return (
        (query.sort == "createdAt" or (query.sort == RELEVANCE and query.direction == "desc"))
        and offset + limit <= POSTINGS_WINDOW
        and len(query_words(query.q)) == 1
        and not (query.filters or query.status or query.tag_id or query.lead_source_id or query.include_archived)
        and query.ids is None
    )


def _postings_page(organization, query: PatientQuery, *, limit: int, offset: int):
    if query.sort == RELEVANCE:
        return _postings_relevance_page(organization, query, limit=limit, offset=offset)
    organization_id = getattr(organization, "pk", organization)
    similar, params = _similar_terms(organization_id, query_words(query.q)[0])
    direction = "DESC" if query.direction == "desc" else "ASC"
    sql = _POSTINGS_SQL.format(similar=similar, direction=direction)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, organization_id, organization_id, offset + limit, limit, offset])
        total, ids = cursor.fetchone()
    return _rows_by_id(organization, ids), total


_SCORED_TERMS_SQL = (
    'SELECT "term", greatest(word_similarity(%s, "term"), similarity(%s, "term")) AS "score" '
    'FROM "patients_searchterm" WHERE {similar}'
)
_POSTED_SQL = (
    'SELECT DISTINCT "patient_id" FROM "patients_searchposting" '
    'WHERE "organization_id" = %s AND "term" = ANY(%s) AND "active" ORDER BY "patient_id" DESC LIMIT %s'
)
_POSTED_COUNT_SQL = (
    'SELECT count(DISTINCT "patient_id") FROM "patients_searchposting" '
    'WHERE "organization_id" = %s AND "term" = ANY(%s) AND "active"'
)


def _postings_relevance_page(organization, query: PatientQuery, *, limit: int, offset: int):
    """A one-word search by relevance, most relevant first: a patient's relevance is the score of its best similar
    word (_relevance), so the similar terms are taken in score order, a score at a time, and each score's patients
    not already placed follow in id order, until the page is full. It reads the postings of the best terms only,
    and counts all of them index-only, as the default order does."""
    organization_id = getattr(organization, "pk", organization)
    token = query_words(query.q)[0]
    similar, params = _similar_terms(organization_id, token)
    by_score: dict[float, list[str]] = {}
    placed: list = []
    seen: set = set()
    with connection.cursor() as cursor:
        cursor.execute(_SCORED_TERMS_SQL.format(similar=similar), [token, token, *params])
        for term, score in cursor.fetchall():
            by_score.setdefault(score, []).append(term)
        for score in sorted(by_score, reverse=True):
            if len(placed) >= offset + limit:
                break
            # This score's patients, highest ids first: the page needs offset + limit - len(placed) new ones, and
            # at most len(placed) of them were placed already, so offset + limit of them are always enough.
            cursor.execute(_POSTED_SQL, [organization_id, by_score[score], offset + limit])
            fresh = [row[0] for row in cursor.fetchall() if row[0] not in seen]
            placed += fresh
            seen.update(fresh)
        cursor.execute(_POSTED_COUNT_SQL, [organization_id, [term for terms in by_score.values() for term in terms]])
        total = cursor.fetchone()[0]
    return _rows_by_id(organization, placed[offset : offset + limit]), total


def _rows_by_id(organization, ids: list) -> list[dict]:
    """The LIST_COLUMNS rows of these patients, in the order of `ids` (one that has just gone is left out)."""
    by_id = {row["id"]: row for row in Patient.objects.for_org(organization).filter(id__in=ids).values(*LIST_COLUMNS)}
    return [by_id[patient_id] for patient_id in ids if patient_id in by_id]


def _search_page(organization, matching: QuerySet, query: PatientQuery, *, limit: int, offset: int):
    with transaction.atomic(), connection.cursor() as cursor:
        # The planner cannot know how many patients hold a word's terms: for the array of term groups it assumes
        # about a tenth of the table (29,000 of the seed's 300,000 rows, where `santro` matches 4,000), so it hands
        # the bitmap heap scan to parallel workers, whose start-up and tuple queue cost more than the scan
        # (measured 24-34 ms against 9-15 serial). SET LOCAL: for this transaction only.
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        page = list(
            patient_ordered(matching, query)
            .annotate(matches=Window(Count("*")))
            .values_list("id", "matches")[offset : offset + limit]
        )
        if not page:
            # Past the last page (or nothing matches): no row carried the count.
            return [], matching.count() if offset else 0
    return _rows_by_id(organization, [patient_id for patient_id, _ in page]), page[0][1]


def _plain_page(organization_id, sort: str, direction: str, include_archived: bool, offset: int, limit: int):
    query = PatientQuery(sort=sort, direction=direction, include_archived=include_archived)
    matching = patient_filtered(organization=organization_id, query=query)
    return patient_ordered(matching, query).values(*LIST_COLUMNS)[offset : offset + limit]


_PLAIN_PAGE = CompiledRead(_plain_page, placeholders=1, prepared=True)
_COUNTER = CompiledRead(
    lambda organization_id: (
        PatientCounter.objects.for_org(organization_id).order_by("pk").values_list("active", "unmerged")[:1]
    ),
    placeholders=1,
    prepared=True,
)
_ONE_PATIENT = CompiledRead(
    lambda organization_id, patient_id: (
        Patient.objects.for_org(organization_id).filter(id=patient_id).order_by("pk").values(*DETAIL_COLUMNS)[:1]
    ),
    placeholders=2,
    prepared=True,
)


def _plain_total(organization, query: PatientQuery) -> int | None:
    """The total of an unfiltered list, read from the practice's counter row (exact: the trigger of migration
    0005 updates it in the writing transaction) instead of counting the practice. None when the query filters."""
    if query.q or query.filters or query.status or query.tag_id or query.lead_source_id or query.ids is not None:
        return None
    found = _COUNTER.rows((), getattr(organization, "pk", organization))
    if not found:
        return 0
    return found[0][1] if query.include_archived else found[0][0]


def patient_values(*, organization, patient_id) -> tuple[dict, list[dict]] | None:
    """(the patient's DETAIL_COLUMNS values, its tags' TAG_COLUMNS values in name order), or None when the practice
    has no such patient: what apps.patients.renderers.patient_row renders, in two queries, no model instances."""
    found = _ONE_PATIENT.dicts((), getattr(organization, "pk", organization), patient_id)
    if not found:
        return None
    return found[0], _tags_of(organization, found)[found[0]["id"]]


def patient_get(*, organization, patient_id) -> Patient | None:
    return (
        with_tags(Patient.objects.for_org(organization).defer(*SEARCH_COLUMNS))
        .select_related("merged_into")
        .filter(id=patient_id)
        .first()
    )


def timeline(*, organization, patient: Patient) -> QuerySet[Activity]:
    return Activity.objects.for_org(organization).filter(patient=patient).order_by("-created_at", "-id")


def consents_current(*, organization, patient: Patient) -> list[MarketingConsent]:
    """The latest record per channel: the patient's current marketing consent."""
    return list(
        MarketingConsent.objects.for_org(organization)
        .filter(patient=patient)
        .order_by("channel", "-recorded_at", "-id")
        .distinct("channel")
    )


def consent_history(*, organization, patient: Patient) -> QuerySet[MarketingConsent]:
    return MarketingConsent.objects.for_org(organization).filter(patient=patient).order_by("-recorded_at", "-id")


def tag_list(*, organization) -> QuerySet[Tag]:
    return Tag.objects.for_org(organization).order_by(Lower("name"), "id")


def saved_views_visible(*, organization, user) -> QuerySet[SavedView]:
    return SavedView.objects.for_org(organization).filter(Q(owner=user) | Q(shared=True)).order_by(Lower("name"), "id")


def _phone_digits(value: str) -> str:
    """A phone number reduced to its digits; an international "00" prefix is the same as "+"."""
    digits = re.sub(r"\D", "", value or "")
    return digits[2:] if digits.startswith("00") else digits


def patient_match(*, organization, email: str | None, phone: str | None) -> Patient | None:
    """The practice's patient with this e-mail (any case) or phone (digits compared, "00" as "+"), following a
    merge to its survivor. Active patients win over archived ones; the oldest wins among equals."""
    conditions = Q()
    if email:
        conditions |= Q(email_upper=email.upper())
    digits = _phone_digits(phone or "")
    if digits:
        # The stored numbers are compared by their digits as written: "+39 …" and "0039 …" are the same number.
        spellings = [digits, f"00{digits}"]
        conditions |= Q(mobile_digits__in=spellings) | Q(other_digits__in=spellings)
    if not conditions:
        return None
    candidate = (
        Patient.objects.for_org(organization)
        .annotate(
            email_upper=Upper("email"),
            mobile_digits=digits_of("phone_mobile"),
            other_digits=digits_of("phone_other"),
        )
        .filter(conditions)
        .order_by(F("archived_at").asc(nulls_first=True), "created_at", "id")
        .first()
    )
    hops = 0
    while candidate is not None and candidate.merged_into_id is not None and hops < 5:
        candidate = Patient.objects.for_org(organization).filter(id=candidate.merged_into_id).first()
        hops += 1
    return candidate
