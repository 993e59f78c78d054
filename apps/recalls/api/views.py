"""Routes of recalls (tag Recalls) and the waitlist (tag Waitlist), in the clinical workspace.

Every route is a clinical route (`clinical = True`: session-only; 403 PMS_WORKSPACE_UNAVAILABLE while the practice
has no clinical workspace, then 403 transport_not_allowed to API keys and OAuth tokens) and needs pms:diary (the
front desk runs recalls and the waitlist; owners, managers and clinicians too). Another practice's id in a path
answers 404, in a body or query 400."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.core.pagination import offset_page
from apps.core.permissions import CLINICAL_AREA
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.patients.public import Patient
from apps.recalls import selectors, services, waitlist
from apps.recalls.api import serializers as s
from apps.recalls.models import (
    OPEN_RECALL_STATUSES,
    OfferStatus,
    Recall,
    RecallStatus,
    RecallType,
    WaitlistEntry,
    WaitlistOffer,
)

RECALL_TAGS = ["Recalls"]
WAITLIST_TAGS = ["Waitlist"]
ACCESS = (
    "Permission pms:diary, in a signed-in session only: API keys and OAuth tokens get 403 transport_not_allowed, and "
    "any caller 403 PMS_WORKSPACE_UNAVAILABLE while the practice has no clinical workspace."
)
CONFLICT = OpenApiResponse(ApiErrorSerializer, description="Conflict (see the description).")


class ClinicalDiaryView(BaseApiView):
    clinical = True
    scope_area = CLINICAL_AREA
    permission = "pms:diary"


def _recall_response(organization, recall_id, status: int = 200) -> Response:
    row = selectors.recall_detail(organization=organization, recall_id=recall_id)
    return Response(s.RecallDetailSerializer(row).data, status=status)


# --- recall types -----------------------------------------------------------------------------------------------------


class RecallTypeListView(ClinicalDiaryView):
    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="recall_types_list",
        parameters=[s.RecallTypeQuerySerializer],
        responses={200: s.RecallTypeListSerializer},
        summary="The practice's recall types",
        description=f"{ACCESS} {{items}} by name. The first read seeds Exam and Hygiene (6 months, reminders 14 days "
        "before, on the day and 14 days after) when the practice has no type yet. includeArchived=true lists "
        "archived types too.",
    )
    def get(self, request):
        query = self.parse_query(s.RecallTypeQuerySerializer).validated_data
        services.recall_types_seed(organization=self.organization)
        rows = selectors.recall_types_of(
            organization=self.organization, include_archived=query["include_archived"] == "true"
        )
        return Response({"items": s.RecallTypeSerializer(rows, many=True).data})

    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="recall_types_create",
        request=s.RecallTypeWriteSerializer,
        responses={201: s.RecallTypeSerializer, 409: CONFLICT},
        summary="Add a recall type",
        description=f"{ACCESS} name (unique in the practice: 409 RECALL_TYPE_NAME_TAKEN), intervalMonths (1 to "
        "120: the next recall after a visit), appointmentType (the diary's type that completes it), "
        "reminderOffsets (days relative to the due date).",
    )
    def post(self, request):
        data = self.parse_body(s.RecallTypeWriteSerializer).validated_data
        recall_type = services.recall_type_create(organization=self.organization, data=dict(data))
        return Response(s.RecallTypeSerializer(recall_type).data, status=201)


class RecallTypeDetailView(ClinicalDiaryView):
    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="recall_types_read",
        responses={200: s.RecallTypeSerializer},
        summary="Read one recall type",
        description=f"{ACCESS} Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.RecallTypeSerializer(self.get_tenant_object(RecallType, id)).data)

    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="recall_types_update",
        request=s.RecallTypePatchSerializer,
        responses={200: s.RecallTypeSerializer, 409: CONFLICT},
        summary="Change a recall type",
        description=f"{ACCESS} Any of name, intervalMonths, appointmentType, reminderOffsets, archived (an archived "
        "type keeps its recalls and reminders but cannot be set on new ones). New reminder offsets apply to due "
        "recalls from the next reminder sweep; an offset already attempted for a due date is never sent again.",
    )
    def patch(self, request, id):
        self.get_tenant_object(RecallType, id)
        data = self.parse_body(s.RecallTypePatchSerializer).validated_data
        recall_type = services.recall_type_update(organization=self.organization, recall_type_id=id, data=dict(data))
        return Response(s.RecallTypeSerializer(recall_type).data)


# --- recalls ----------------------------------------------------------------------------------------------------------


def _statuses(value: str, everything: tuple[str, ...], open_statuses) -> tuple[str, ...]:
    if value == "all":
        return everything
    if value == "open":
        return tuple(open_statuses)
    return (value,)


class PatientRecallsView(ClinicalDiaryView):
    error_statuses = ("409",)

    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="patient_recalls_list",
        parameters=[s.PatientRecallQuerySerializer],
        responses={200: s.PatientRecallListSerializer},
        summary="A patient's recalls",
        description=f"{ACCESS} {{items}}, soonest due first; status open, one status or all (the default).",
    )
    def get(self, request, id):
        patient = self.get_tenant_object(Patient, id)
        query = self.parse_query(s.PatientRecallQuerySerializer).validated_data
        statuses = _statuses(query["status"], tuple(RecallStatus.values), OPEN_RECALL_STATUSES)
        rows, _ = selectors.recall_rows(
            organization=self.organization,
            query=selectors.RecallQuery(status=statuses, patient_id=patient.id),
            limit=500,
            offset=0,
        )
        return Response({"items": s.RecallSerializer(rows, many=True).data})

    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="patient_recalls_set",
        request=s.RecallSetSerializer,
        responses={200: s.RecallDetailSerializer, 201: s.RecallDetailSerializer, 409: CONFLICT},
        summary="Set when a patient is due for a recall type",
        description=f"{ACCESS} recallTypeId, dueDate, practitionerId (optional). The patient's open (due or booked) "
        "recall of that type moves to the new date (200), or a new due recall is made (201). Reminders follow the "
        "type's offsets from the new date. A merged patient answers 409 PATIENT_MERGED.",
    )
    def post(self, request, id):
        patient = self.get_tenant_object(Patient, id)
        data = self.parse_body(s.RecallSetSerializer).validated_data
        result = services.recall_set(
            organization=self.organization,
            user=request.user,
            patient=patient,
            recall_type=data["recall_type_id"],
            due_date=data["due_date"],
            practitioner=data.get("practitioner_id"),
        )
        return _recall_response(self.organization, result.recall.id, status=201 if result.created else 200)


class RecallListView(ClinicalDiaryView):
    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="recalls_list",
        parameters=[s.RecallQuerySerializer],
        responses={200: s.RecallPageSerializer},
        summary="The practice's recall list",
        description=f"{ACCESS} {{items, total, limit, offset}}, soonest due first, in one query. Filters: status "
        "(open: due and booked, the default; one status; all), dueFrom and dueTo (inclusive), overdue=true (due "
        "recalls whose date has passed, practice time), recallTypeId, practitionerId.",
    )
    def get(self, request):
        query = self.parse_query(s.RecallQuerySerializer).validated_data
        statuses = _statuses(query["status"], tuple(RecallStatus.values), OPEN_RECALL_STATUSES)
        rows, total = selectors.recall_rows(
            organization=self.organization,
            query=selectors.RecallQuery(
                status=statuses,
                due_from=query.get("due_from"),
                due_to=query.get("due_to"),
                overdue=query.get("overdue") == "true",
                recall_type_id=getattr(query.get("recall_type_id"), "id", None),
                practitioner_id=getattr(query.get("practitioner_id"), "id", None),
            ),
            limit=query["limit"],
            offset=query["offset"],
        )
        return offset_page(
            s.RecallSerializer(rows, many=True).data, total, limit=query["limit"], offset=query["offset"]
        )


class RecallDetailView(ClinicalDiaryView):
    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="recalls_read",
        responses={200: s.RecallDetailSerializer},
        summary="Read one recall with its reminder attempts",
        description=f"{ACCESS} reminders: each attempt (sent with its messageId, or skipped with the reason), oldest "
        "first.",
    )
    def get(self, request, id):
        self.get_tenant_object(Recall, id)
        return _recall_response(self.organization, id)


class RecallBookView(ClinicalDiaryView):
    error_statuses = ("409",)

    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="recalls_book",
        request=s.RecallBookSerializer,
        responses={200: s.RecallDetailSerializer, 409: CONFLICT},
        summary="Link the appointment that books a recall",
        description=f"{ACCESS} appointmentId: an active appointment of the recall's patient. due → booked (reminders "
        "stop); a booked recall takes the new appointment. If that appointment is cancelled or missed the recall is "
        "due again. A completed or cancelled recall answers 409 RECALL_TRANSITION_NOT_ALLOWED.",
    )
    def post(self, request, id):
        self.get_tenant_object(Recall, id)
        data = self.parse_body(s.RecallBookSerializer).validated_data
        services.recall_book(
            organization=self.organization, user=request.user, recall_id=id, appointment=data["appointment_id"]
        )
        return _recall_response(self.organization, id)


class RecallCancelView(ClinicalDiaryView):
    error_statuses = ("409",)

    @extend_schema(
        tags=RECALL_TAGS,
        operation_id="recalls_cancel",
        request=None,
        responses={200: s.RecallDetailSerializer, 409: CONFLICT},
        summary="Cancel a recall",
        description=f"{ACCESS} No body. A due or booked recall is cancelled (no more reminders); repeating is "
        "harmless; a completed one answers 409 RECALL_TRANSITION_NOT_ALLOWED.",
    )
    def post(self, request, id):
        self.get_tenant_object(Recall, id)
        services.recall_cancel(organization=self.organization, user=request.user, recall_id=id)
        return _recall_response(self.organization, id)


# --- waitlist ---------------------------------------------------------------------------------------------------------


class WaitlistView(ClinicalDiaryView):
    error_statuses = ("409",)

    @extend_schema(
        tags=WAITLIST_TAGS,
        operation_id="waitlist_list",
        parameters=[s.WaitlistQuerySerializer],
        responses={200: s.WaitlistPageSerializer},
        summary="The practice's waitlist",
        description=f"{ACCESS} {{items, total, limit, offset}}, most urgent first (priority 1 first, then the longest "
        "waiting). Filters: status (open: waiting and offered, the default; one status; all), appointmentType, "
        "practitionerId (entries for that practitioner or any), patientId.",
    )
    def get(self, request):
        query = self.parse_query(s.WaitlistQuerySerializer).validated_data
        statuses = _statuses(query["status"], ("waiting", "offered", "booked", "removed"), ("waiting", "offered"))
        rows, total = selectors.waitlist_rows(
            organization=self.organization,
            query=selectors.WaitlistQuery(
                status=statuses,
                appointment_type=query.get("appointment_type"),
                practitioner_id=getattr(query.get("practitioner_id"), "id", None),
                patient_id=getattr(query.get("patient_id"), "id", None),
            ),
            limit=query["limit"],
            offset=query["offset"],
        )
        return offset_page(
            s.WaitlistEntrySerializer(rows, many=True).data, total, limit=query["limit"], offset=query["offset"]
        )

    @extend_schema(
        tags=WAITLIST_TAGS,
        operation_id="waitlist_create",
        request=s.WaitlistEntryCreateSerializer,
        responses={201: s.WaitlistEntrySerializer, 409: CONFLICT},
        summary="Put a patient on the waitlist",
        description=f"{ACCESS} patientId, appointmentType; optional practitionerId, preferredDays (0 = Monday), "
        "preferredFrom and preferredUntil (HH:MM practice time), earliestDate, latestDate, appointmentId (the "
        "patient's active appointment they want earlier), priority (1 most urgent … 5, default 3), notes (stored "
        "encrypted). When a matching slot frees the entry is offered it. A merged patient answers 409 "
        "PATIENT_MERGED.",
    )
    def post(self, request):
        data = self.parse_body(s.WaitlistEntryCreateSerializer).validated_data
        entry = waitlist.waitlist_entry_create(organization=self.organization, user=request.user, data=_entry(data))
        return Response(s.WaitlistEntrySerializer(entry).data, status=201)


def _entry(data) -> dict:
    renamed = {"patient_id": "patient", "practitioner_id": "practitioner", "appointment_id": "appointment"}
    return {renamed.get(key, key): value for key, value in data.items()}


class WaitlistEntryView(ClinicalDiaryView):
    error_statuses = ("409",)

    def entry(self, id) -> WaitlistEntry:
        return self.get_tenant_object(
            WaitlistEntry, id, queryset=WaitlistEntry.objects.for_org(self.organization).select_related("patient")
        )

    @extend_schema(
        tags=WAITLIST_TAGS,
        operation_id="waitlist_read",
        responses={200: s.WaitlistEntrySerializer},
        summary="Read one waitlist entry",
        description=f"{ACCESS} Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.WaitlistEntrySerializer(self.entry(id)).data)

    @extend_schema(
        tags=WAITLIST_TAGS,
        operation_id="waitlist_update",
        request=s.WaitlistEntryPatchSerializer,
        responses={200: s.WaitlistEntrySerializer, 409: CONFLICT},
        summary="Change a waitlist entry",
        description=f"{ACCESS} Any field of the entry but the patient. A booked or removed entry answers 409 "
        "WAITLIST_ENTRY_CLOSED.",
    )
    def patch(self, request, id):
        self.entry(id)
        data = self.parse_body(s.WaitlistEntryPatchSerializer).validated_data
        waitlist.waitlist_entry_update(
            organization=self.organization, user=request.user, entry_id=id, data=_entry(data)
        )
        return Response(s.WaitlistEntrySerializer(self.entry(id)).data)

    @extend_schema(
        tags=WAITLIST_TAGS,
        operation_id="waitlist_remove",
        responses={200: s.WaitlistEntrySerializer, 409: CONFLICT},
        summary="Take a patient off the waitlist",
        description=f"{ACCESS} The entry becomes removed (kept for the record) and its open offer closes; repeating "
        "is harmless; a booked entry answers 409 WAITLIST_ENTRY_CLOSED.",
    )
    def delete(self, request, id):
        self.entry(id)
        waitlist.waitlist_entry_remove(organization=self.organization, user=request.user, entry_id=id)
        return Response(s.WaitlistEntrySerializer(self.entry(id)).data)


class OfferListView(ClinicalDiaryView):
    @extend_schema(
        tags=WAITLIST_TAGS,
        operation_id="waitlist_offers_list",
        parameters=[s.OfferQuerySerializer],
        responses={200: s.OfferPageSerializer},
        summary="Offers of freed slots",
        description=f"{ACCESS} {{items, total, limit, offset}}, soonest slot first; status open (the default), one "
        "status or all. An offer holds a freed slot for one waitlist entry until expiresAt; the patient was told "
        "through conversations (messageId) unless the pipeline skipped it (messageSkippedReason).",
    )
    def get(self, request):
        query = self.parse_query(s.OfferQuerySerializer).validated_data
        statuses = tuple(OfferStatus.values) if query["status"] == "all" else (query["status"],)
        rows = selectors.offers_of(organization=self.organization, status=statuses)
        page = rows[query["offset"] : query["offset"] + query["limit"]]
        return offset_page(
            s.OfferSerializer(page, many=True).data, rows.count(), limit=query["limit"], offset=query["offset"]
        )


class OfferAcceptView(ClinicalDiaryView):
    error_statuses = ("409",)

    @extend_schema(
        tags=WAITLIST_TAGS,
        operation_id="waitlist_offers_accept",
        request=None,
        responses={200: s.OfferSerializer, 409: CONFLICT},
        summary="Accept an offer: book the slot",
        description=f"{ACCESS} No body. Books the slot for the patient (appointmentId in the answer); the entry is "
        "booked, the slot's other open offers close, and the appointment the entry wanted earlier is cancelled. "
        "A slot taken meanwhile answers 409 APPOINTMENT_CONFLICT and the offer closes (the entry waits again); an "
        "offer no longer open (or expired) answers 409 WAITLIST_OFFER_CLOSED.",
    )
    def post(self, request, id):
        self.get_tenant_object(WaitlistOffer, id)
        offer = waitlist.waitlist_offer_accept(organization=self.organization, user=request.user, offer_id=id)
        return Response(s.OfferSerializer(offer).data)


class OfferDeclineView(ClinicalDiaryView):
    error_statuses = ("409",)

    @extend_schema(
        tags=WAITLIST_TAGS,
        operation_id="waitlist_offers_decline",
        request=None,
        responses={200: s.OfferSerializer, 409: CONFLICT},
        summary="Decline an offer",
        description=f"{ACCESS} No body. The patient said no: the entry waits again and the slot is offered to the "
        "next matching entry. An offer no longer open answers 409 WAITLIST_OFFER_CLOSED.",
    )
    def post(self, request, id):
        self.get_tenant_object(WaitlistOffer, id)
        offer = waitlist.waitlist_offer_decline(organization=self.organization, user=request.user, offer_id=id)
        return Response(s.OfferSerializer(offer).data)
