"""Patients routes: thin views that parse, call one selector or service, and render."""

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from apps.accounts.roles import role_has_permission
from apps.core.csv_export import Echo as _Echo  # noqa: F401  (former home)
from apps.core.csv_export import async_chunks as _async_chunks  # noqa: F401
from apps.core.csv_export import csv_response
from apps.core.csv_export import neutralise as _neutralise  # noqa: F401
from apps.core.errors import NotFound, PermissionDenied
from apps.core.naming import to_snake
from apps.core.pagination import NewestFirstCursorPagination, offset_page
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.views import BaseApiView
from apps.patients import renderers, selectors, services
from apps.patients.api import serializers as s
from apps.patients.embeds import patient_embed
from apps.patients.models import Location, Patient, SavedView, Tag

TAGS = ["patients"]


class PatientsView(BaseApiView):
    scope_area = "patients"
    renderer_classes = [CamelCaseJSONRenderer]  # same output as the default renderer, keys converted once


class TimelinePagination(NewestFirstCursorPagination):
    page_size = 20


# --- list, create, export -------------------------------------------------------------------------------------


class PatientListView(PatientsView):
    permission = {"GET": "patient:read", "POST": "patient:create"}

    @extend_schema(
        tags=TAGS,
        operation_id="patients_list",
        parameters=[s.PatientListQuerySerializer],
        responses={200: s.PatientPageSerializer},
        summary="List patients: filters, typo-tolerant search (q), sort, offset paging",
        description="Archived patients are left out unless includeArchived=true or status=archived; merged records "
        "never appear (read them by id). sort=relevance ranks by trigram similarity to q and needs q. "
        "filters is URL-encoded JSON of PatientFilters (at most 4000 characters), keys ANDed. total is always "
        "exact (the number of matching patients at the time of the request, never an estimate), whatever the "
        "practice's size.",
    )
    def get(self, request):
        query = self.parse_query(s.PatientListQuerySerializer)
        data = query.validated_data
        embed_tags = data.get("embed") == "tags"
        rows, total, tags = selectors.patient_page(
            organization=self.organization,
            query=query.to_query(),
            limit=data["limit"],
            offset=data["offset"],
            embed_tags=embed_tags,
        )
        # PatientListItemSerializer's output (it stays the documented schema), rendered from value rows.
        if tags is None:
            items = [renderers.patient_list_row(row) for row in rows]
        else:
            items = [
                renderers.patient_list_row(row, [renderers.tag_row(tag) for tag in tags[row["id"]]]) for row in rows
            ]
        return offset_page(items, total, limit=data["limit"], offset=data["offset"])

    @extend_schema(
        tags=TAGS,
        request=s.PatientCreateSerializer,
        responses={201: s.PatientSerializer},
        summary="Create a patient (firstName and one of email or phoneMobile required)",
        description="Permission patient:create. firstName is required, with at least one of email or phoneMobile. "
        "Emits patient.created.",
    )
    def post(self, request):
        body = self.parse_body(s.PatientCreateSerializer)
        patient = services.patient_create(organization=self.organization, user=request.user, data=body.validated_data)
        patient = selectors.patient_get(organization=self.organization, patient_id=patient.id)
        return Response(s.PatientSerializer(patient).data, status=201)


EXPORT_SOURCES = {
    "addressLineOne": "address_line1",
    "addressLineTwo": "address_line2",
    "locationId": "location_id",
    "leadSourceId": "lead_source_id",
    "tags": "tag_names",
}


EXPORT_RESPONSES = {(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, header row first.")}


class PatientExportView(PatientsView):
    permission = "patient:export"

    def perform_content_negotiation(self, request, force=False):
        # Success is text/csv (streamed below); errors are always the JSON envelope.
        return JSONRenderer(), JSONRenderer.media_type

    @extend_schema(
        tags=TAGS,
        parameters=[s.PatientExportQuerySerializer],
        responses=EXPORT_RESPONSES,
        summary="Export patients as CSV (the list's filters, columns and ids; at most 10000 rows)",
        description="Streams from a server-side cursor. Over 10000 matching rows answers EXPORT_TOO_LARGE before "
        "any row is sent. Cells starting with = + - @ are prefixed with an apostrophe (CSV injection). Notes and "
        "medical alerts are never exported. `ids` here holds at most 1000 ids; a longer selection goes to "
        "POST /patients/export. A request line over 128 KiB answers 414 URI_TOO_LONG.",
    )
    def get(self, request):
        return self.export(self.parse_query(s.PatientExportQuerySerializer))

    @extend_schema(
        tags=TAGS,
        operation_id="patients_export_selection",
        request=s.PatientExportRequestSerializer,
        responses=EXPORT_RESPONSES,
        summary="Export patients as CSV, the selection in a JSON body (up to 10000 ids)",
        description="The same export as GET /patients/export, for selections too long for a URL: the query's "
        "parameters as a JSON object, with `ids` an array of 1 to 10000 patient ids (ids of other practices match "
        "nothing). It changes nothing, but as a POST it needs the `write` or `patients.write` scope on an OAuth "
        "token; a read-only token uses GET with up to 1000 ids.",
    )
    def post(self, request):
        return self.export(self.parse_body(s.PatientExportRequestSerializer))

    def export(self, query):
        columns = query.validated_data.get("columns") or s.DEFAULT_EXPORT_COLUMNS
        rows = selectors.patient_export_rows(
            organization=self.organization,
            query=query.to_query(ids=query.validated_data.get("ids")),
            sources=[EXPORT_SOURCES.get(c, to_snake(c)) for c in columns],
            row_cap=s.EXPORT_ROW_CAP,
        )
        return csv_response(self.request, columns, rows, filename="patients.csv")


# --- one patient ---------------------------------------------------------------------------------------------


class PatientView(PatientsView):
    permission = {"GET": "patient:read", "PATCH": "patient:update", "DELETE": "patient:erase"}
    error_statuses = ("409",)

    def patient(self, id) -> Patient:
        return self.get_tenant_object(
            Patient,
            id,
            queryset=selectors.with_tags(Patient.objects.for_org(self.organization).defer(*selectors.SEARCH_COLUMNS)),
        )

    @extend_schema(
        tags=TAGS,
        parameters=[s.PatientDetailQuerySerializer],
        responses={200: s.PatientDetailSerializer},
        summary="Read one patient, optionally with timeline, journeys, touches, pms, deposits, referral, marketing",
        description="embed=timeline folds in the first timeline page (newest first, 20 entries, nextCursor for "
        "GET /patients/{id}/timeline); embed=journeys the patient's journeys, newest first, at most 50.",
    )
    def get(self, request, id):
        query = self.parse_query(s.PatientDetailQuerySerializer)
        embeds = query.validated_data.get("embed") or ()
        if not embeds:
            # PatientDetailSerializer's output without embeds (it stays the schema), rendered from value rows.
            found = selectors.patient_values(organization=self.organization, patient_id=id)
            if found is None:
                raise NotFound(f"No such {Patient._meta.verbose_name}.")
            return Response(renderers.patient_row(*found))
        patient = self.patient(id)
        embedded = {}
        for name in embeds:
            embedded[name] = self._embed(name, patient)
        return Response(s.PatientDetailSerializer(patient, context={"embedded": embedded}).data)

    def _embed(self, name: str, patient: Patient):
        if name == "timeline":
            paginator = TimelinePagination()
            page = paginator.paginate_queryset(
                selectors.timeline(organization=self.organization, patient=patient), self.request, view=self
            )
            return {
                "items": s.ActivitySerializer(page, many=True).data,
                "next_cursor": paginator.get_next_cursor_token(),
            }
        if name == "marketing":
            return _marketing_summary(self.organization, patient)
        embed = patient_embed(name)  # journeys, touches: registered by their areas (apps.patients.embeds)
        if embed is not None:
            return embed.render(organization=self.organization, patient=patient)
        # Areas not built yet (pms): null.
        return None

    @extend_schema(
        tags=TAGS,
        request=s.PatientUpdateSerializer,
        responses={200: s.PatientSerializer},
        summary="Update any subset of a patient's fields, or its status",
        description="Permission patient:update. Any subset of the patient's fields (nullable ones accept null to "
        "clear), or status. A merged record answers 409 PATIENT_MERGED.",
    )
    @transaction.atomic  # one read of the row: the 404 check takes the lock the update needs
    def patch(self, request, id):
        locked = selectors.patients_for_update(organization=self.organization)
        patient = self.get_tenant_object(Patient, id, queryset=locked)
        body = self.parse_body(s.PatientUpdateSerializer, partial=True)
        patient = services.patient_update(
            organization=self.organization, user=request.user, patient=patient, data=body.validated_data, locked=True
        )
        return Response(s.PatientSerializer(selectors.patient_tags_loaded(patient)).data)

    @extend_schema(
        tags=TAGS,
        responses={200: s.ErasureResultSerializer},
        summary="Erase a patient (right to erasure; owner only)",
        description="Deletes the patient, every record merged into it and everything hanging off them (timeline, "
        "tags, consents, and what later areas register) in one transaction. recordingsScheduled counts stored "
        "call recordings scheduled for deletion.",
    )
    def delete(self, request, id):
        patient = self.patient(id)
        scheduled = services.patient_erase(organization=self.organization, patient=patient)
        return Response({"ok": True, "recordings_scheduled": scheduled})


class PatientActionView(PatientsView):
    error_statuses = ("409",)

    def patient(self, id) -> Patient:
        return self.get_tenant_object(Patient, id)

    def respond(self, patient: Patient) -> Response:
        return Response(
            s.PatientSerializer(selectors.patient_get(organization=self.organization, patient_id=patient.id)).data
        )


class PatientArchiveView(PatientActionView):
    permission = "patient:update"

    @extend_schema(
        tags=TAGS,
        request=s.ArchiveSerializer,
        responses={200: s.PatientSerializer},
        summary="Archive a patient (a lead under five contact attempts needs a reason)",
        description="Repeating is harmless. The reason is kept on the timeline, never in events.",
    )
    def post(self, request, id):
        patient = self.patient(id)
        body = self.parse_body(s.ArchiveSerializer)
        patient = services.patient_archive(
            organization=self.organization, user=request.user, patient=patient, reason=body.validated_data.get("reason")
        )
        return self.respond(patient)


class PatientUnarchiveView(PatientActionView):
    permission = "patient:update"

    @extend_schema(
        tags=TAGS,
        request=None,
        responses={200: s.PatientSerializer},
        summary="Unarchive a patient (restores the status it had before archiving)",
        description="Permission patient:update. The patient gets back the status it had before archiving; repeating "
        "is harmless.",
    )
    def post(self, request, id):
        patient = services.patient_unarchive(
            organization=self.organization, user=request.user, patient=self.patient(id)
        )
        return self.respond(patient)


class PatientMergeView(PatientActionView):
    permission = "patient:delete"

    @extend_schema(
        tags=TAGS,
        request=s.MergeSerializer,
        responses={200: s.PatientSerializer},
        summary="Merge a duplicate into this patient (this one survives)",
        description="The survivor keeps its values and gains those it lacks; tags are unioned, opt-outs kept, "
        "contact attempts added, timeline and consents moved over. The duplicate then reports mergedIntoPatientId "
        "and refuses changes (409 PATIENT_MERGED).",
    )
    def post(self, request, id):
        survivor = self.patient(id)
        body = self.parse_body(s.MergeSerializer)
        duplicate = self.get_tenant_object(Patient, body.validated_data["duplicate_patient_id"])
        patient = services.patient_merge(
            organization=self.organization, user=request.user, survivor=survivor, duplicate=duplicate
        )
        return self.respond(patient)


class PatientContactAttemptView(PatientActionView):
    permission = "patient:update"

    @extend_schema(
        tags=TAGS,
        request=s.ContactAttemptSerializer,
        responses={200: s.PatientSerializer},
        summary="Log a call or message attempt (counts towards the archive rule)",
        description="Permission patient:update. Records a call or message attempt; archiving a lead with fewer than "
        "five attempts needs a reason.",
    )
    def post(self, request, id):
        body = self.parse_body(s.ContactAttemptSerializer)
        patient = services.patient_record_contact_attempt(
            organization=self.organization, user=request.user, patient=self.patient(id), **body.validated_data
        )
        return self.respond(patient)


class PatientNoteView(PatientActionView):
    permission = "patient:update"

    @extend_schema(
        tags=TAGS,
        request=s.NoteCreateSerializer,
        responses={201: s.ActivitySerializer},
        summary="Add a note to a patient's timeline",
        description="The note is a timeline entry of kind note with the body as its summary; a merged record "
        "answers 409 PATIENT_MERGED. No event is recorded (the patient record itself does not change).",
    )
    def post(self, request, id):
        patient = self.patient(id)
        body = self.parse_body(s.NoteCreateSerializer)
        entry = services.patient_note_add(
            organization=self.organization, user=request.user, patient=patient, body=body.validated_data["body"]
        )
        return Response(s.ActivitySerializer(entry).data, status=201)


class PatientTimelineView(PatientActionView):
    permission = "patient:read"
    pagination_class = TimelinePagination

    @extend_schema(
        tags=TAGS,
        responses={200: s.ActivitySerializer(many=True)},
        summary="A patient's timeline, newest first",
        description="Permission patient:read. Timeline entries of every area (notes, journeys, tasks, appointments, "
        "captures), newest first, {items, nextCursor} paging until null.",
    )
    def get(self, request, id):
        patient = self.patient(id)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(
            selectors.timeline(organization=self.organization, patient=patient), request, view=self
        )
        return Response(paginator.get_paginated_response_data(s.ActivitySerializer(page, many=True).data))


# --- marketing consent --------------------------------------------------------------------------------------


def _marketing_summary(organization, patient: Patient) -> dict:
    return {
        "current": s.ConsentSerializer(
            selectors.consents_current(organization=organization, patient=patient), many=True
        ).data,
        "sms_opt_out": patient.sms_opt_out,
        "email_opt_out": patient.email_opt_out,
        "whatsapp_opt_out": patient.whatsapp_opt_out,
    }


class MarketingConsentView(PatientActionView):
    permission = {"GET": "patient:read", "POST": "patient:update"}

    @extend_schema(
        tags=["marketing-consent"],
        responses={200: s.ConsentHistorySerializer},
        summary="A patient's marketing consent: current state per channel and history",
        description="Permission patient:read. The current state of each channel with its source and evidence, and "
        "the history of changes.",
    )
    def get(self, request, id):
        patient = self.patient(id)
        history = selectors.consent_history(organization=self.organization, patient=patient)
        body = _marketing_summary(self.organization, patient) | {
            "history": s.ConsentSerializer(history, many=True).data
        }
        return Response(body)

    @extend_schema(
        tags=["marketing-consent"],
        request=s.ConsentWriteSerializer,
        responses={201: s.ConsentSerializer},
        summary="Record a consent change for one channel (feeds the opt-out flags)",
        description="Permission patient:update. Records a consent change for one channel with its source and "
        "evidence; the patient's opt-out flags follow it.",
    )
    def post(self, request, id):
        patient = self.patient(id)
        body = self.parse_body(s.ConsentWriteSerializer)
        consent = services.consent_record(
            organization=self.organization, user=request.user, patient=patient, **body.validated_data
        )
        return Response(s.ConsentSerializer(consent).data, status=201)


# --- bulk ------------------------------------------------------------------------------------------------------


class BulkTagsView(PatientsView):
    permission = "patient:update"

    @extend_schema(
        tags=TAGS,
        request=s.BulkTagsSerializer,
        responses={200: s.BulkResultSerializer},
        summary="Add and remove tags on up to 500 patients (idempotent per pair)",
        description="Permission patient:update. 1 to 500 ids, set-based; tag ids must exist in the practice (else "
        "400). Adding a tag a patient has, or removing one it lacks, changes nothing. Ids of other practices are "
        "ignored; merged patients come back in skipped. Answers {updated, skipped}.",
    )
    def post(self, request):
        data = self.parse_body(s.BulkTagsSerializer).validated_data
        result = services.patients_bulk_tags(
            organization=self.organization,
            user=request.user,
            patient_ids=data["patient_ids"],
            add_tag_ids=data.get("add_tag_ids") or [],
            remove_tag_ids=data.get("remove_tag_ids") or [],
        )
        return Response(s.BulkResultSerializer(result).data)


class BulkLocationView(PatientsView):
    permission = "patient:update"

    @extend_schema(
        tags=TAGS,
        request=s.BulkLocationSerializer,
        responses={200: s.BulkResultSerializer},
        summary="Set (or clear) the location of up to 500 patients",
        description="Permission patient:update. 1 to 500 ids, set-based (one statement per step, whatever the number "
        "of ids); locationId null clears. Ids of other practices are ignored; merged patients come back in skipped. "
        "Answers {updated, skipped}.",
    )
    def post(self, request):
        data = self.parse_body(s.BulkLocationSerializer).validated_data
        location = None
        if data["location_id"] is not None:
            location = self.get_tenant_object(Location, data["location_id"])
        result = services.patients_bulk_location(
            organization=self.organization, user=request.user, patient_ids=data["patient_ids"], location=location
        )
        return Response(s.BulkResultSerializer(result).data)


class BulkArchiveView(PatientsView):
    permission = "patient:delete"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        request=s.BulkArchiveSerializer,
        responses={200: s.BulkResultSerializer},
        summary="Archive up to 500 patients (all or nothing on ARCHIVE_REASON_REQUIRED)",
        description="Permission patient:delete (owners, managers). 1 to 500 ids, set-based. All or nothing: when any "
        "lead under five contact attempts would be archived without a reason the request answers 400 "
        "ARCHIVE_REASON_REQUIRED with details.underCalledLeads and nothing changes. Ids of other practices are "
        "ignored; merged patients come back in skipped. Answers {updated, skipped}.",
    )
    def post(self, request):
        data = self.parse_body(s.BulkArchiveSerializer).validated_data
        result = services.patients_bulk_archive(
            organization=self.organization,
            user=request.user,
            patient_ids=data["patient_ids"],
            reason=data.get("reason"),
        )
        return Response(s.BulkResultSerializer(result).data)


# --- tags ------------------------------------------------------------------------------------------------------


class TagListView(PatientsView):
    permission = {"GET": "patient:read", "POST": "patient:update"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="tags_list",
        responses={200: s.TagListSerializer},
        summary="The practice's patient tags",
        description="Permission patient:read. Every tag of the practice.",
    )
    def get(self, request):
        tags = selectors.tag_list(organization=self.organization)
        return Response({"items": s.TagSerializer(tags, many=True).data})

    @extend_schema(
        tags=TAGS,
        request=s.TagWriteSerializer,
        responses={201: s.TagSerializer},
        summary="Create a tag",
        description="Permission patient:update. name (1 to 64 characters) and an optional color (#rrggbb).",
    )
    def post(self, request):
        data = self.parse_body(s.TagWriteSerializer).validated_data
        return Response(s.TagSerializer(services.tag_create(organization=self.organization, **data)).data, status=201)


class TagView(PatientsView):
    permission = {"GET": "patient:read", "PATCH": "patient:update", "DELETE": "patient:update"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        responses={200: s.TagSerializer},
        summary="Read a tag",
        description="Permission patient:read. One tag; another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.TagSerializer(self.get_tenant_object(Tag, id)).data)

    @extend_schema(
        tags=TAGS,
        request=s.TagWriteSerializer(partial=True),
        responses={200: s.TagSerializer},
        summary="Rename or recolour a tag",
        description="Permission patient:update. Changes name or colour.",
    )
    def patch(self, request, id):
        tag = self.get_tenant_object(Tag, id)
        data = self.parse_body(s.TagWriteSerializer, partial=True).validated_data
        return Response(s.TagSerializer(services.tag_update(organization=self.organization, tag=tag, data=data)).data)

    @extend_schema(
        tags=TAGS,
        responses={204: None},
        summary="Delete a tag (removes it from every patient)",
        description="Permission patient:update. The tag is deleted and removed from every patient that had it.",
    )
    def delete(self, request, id):
        services.tag_delete(organization=self.organization, tag=self.get_tenant_object(Tag, id))
        return Response(status=204)


# --- saved views -----------------------------------------------------------------------------------------------


class SavedViewListView(PatientsView):
    permission = "patient:read"
    error_statuses = ("409",)

    @extend_schema(
        tags=["saved-views"],
        operation_id="saved_views_list",
        responses={200: s.SavedViewListSerializer},
        summary="Your saved views and the practice's shared ones",
        description="Permission patient:read. Your private views and every shared view of the practice.",
    )
    def get(self, request):
        views = selectors.saved_views_visible(organization=self.organization, user=request.user)
        return Response({"items": s.SavedViewSerializer(views, many=True).data})

    @extend_schema(
        tags=["saved-views"],
        request=s.SavedViewWriteSerializer,
        responses={201: s.SavedViewSerializer},
        summary="Save a patient list view (filters, sort, columns), private or shared",
        description="Permission patient:read. A named patient list view (filters, sort, columns), private to you or "
        "shared with the practice. A name you already use answers 409 SAVED_VIEW_NAME_TAKEN.",
    )
    def post(self, request):
        data = self.parse_body(s.SavedViewWriteSerializer).validated_data
        view = services.saved_view_create(organization=self.organization, user=request.user, data=data)
        return Response(s.SavedViewSerializer(view).data, status=201)


class SavedViewView(PatientsView):
    permission = "patient:read"
    error_statuses = ("409",)

    def visible(self, id) -> SavedView:
        return self.get_tenant_object(
            SavedView,
            id,
            queryset=selectors.saved_views_visible(organization=self.organization, user=self.request.user),
        )

    def owned(self, id) -> SavedView:
        view = self.visible(id)
        if view.owner_id != self.request.user.pk:
            raise PermissionDenied("Only the person who saved this view can change it.")
        return view

    @extend_schema(
        tags=["saved-views"],
        responses={200: s.SavedViewSerializer},
        summary="Read a saved view",
        description="Permission patient:read. Your own views and the practice's shared ones; someone else's private "
        "view answers 404.",
    )
    def get(self, request, id):
        return Response(s.SavedViewSerializer(self.visible(id)).data)

    @extend_schema(
        tags=["saved-views"],
        request=s.SavedViewWriteSerializer(partial=True),
        responses={200: s.SavedViewSerializer},
        summary="Change your saved view",
        description="Permission patient:read. Only the person who saved the view changes it (403 otherwise).",
    )
    def patch(self, request, id):
        view = self.owned(id)
        data = self.parse_body(s.SavedViewWriteSerializer, partial=True).validated_data
        view = services.saved_view_update(organization=self.organization, view=view, data=data)
        return Response(s.SavedViewSerializer(view).data)

    @extend_schema(
        tags=["saved-views"],
        responses={204: None},
        summary="Delete your saved view",
        description="Permission patient:read. Its owner deletes it; a shared view may also be deleted by a member "
        "with settings:update (403 otherwise).",
    )
    def delete(self, request, id):
        view = self.visible(id)
        may_moderate = view.shared and role_has_permission(self.membership.role, "settings:update")
        if view.owner_id != request.user.pk and not may_moderate:
            raise PermissionDenied("Only its owner (or a manager, for a shared view) can delete this view.")
        services.saved_view_delete(organization=self.organization, view=view)
        return Response(status=204)
