"""Routes of the clinical workspace hub.

Clinical routes (`clinical = True`, scope area clinical): the day list, booking from the clinical diary, the
patient record, the PMS inbox, chairs, moving an appointment along the day and clinical storage. They accept a
signed-in member's session only: 403 PMS_WORKSPACE_UNAVAILABLE to any credential while the practice has no clinical
workspace, then 403 transport_not_allowed to API keys and OAuth tokens. Then the role permission: pms:diary (the
diary side), clinical:read / clinical:write (the record and its documents), pms:manage (changing chairs).

The practitioner ↔ member link is a practice setting (settings:read / settings:update, scope settings), not clinical.
Another practice's id in a path answers 404, in a body or query 400."""

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from apps.clinical import documents, selectors, services
from apps.clinical.api import renderers
from apps.clinical.api import serializers as s
from apps.clinical.errors import DocumentTooLarge, DocumentTypeRefused
from apps.clinical.models import Chair, ClinicalDocument
from apps.clinical.records import record_sections
from apps.core.errors import ValidationFailed
from apps.core.naming import to_camel
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.permissions import CLINICAL_AREA
from apps.core.views import BaseApiView
from apps.patients.public import Patient, PatientMerged, Practitioner

CLINICAL_403 = (
    " 403 PMS_WORKSPACE_UNAVAILABLE while the practice has no clinical workspace; 403 transport_not_allowed to an "
    "API key or OAuth token (a signed-in session only); 403 PERMISSION_DENIED to a role without the permission."
)
STORAGE_TAGS = ["Clinical storage"]
PMS_TAGS = ["pms"]


class ClinicalView(BaseApiView):
    clinical = True
    scope_area = CLINICAL_AREA


# --- practitioner ↔ member -------------------------------------------------------------------------------------------


def _link_body(practitioner, link) -> dict:
    user = link.user if link else None
    return {
        "practitioner_id": practitioner.id,
        "user": {"id": user.id, "name": user.name, "email": user.email} if user else None,
    }


class PractitionerUserLinkView(BaseApiView):
    permission = {"GET": "settings:read", "POST": "settings:update", "DELETE": "settings:update"}
    scope_area = "settings"
    error_statuses = ("409",)

    def practitioner(self, id) -> Practitioner:
        return self.get_tenant_object(Practitioner, id)

    @extend_schema(
        tags=["settings"],
        operation_id="settings_practitioners_user_link_read",
        responses={200: s.PractitionerLinkSerializer},
        summary="The member account a practitioner profile is linked to",
        description="Permission settings:read. user is null when the profile is not linked. Another practice's "
        "practitioner answers 404.",
    )
    def get(self, request, id):
        practitioner = self.practitioner(id)
        link = selectors.link_of_practitioner(organization=self.organization, practitioner_id=practitioner.id)
        return Response(s.PractitionerLinkSerializer(_link_body(practitioner, link)).data)

    @extend_schema(
        tags=["settings"],
        operation_id="settings_practitioners_user_link",
        request=s.PractitionerLinkWriteSerializer,
        responses={200: s.PractitionerLinkSerializer},
        summary="Tie a practitioner profile to a member account",
        description="Permission settings:update. Body {userId}: a member of this practice (400 otherwise, also for "
        "another practice's member). One member per practitioner and one practitioner per member: 409 "
        "PRACTITIONER_ALREADY_LINKED when the profile is linked to someone else, 409 MEMBER_ALREADY_LINKED when "
        "the member is linked to another profile (unlink first). Linking the same pair again answers 200. The "
        "day list shows the linked member; clinical notes and prescriptions know their clinician from it.",
    )
    def post(self, request, id):
        practitioner = self.practitioner(id)
        data = self.parse_body(s.PractitionerLinkWriteSerializer).validated_data
        user = selectors.member_of_practice(organization=self.organization, user_id=data["user_id"])
        if user is None:
            raise ValidationFailed.for_field("userId", "is not a member of this practice")
        link = services.practitioner_link(
            organization=self.organization, actor=request.user, practitioner=practitioner, user=user
        )
        return Response(s.PractitionerLinkSerializer(_link_body(practitioner, link)).data)

    @extend_schema(
        tags=["settings"],
        operation_id="settings_practitioners_user_unlink",
        responses={204: None},
        summary="Unlink a practitioner profile from its member account",
        description="Permission settings:update. 204; 404 when the profile is not linked (or is another practice's).",
    )
    def delete(self, request, id):
        services.practitioner_unlink(
            organization=self.organization, actor=request.user, practitioner=self.practitioner(id)
        )
        return Response(status=204)


# --- chairs ----------------------------------------------------------------------------------------------------------


class ChairListView(ClinicalView):
    permission = {"GET": "pms:diary", "POST": "pms:manage"}
    error_statuses = ("409",)

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_chairs_list",
        parameters=[s.ChairListQuerySerializer],
        responses={200: s.ChairListSerializer},
        summary="The practice's surgery chairs",
        description="Permission pms:diary. By location, then position and name; locationId narrows to one location "
        "(another practice's: 400); includeInactive=false leaves out inactive chairs." + CLINICAL_403,
    )
    def get(self, request):
        query = self.parse_query(s.ChairListQuerySerializer).validated_data
        chairs = selectors.chairs_of(
            organization=self.organization,
            location_id=getattr(query.get("location"), "id", None),
            include_inactive=query.get("include_inactive") != "false",
        )
        return Response({"items": s.ChairSerializer(chairs, many=True).data})

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_chairs_create",
        request=s.ChairCreateSerializer,
        responses={201: s.ChairSerializer},
        summary="Add a surgery chair to a location",
        description="Permission pms:manage. locationId (a location of this practice, not archived), name (unique "
        "per location ignoring case: 409 CHAIR_NAME_TAKEN), active, position (order in the day list)." + CLINICAL_403,
    )
    def post(self, request):
        data = self.parse_body(s.ChairCreateSerializer).validated_data
        chair = services.chair_create(organization=self.organization, actor=request.user, data=dict(data))
        return Response(s.ChairSerializer(chair).data, status=201)


class ChairDetailView(ClinicalView):
    permission = {"GET": "pms:diary", "PATCH": "pms:manage", "DELETE": "pms:manage"}
    error_statuses = ("409",)

    def chair(self, id) -> Chair:
        return self.get_tenant_object(
            Chair, id, queryset=Chair.objects.for_org(self.organization).select_related("location")
        )

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_chairs_read",
        responses={200: s.ChairSerializer},
        summary="One surgery chair",
        description="Permission pms:diary. Another practice's chair answers 404." + CLINICAL_403,
    )
    def get(self, request, id):
        return Response(s.ChairSerializer(self.chair(id)).data)

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_chairs_update",
        request=s.ChairUpdateSerializer,
        responses={200: s.ChairSerializer},
        summary="Rename, move, reorder, deactivate or reactivate a chair",
        description="Permission pms:manage. Any subset of locationId, name, active, position. An inactive chair "
        "keeps its appointments and takes no new ones." + CLINICAL_403,
    )
    def patch(self, request, id):
        chair = self.chair(id)
        data = self.parse_body(s.ChairUpdateSerializer, partial=True).validated_data
        chair = services.chair_update(organization=self.organization, actor=request.user, chair=chair, data=data)
        return Response(s.ChairSerializer(self.chair(chair.id)).data)

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_chairs_delete",
        responses={204: None},
        summary="Delete a surgery chair",
        description="Permission pms:manage. 409 CHAIR_IN_USE while an appointment still to come sits in it (move "
        "it, or deactivate the chair instead); past appointments keep no chair." + CLINICAL_403,
    )
    def delete(self, request, id):
        services.chair_delete(organization=self.organization, actor=request.user, chair=self.chair(id))
        return Response(status=204)


# --- the day list ----------------------------------------------------------------------------------------------------


def _named(id, name):
    return {"id": id, "name": name} if id else None


class DayListView(ClinicalView):
    permission = "pms:diary"

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_day_list",
        parameters=[s.DayListQuerySerializer],
        responses={200: s.DayListSerializer},
        summary="The clinical day list: the day's appointments per practitioner and chair",
        description="Permission pms:diary. date is the practice's local date (its timezone; today when left out); "
        "practitionerId and locationId narrow it (another practice's id: 400). Cancelled appointments are left "
        "out. Each practitioner (by name, with their linked member) lists their chairs (by position, then name; "
        "appointments in no chair last) and each chair its appointments by start: patient name, times, type, "
        "status, arrival (arrivedAt, seatedAt, completedAt, waitingMinutes). No clinical content." + CLINICAL_403,
    )
    def get(self, request):
        query = self.parse_query(s.DayListQuerySerializer).validated_data
        day = query.get("date") or selectors.practice_today(self.organization)
        rows = selectors.day_list_rows(
            organization=self.organization,
            day=day,
            practitioner_id=getattr(query.get("practitioner"), "id", None),
            location_id=getattr(query.get("location"), "id", None),
        )
        return Response(renderers.day_list(rows, day=day, tz_name=str(selectors.practice_timezone(self.organization))))


def _visit_body(appointment, visit) -> dict:
    chair = visit.chair if visit is not None else None
    return {
        "appointment_id": appointment.id,
        "status": appointment.status,
        "chair": _named(chair.id, chair.name) if chair else None,
        "arrived_at": getattr(visit, "arrived_at", None),
        "seated_at": getattr(visit, "seated_at", None),
        "completed_at": getattr(visit, "completed_at", None),
    }


class AppointmentProgressView(ClinicalView):
    permission = "pms:diary"
    error_statuses = ("409",)

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_appointments_progress",
        request=s.ProgressSerializer,
        responses={200: s.VisitSerializer},
        summary="Mark a patient arrived, seated or done",
        description="Permission pms:diary. step: arrived (the appointment becomes arrived; the arrival time starts "
        "the waiting minutes), seated (optionally in chairId, an active chair of the appointment's location; an "
        "appointment not yet arrived arrives now too) or completed (the appointment becomes completed). Status "
        "changes go through the appointments app (appointment.status_changed events, the patient's timeline). A "
        "status that does not allow the step: 409 APPOINTMENT_TRANSITION_NOT_ALLOWED. Repeating a step keeps its "
        "first time. Another practice's appointment: 404; its chair: 400." + CLINICAL_403,
    )
    def post(self, request, id):
        data = self.parse_body(s.ProgressSerializer).validated_data
        appointment, visit = services.appointment_progress(
            organization=self.organization,
            actor=request.user,
            appointment_id=id,
            step=data["step"],
            chair=data.get("chair"),
        )
        return Response(s.VisitSerializer(_visit_body(appointment, visit)).data)


class AppointmentChairView(ClinicalView):
    permission = "pms:diary"

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_appointments_chair",
        request=s.ChairAssignSerializer,
        responses={200: s.VisitSerializer},
        summary="Put an appointment in a chair (or take it out)",
        description="Permission pms:diary. chairId: an active chair of the appointment's location (400 otherwise, "
        "and for another practice's chair); null takes it out of any chair. Another practice's appointment: 404."
        + CLINICAL_403,
    )
    def put(self, request, id):
        data = self.parse_body(s.ChairAssignSerializer).validated_data
        appointment, visit = services.appointment_chair_set(
            organization=self.organization, actor=request.user, appointment_id=id, chair=data["chair"]
        )
        return Response(s.VisitSerializer(_visit_body(appointment, visit)).data)


# --- booking ---------------------------------------------------------------------------------------------------------


class BookView(ClinicalView):
    permission = "pms:diary"
    error_statuses = ("409",)

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_book",
        request=s.BookSerializer,
        responses={201: s.BookedSerializer},
        summary="Book from the clinical diary",
        description="Permission pms:diary. patientId, practitionerId, startsAt, endsAt (with an offset; at most 12 "
        "hours), appointmentType, notes (for the team; never in events), and chairId (an active chair; its "
        "location becomes the appointment's when locationId is left out, and must match it otherwise). Booked "
        "through the appointments app: a clash with another appointment of the practitioner is 409 "
        "APPOINTMENT_CONFLICT (details.conflictingAppointmentId); a merged patient 409 PATIENT_MERGED. Another "
        "practice's ids: 400." + CLINICAL_403,
    )
    def post(self, request):
        data = dict(self.parse_body(s.BookSerializer).validated_data)
        appointment, visit = services.book(organization=self.organization, actor=request.user, data=data)
        chair = visit.chair if visit else None
        body = {
            "id": appointment.id,
            "patient_id": appointment.patient_id,
            "practitioner_id": appointment.practitioner_id,
            "location_id": appointment.location_id,
            "chair": _named(chair.id, chair.name) if chair else None,
            "starts_at": appointment.starts_at,
            "ends_at": appointment.ends_at,
            "appointment_type": appointment.appointment_type,
            "status": appointment.status,
        }
        return Response(s.BookedSerializer(body).data, status=201)


# --- the patient record ----------------------------------------------------------------------------------------------


def _document_body(document: ClinicalDocument) -> dict:
    return {
        "id": document.id,
        "patient_id": document.patient_id,
        "name": services.document_name(document),
        "category": document.category,
        "content_type": document.content_type,
        "size": document.size,
        "sha256": document.sha256,
        "uploaded_by_id": document.uploaded_by_id,
        "created_at": document.created_at,
    }


class PatientRecordView(ClinicalView):
    permission = "clinical:read"
    error_statuses = ("409",)

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_patient_record",
        responses={200: s.PatientRecordSerializer},
        summary="A patient's clinical record",
        description="Permission clinical:read. The patient's demographics, their clinical documents (newest "
        "first), then every section the clinical apps register: medicalHistory, alerts, notes, treatmentPlans, "
        "chartingSummary, recalls, waitlist (each present when its app is installed; see the schema). Another "
        "practice's patient: 404; a merged one 409 PATIENT_MERGED naming the survivor." + CLINICAL_403,
    )
    def get(self, request, id):
        patient = self.get_tenant_object(Patient, id)
        if patient.merged_into_id is not None:
            raise PatientMerged(patient.merged_into_id)
        body = {
            "patient": s.RecordPatientSerializer(patient).data,
            "documents": [
                s.DocumentSerializer(_document_body(d)).data
                for d in selectors.documents_of(organization=self.organization, patient_id=patient.id)
            ],
        }
        for name, build in record_sections().items():
            body[name] = build(self.organization, patient.id)
        return Response(body)


# --- the PMS inbox ---------------------------------------------------------------------------------------------------


class PmsInboxPagination(NewestFirstCursorPagination):
    ordering = ("-last_message_at", "-id")


class PmsInboxView(ClinicalView):
    permission = "pms:diary"

    @extend_schema(
        tags=PMS_TAGS,
        operation_id="clinical_pms_inbox_conversations",
        parameters=[s.PmsInboxQuerySerializer],
        responses={200: s.PmsConversationPageSerializer},
        summary="The practice's conversations, as the clinical workspace sees them",
        description="Permission pms:diary. Latest activity first, with the inbox's filters: channel, status "
        "(open, closed, snoozed), assignee (a user id or none), patientId (another practice's: 400). Cursor "
        "paging (cursor, limit ≤ 100; nextCursor). Messages are read and answered in the inbox." + CLINICAL_403,
    )
    def get(self, request):
        query = self.parse_query(s.PmsInboxQuerySerializer).validated_data
        conversations = selectors.pms_conversations(organization=self.organization, filters=query)
        paginator = PmsInboxPagination()
        page = paginator.paginate_queryset(conversations, request, view=self)
        return Response(paginator.get_paginated_response_data(s.PmsConversationSerializer(page, many=True).data))


# --- clinical storage ------------------------------------------------------------------------------------------------

MULTIPART_OVERHEAD = 64 * 1024


class DocumentListView(ClinicalView):
    permission = {"GET": "clinical:read", "POST": "clinical:write"}
    parser_classes = [MultiPartParser]
    max_body_bytes = documents.max_document_bytes() + MULTIPART_OVERHEAD
    error_statuses = ("413", "415")

    def patient(self, id) -> Patient:
        return self.get_tenant_object(Patient, id)

    @extend_schema(
        tags=STORAGE_TAGS,
        operation_id="clinical_documents_list",
        parameters=[s.DocumentListQuerySerializer],
        responses={200: s.DocumentListSerializer},
        summary="A patient's clinical documents",
        description="Permission clinical:read. Newest first; category narrows the list. Another practice's "
        "patient: 404." + CLINICAL_403,
    )
    def get(self, request, id):
        patient = self.patient(id)
        query = self.parse_query(s.DocumentListQuerySerializer).validated_data
        rows = selectors.documents_of(organization=self.organization, patient_id=patient.id)
        if query.get("category"):
            rows = rows.filter(category=query["category"])
        return Response({"items": [s.DocumentSerializer(_document_body(d)).data for d in rows]})

    @extend_schema(
        tags=STORAGE_TAGS,
        operation_id="clinical_documents_upload",
        request={"multipart/form-data": s.DocumentUploadSerializer},
        responses={201: s.DocumentSerializer},
        summary="Upload a file to a patient's clinical record",
        description="Permission clinical:write. multipart/form-data with file (JPEG, PNG, WebP, TIFF, PDF or DICOM; "
        "the bytes must be of the declared type), category (xray, photo, scan, letter, form, consent, other) and "
        "an optional name. Over the size cap (20 MiB by default, SVC_CLINICAL_DOCUMENT_MAX_BYTES): 413 "
        "CLINICAL_DOCUMENT_TOO_LARGE (413 PAYLOAD_TOO_LARGE when the whole body is over it); another type: 400 "
        "naming file; not multipart: 415. Stored in the media storage under a name with no personal data; the "
        "display name is encrypted at rest. Another practice's patient: 404." + CLINICAL_403,
    )
    def post(self, request, id):
        patient = self.patient(id)
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationFailed.for_field("file", "a file is required (multipart/form-data)")
        if upload.size > documents.max_document_bytes():
            raise DocumentTooLarge(details={"maxBytes": documents.max_document_bytes(), "field": "file"})
        category = request.data.get("category")
        if not category:
            raise DocumentTypeRefused("category", "is required")
        unknown = set(request.data.keys()) - {"file", "category", "name"}
        if unknown:
            field = to_camel(sorted(unknown)[0])
            raise ValidationFailed.for_field(field, "is not a field of this request")
        document = services.document_store(
            organization=self.organization,
            patient_id=patient.id,
            user=request.user,
            name=request.data.get("name") or upload.name or "",
            content_type=upload.content_type or "",
            content=upload.read(),
            category=category,
        )
        return Response(s.DocumentSerializer(_document_body(document)).data, status=201)


class DocumentView(ClinicalView):
    def document(self, patient_id, doc_id) -> ClinicalDocument:
        """The document of this patient of this practice; anything else is the same 404."""
        patient = self.get_tenant_object(Patient, patient_id)
        queryset = selectors.documents_of(organization=self.organization, patient_id=patient.id)
        return self.get_tenant_object(ClinicalDocument, doc_id, queryset=queryset)


class DocumentDetailView(DocumentView):
    permission = {"GET": "clinical:read", "DELETE": "clinical:write"}

    @extend_schema(
        tags=STORAGE_TAGS,
        operation_id="clinical_documents_read",
        responses={200: s.DocumentSerializer},
        summary="One clinical document's details",
        description="Permission clinical:read. Another practice's (or another patient's) document: 404." + CLINICAL_403,
    )
    def get(self, request, id, doc_id):
        return Response(s.DocumentSerializer(_document_body(self.document(id, doc_id))).data)

    @extend_schema(
        tags=STORAGE_TAGS,
        operation_id="clinical_documents_delete",
        responses={204: None},
        summary="Delete a clinical document",
        description="Permission clinical:write. The row now, the stored file once the deletion commits. Another "
        "practice's document: 404." + CLINICAL_403,
    )
    def delete(self, request, id, doc_id):
        services.document_delete(organization=self.organization, actor=request.user, document=self.document(id, doc_id))
        return Response(status=204)


def _disposition(name: str) -> str:
    from urllib.parse import quote

    ascii_name = "".join(ch if 32 <= ord(ch) < 127 and ch not in '"\\;' else "_" for ch in name) or "document"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name)}"


class DocumentDownloadView(DocumentView):
    permission = "clinical:read"

    @extend_schema(
        tags=STORAGE_TAGS,
        operation_id="clinical_documents_download",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The file, with its own Content-Type and an attachment disposition."
            )
        },
        summary="Download a clinical document",
        description="Permission clinical:read. Streams the file with its Content-Type, Content-Disposition "
        "attachment (the display name) and X-Content-Type-Options nosniff; never cached. Another practice's "
        "document: 404; the media storage unreachable: 503 CLINICAL_STORAGE_UNAVAILABLE." + CLINICAL_403,
    )
    def get(self, request, id, doc_id):
        document = self.document(id, doc_id)
        stream = documents.open_file(document.storage_name)
        response = FileResponse(stream, content_type=document.content_type)
        response["Content-Disposition"] = _disposition(services.document_name(document))
        response["Content-Length"] = str(document.size)
        response["X-Content-Type-Options"] = "nosniff"
        response["Cache-Control"] = "private, no-store"
        return response
