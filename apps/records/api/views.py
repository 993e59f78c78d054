"""Clinical records routes (tags Clinical notes, Medical history, Patient forms) and the public patient form page.

Every /clinical/... route is a clinical route (`clinical = True`): 403 PMS_WORKSPACE_UNAVAILABLE while the practice
has no clinical workspace, then 403 transport_not_allowed to API keys and OAuth tokens (a signed-in session only).
Reads need clinical:read, writes clinical:write, signing clinical:sign with fresh re-authentication evidence
(X-Service-Act-Evidence), sending and listing patient forms pms:diary. Another practice's id in a path answers 404,
in a body 400. Notes are append-only: no PATCH or DELETE (405); corrections are amendments.

/patient-form/{token} is public: the single-use token is the boundary."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from apps.accounts.act_evidence import WITH_ACT_EVIDENCE
from apps.core.browser_pages import wants_html
from apps.core.errors import NotFound
from apps.core.limits import MinuteWindowLimit, TokenBucketLimit
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.permissions import CLINICAL_AREA
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.patients.public import Patient
from apps.records import pages, selectors, services
from apps.records.api import serializers as s
from apps.records.errors import FormNotFound
from apps.records.models import ClinicalNote, MedicalAlert, NoteAmendment, PatientForm, Questionnaire

NOTES = ["Clinical notes"]
HISTORY = ["Medical history"]
FORMS = ["Patient forms"]
CLINICAL = (
    "Clinical route: a signed-in session only (403 transport_not_allowed to API keys and OAuth tokens; 403 "
    "PMS_WORKSPACE_UNAVAILABLE while the practice has no clinical workspace)."
)
SIGNING = (
    "Needs fresh re-authentication: header X-Service-Act-Evidence with the token of POST /user/reauthenticate "
    "(this person, this session, within five minutes), else 403 FRESH_AUTHENTICATION_REQUIRED. Only the author may "
    "sign, and only while linked to a practitioner profile (else 403 NOTE_SIGN_NOT_ALLOWED); signing twice is 409 "
    "NOTE_ALREADY_SIGNED. A signed note is sealed: it changes only through amendments, signed the same way."
)
EVIDENCE_PARAM = OpenApiParameter(
    "X-Service-Act-Evidence",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=True,
    description="The token of POST /user/reauthenticate.",
)
FORBIDDEN = {
    403: OpenApiResponse(
        ApiErrorSerializer,
        description="PERMISSION_DENIED (role), PMS_WORKSPACE_UNAVAILABLE (no clinical workspace) or "
        "transport_not_allowed (an API key or OAuth token: clinical routes take a browser session only).",
    )
}
SIGN_FORBIDDEN = {
    403: OpenApiResponse(
        ApiErrorSerializer,
        description="PERMISSION_DENIED, PMS_WORKSPACE_UNAVAILABLE, transport_not_allowed, "
        "FRESH_AUTHENTICATION_REQUIRED (evidence missing, expired, tampered or borrowed) or NOTE_SIGN_NOT_ALLOWED.",
    )
}


class ClinicalView(BaseApiView):
    clinical = True
    scope_area = CLINICAL_AREA

    def patient(self, id) -> Patient:
        return self.get_tenant_object(Patient, id)

    def note(self, id) -> ClinicalNote:
        return self.get_tenant_object(ClinicalNote, id, queryset=selectors.notes_of_org(self.organization))

    def page(self, queryset, serializer_class, row) -> Response:
        self.parse_query(s.CursorQuerySerializer)
        paginator = NewestFirstCursorPagination()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        return Response(paginator.get_paginated_response_data([row(item) for item in page]))


# --- notes ------------------------------------------------------------------------------------------------------------


class PatientNotesView(ClinicalView):
    permission = {"GET": "clinical:read", "POST": "clinical:write"}
    error_statuses = ("409",)

    @extend_schema(
        tags=NOTES,
        operation_id="clinical_notes_list",
        parameters=[s.CursorQuerySerializer],
        responses={200: s.NotePageSerializer, **FORBIDDEN},
        summary="A patient's clinical notes, newest first, with their amendments",
        description="Permission clinical:read. Cursor paging {items, nextCursor}. " + CLINICAL,
    )
    def get(self, request, id):
        patient = self.patient(id)
        return self.page(
            selectors.notes_of(organization=self.organization, patient_id=patient.id),
            s.NoteSerializer,
            selectors.note_row,
        )

    @extend_schema(
        tags=NOTES,
        operation_id="clinical_notes_create",
        request=s.NoteCreateSerializer,
        responses={201: s.NoteSerializer, **FORBIDDEN},
        summary="Write a clinical note",
        description="Permission clinical:write. The author is the member; the clinician (practitionerId) the "
        "practitioner their account is linked to. appointmentId must be this patient's appointment (400). The text "
        "is stored encrypted and never appears in events or logs. Notes are append-only: there is no edit or "
        "delete; corrections are amendments. A merged patient answers 409 PATIENT_MERGED. " + CLINICAL,
    )
    def post(self, request, id):
        patient = self.patient(id)
        data = self.parse_body(s.NoteCreateSerializer).validated_data
        note = services.note_create(
            organization=self.organization,
            actor=request.user,
            patient=patient,
            text=data["text"],
            appointment=data.get("appointment_id"),
        )
        return Response(selectors.note_row(self.note(note.id)), status=201)


class NoteView(ClinicalView):
    permission = "clinical:read"

    @extend_schema(
        tags=NOTES,
        operation_id="clinical_notes_read",
        responses={200: s.NoteSerializer, **FORBIDDEN},
        summary="Read one clinical note with its amendments",
        description="Permission clinical:read. Another practice's id answers 404. No PATCH or DELETE (405): "
        "notes are append-only. " + CLINICAL,
    )
    def get(self, request, id):
        return Response(selectors.note_row(self.note(id)))


class NoteAmendmentsView(ClinicalView):
    permission = "clinical:write"

    @extend_schema(
        tags=NOTES,
        operation_id="clinical_notes_amend",
        request=s.AmendmentCreateSerializer,
        responses={201: s.NoteSerializer, **FORBIDDEN},
        summary="Amend a note (a correction with its reason; the original stays)",
        description="Permission clinical:write. Allowed on signed and unsigned notes: the note's text never "
        "changes; the amendment records its author, their practitioner and the reason. Answers the note with all "
        "its amendments. " + CLINICAL,
    )
    def post(self, request, id):
        note = self.note(id)
        data = self.parse_body(s.AmendmentCreateSerializer).validated_data
        services.amendment_create(
            organization=self.organization, actor=request.user, note=note, text=data["text"], reason=data["reason"]
        )
        return Response(selectors.note_row(self.note(note.id)), status=201)


class NoteSignView(ClinicalView):
    permission = "clinical:sign"
    permission_classes = WITH_ACT_EVIDENCE
    error_statuses = ("409",)

    @extend_schema(
        tags=NOTES,
        operation_id="clinical_notes_sign",
        request=None,
        parameters=[EVIDENCE_PARAM],
        responses={200: s.NoteSerializer, **SIGN_FORBIDDEN},
        summary="Sign (seal) a clinical note",
        description="Permission clinical:sign. " + SIGNING + " " + CLINICAL,
    )
    def post(self, request, id):
        note = services.note_sign(organization=self.organization, actor=request.user, note=self.note(id))
        return Response(selectors.note_row(self.note(note.id)))


class AmendmentSignView(ClinicalView):
    permission = "clinical:sign"
    permission_classes = WITH_ACT_EVIDENCE
    error_statuses = ("409",)

    @extend_schema(
        tags=NOTES,
        operation_id="clinical_notes_amendment_sign",
        request=None,
        parameters=[EVIDENCE_PARAM],
        responses={200: s.NoteSerializer, **SIGN_FORBIDDEN},
        summary="Sign (seal) an amendment of a note",
        description="Permission clinical:sign. The amendment must be of this note (else 404). "
        + SIGNING
        + " "
        + CLINICAL,
    )
    def post(self, request, id, amendment_id):
        note = self.note(id)
        amendment = self.get_tenant_object(
            NoteAmendment, amendment_id, queryset=NoteAmendment.objects.for_org(self.organization).filter(note=note)
        )
        services.amendment_sign(organization=self.organization, actor=request.user, amendment=amendment)
        return Response(selectors.note_row(self.note(note.id)))


# --- questionnaires ---------------------------------------------------------------------------------------------------


class QuestionnairesView(ClinicalView):
    permission = {"GET": "clinical:read", "POST": "clinical:write"}

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_history_questionnaires_list",
        responses={200: s.QuestionnaireListSerializer, **FORBIDDEN},
        summary="The practice's medical history questionnaires (the default one first) at their current version",
        description="Permission clinical:read. The first read creates the practice's default questionnaire "
        "(medications, allergies, anticoagulants, bisphosphonates, heart conditions, diabetes, bleeding, "
        "epilepsy, pregnancy, smoking, alcohol…). Question types: boolean, text, choice, multi_choice, date, "
        "number; alert questions raise medical alerts from the answers. " + CLINICAL,
    )
    def get(self, request):
        services.questionnaire_default(organization=self.organization)
        return Response({"items": selectors.questionnaire_rows(organization=self.organization)})

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_history_questionnaires_create",
        request=s.QuestionnaireCreateSerializer,
        responses={201: s.QuestionnaireSerializer, **FORBIDDEN},
        summary="Create another questionnaire (version 1)",
        description="Permission clinical:write. Questions are checked (400 naming questions[i].field): keys "
        "camelCase and unique, choices for choice questions, alertWhen among the choices. " + CLINICAL,
    )
    def post(self, request):
        data = self.parse_body(s.QuestionnaireCreateSerializer).validated_data
        questionnaire = services.questionnaire_create(
            organization=self.organization, actor=request.user, name=data["name"], questions_data=data["questions"]
        )
        return Response(selectors.questionnaire_row(questionnaire, services.current_version(questionnaire)), status=201)


class QuestionnaireView(ClinicalView):
    permission = {"GET": "clinical:read", "PUT": "clinical:write"}

    def questionnaire(self, id) -> Questionnaire:
        return self.get_tenant_object(Questionnaire, id)

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_history_questionnaires_read",
        responses={200: s.QuestionnaireSerializer, **FORBIDDEN},
        summary="One questionnaire at its current version",
        description="Permission clinical:read. Earlier versions: GET …/versions/{version}. " + CLINICAL,
    )
    def get(self, request, id):
        questionnaire = self.questionnaire(id)
        return Response(selectors.questionnaire_row(questionnaire, services.current_version(questionnaire)))

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_history_questionnaires_publish",
        request=s.QuestionnairePublishSerializer,
        responses={200: s.QuestionnaireSerializer, **FORBIDDEN},
        summary="Edit a questionnaire: publish a new version",
        description="Permission clinical:write. The whole list of questions (and optionally a new name) becomes "
        "the next version; earlier versions stay, with the answers and forms that used them. " + CLINICAL,
    )
    def put(self, request, id):
        questionnaire = self.questionnaire(id)
        data = self.parse_body(s.QuestionnairePublishSerializer).validated_data
        questionnaire = services.questionnaire_publish(
            organization=self.organization,
            actor=request.user,
            questionnaire=questionnaire,
            questions_data=data["questions"],
            name=data.get("name"),
        )
        return Response(selectors.questionnaire_row(questionnaire, services.current_version(questionnaire)))


class QuestionnaireVersionView(ClinicalView):
    permission = "clinical:read"

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_history_questionnaires_version",
        responses={200: s.QuestionnaireVersionSerializer, **FORBIDDEN},
        summary="One version of a questionnaire, as published",
        description="Permission clinical:read. An unknown version answers 404. " + CLINICAL,
    )
    def get(self, request, id, version):
        questionnaire = self.get_tenant_object(Questionnaire, id)
        found = selectors.version_of(organization=self.organization, questionnaire=questionnaire, version=version)
        if found is None:
            raise NotFound("No such questionnaire version.")
        return Response(selectors.version_row(found))


# --- medical history and alerts ---------------------------------------------------------------------------------------


class PatientHistoryView(ClinicalView):
    permission = {"GET": "clinical:read", "POST": "clinical:write"}
    error_statuses = ("409",)

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_history_list",
        parameters=[s.CursorQuerySerializer],
        responses={200: s.HistoryPageSerializer, **FORBIDDEN},
        summary="A patient's medical history versions, newest first",
        description="Permission clinical:read. Cursor paging {items, nextCursor}; each version with its answers, "
        "the questionnaire version it answered and who entered it (source patient: from a patient form). " + CLINICAL,
    )
    def get(self, request, id):
        patient = self.patient(id)
        return self.page(
            selectors.histories_of(organization=self.organization, patient_id=patient.id),
            s.HistorySerializer,
            selectors.history_row,
        )

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_history_create",
        request=s.HistoryCreateSerializer,
        responses={201: s.HistorySerializer, **FORBIDDEN},
        summary="Record a new version of a patient's medical history",
        description="Permission clinical:write. Answers are checked against the questionnaire's current version "
        "(400 naming answers.<key>: required, type, choices; unknown keys refused). The alerts derived from the "
        "previous version are resolved and derived again from these answers. " + CLINICAL,
    )
    def post(self, request, id):
        patient = self.patient(id)
        data = self.parse_body(s.HistoryCreateSerializer).validated_data
        questionnaire = data.get("questionnaire_id") or services.questionnaire_default(organization=self.organization)
        entry = services.history_submit(
            organization=self.organization,
            actor=request.user,
            patient=patient,
            version=services.current_version(questionnaire),
            answers=data["answers"],
        )
        return Response(selectors.history_row(entry), status=201)


class PatientAlertsView(ClinicalView):
    permission = {"GET": "clinical:read", "POST": "clinical:write"}
    error_statuses = ("409",)

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_alerts_list",
        parameters=[s.AlertQuerySerializer],
        responses={200: s.AlertListSerializer, **FORBIDDEN},
        summary="A patient's medical alerts, newest first",
        description="Permission clinical:read. Active ones; includeResolved=true adds the resolved. Alerts come "
        "from medical history answers the questionnaire marks as alerts (source medical_history) or are added by "
        "hand (manual). " + CLINICAL,
    )
    def get(self, request, id):
        patient = self.patient(id)
        query = self.parse_query(s.AlertQuerySerializer).validated_data
        alerts = selectors.alerts_of(
            organization=self.organization, patient_id=patient.id, include_resolved=query["include_resolved"] == "true"
        )
        return Response({"items": [selectors.alert_row(alert) for alert in alerts]})

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_alerts_create",
        request=s.AlertCreateSerializer,
        responses={201: s.AlertSerializer, **FORBIDDEN},
        summary="Add a manual medical alert",
        description="Permission clinical:write. The text is stored encrypted and shown in the patient record. "
        + CLINICAL,
    )
    def post(self, request, id):
        patient = self.patient(id)
        data = self.parse_body(s.AlertCreateSerializer).validated_data
        alert = services.alert_create(
            organization=self.organization, actor=request.user, patient=patient, text=data["text"]
        )
        return Response(selectors.alert_row(alert), status=201)


class AlertResolveView(ClinicalView):
    permission = "clinical:write"

    @extend_schema(
        tags=HISTORY,
        operation_id="medical_alerts_resolve",
        request=None,
        responses={200: s.AlertSerializer, **FORBIDDEN},
        summary="Resolve a medical alert",
        description="Permission clinical:write. Idempotent: a resolved alert is answered as it is. " + CLINICAL,
    )
    def post(self, request, id):
        alert = services.alert_resolve(
            organization=self.organization, actor=request.user, alert=self.get_tenant_object(MedicalAlert, id)
        )
        return Response(selectors.alert_row(alert))


# --- patient forms ----------------------------------------------------------------------------------------------------


class PatientFormsView(ClinicalView):
    permission = "pms:diary"
    error_statuses = ("409",)

    @extend_schema(
        tags=FORMS,
        operation_id="patient_forms_list",
        parameters=[s.FormQuerySerializer],
        responses={200: s.FormListSerializer, **FORBIDDEN},
        summary="The forms sent to a patient, newest first",
        description="Permission pms:diary. Status pending, completed, revoked or expired (pending past expiresAt). "
        "No answers here: they are in the medical history and the stored document. " + CLINICAL,
    )
    def get(self, request, id):
        patient = self.patient(id)
        query = self.parse_query(s.FormQuerySerializer).validated_data
        forms = selectors.forms_of(organization=self.organization, patient_id=patient.id, status=query.get("status"))
        return Response({"items": [selectors.form_row(form) for form in forms[:200]]})

    @extend_schema(
        tags=FORMS,
        operation_id="patient_forms_send",
        request=s.FormSendSerializer,
        responses={201: s.FormSentSerializer, **FORBIDDEN},
        summary="Send a patient a form by link (medical history questionnaire or consent)",
        description="Permission pms:diary. A single-use link /patient-form/{token} valid expiresInHours (default "
        "72, at most 720); only the token's hash is kept and the url is in this answer only. delivery email or sms "
        "sends it through the practice's connected channel as a service message (the channel's address, block and "
        "opt-out rules apply); a message that cannot be queued is 409 FORM_NOT_SENT with details.reason and "
        "nothing is kept. delivery link sends nothing (the front desk shows it). kind consent needs consentText. "
        + CLINICAL,
    )
    def post(self, request, id):
        patient = self.patient(id)
        data = self.parse_body(s.FormSendSerializer).validated_data
        form, token = services.form_send(
            organization=self.organization,
            actor=request.user,
            patient=patient,
            kind=data["kind"],
            delivery=data["delivery"],
            questionnaire=data.get("questionnaire_id"),
            title=data.get("title", ""),
            consent_text=data.get("consent_text", ""),
            expires_in_hours=data["expires_in_hours"],
        )
        return Response(selectors.form_row(form) | {"url": services.form_url(token)}, status=201)


class FormRevokeView(ClinicalView):
    permission = "pms:diary"
    error_statuses = ("409",)

    @extend_schema(
        tags=FORMS,
        operation_id="patient_forms_revoke",
        request=None,
        responses={200: s.FormSerializer, **FORBIDDEN},
        summary="Revoke a form's link",
        description="Permission pms:diary. The link answers 404 at once. A completed form is 409 FORM_CLOSED; "
        "revoking again answers the revoked form. " + CLINICAL,
    )
    def post(self, request, id):
        form = self.get_tenant_object(PatientForm, id)
        form = services.form_revoke(organization=self.organization, actor=request.user, form=form)
        return Response(selectors.form_row(form))


# --- public: /patient-form/{token} ------------------------------------------------------------------------------------


PUBLIC_SCREEN = MinuteWindowLimit("records.patient-form", rate="60/m", fail_open=True)
FORM_BUCKET = TokenBucketLimit(
    "records.patient-form.token", burst=20, per_second=0.2, key=lambda request, view: view.token_key
)
LIMITS = "Limits: 60 requests a minute per client address; 20 burst, then one every five seconds, per link."
TOKEN_PARAM = OpenApiParameter("token", OpenApiTypes.STR, OpenApiParameter.PATH, description="The form's link token.")
NOT_FOUND = "An unknown, used, revoked or expired link: an HTML page for browsers, the ApiError envelope otherwise."
NOT_FOUND_RESPONSES = {
    (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_FOUND),
    (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_FOUND),
}


class FirstRenderer(BaseContentNegotiation):
    """HTML pages are made by the view; whatever DRF renders is the JSON envelope (a browser gets a page for it
    through apps.core.browser_pages)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class PublicFormView(BaseApiView):
    public = True
    max_body_bytes = 256 * 1024
    content_negotiation_class = FirstRenderer
    token_key = None

    def load(self, request, token) -> PatientForm | None:
        """The abuse screen, the per-link bucket, then the form (None for any token that opens none)."""
        PUBLIC_SCREEN.check(request, self)
        self.token_key = (token or "")[:80]
        FORM_BUCKET.check(request, self)
        return services.form_for_token(token)

    def public_row(self, form: PatientForm) -> dict:
        version = form.questionnaire_version
        return {
            "practiceName": form.organization.name,
            "kind": form.kind,
            "title": form.title,
            "questions": version.questions if version else [],
            "consentText": selectors.decrypted(form.consent_text_encrypted),
            "expiresAt": selectors.datetime_string(form.expires_at),
        }


class PublicFormPageView(PublicFormView):
    @extend_schema(
        tags=FORMS,
        operation_id="patient_form_public_read",
        parameters=[TOKEN_PARAM],
        summary="The form a patient opens from their link (JSON, or the page for browsers)",
        description="Public; the single-use token is the boundary. An API client gets the practice's name, the "
        "form's title and its questions (or consent wording); a browser (Accept preferring text/html) gets the "
        "mobile-friendly page, which posts to /patient-form/{token}/page. " + LIMITS,
        responses={
            (200, "application/json"): s.PublicFormSerializer,
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The form page, for browsers."),
            **NOT_FOUND_RESPONSES,
        },
        auth=[],
    )
    def get(self, request, token):
        form = self.load(request, token)
        if form is None:
            if wants_html(request):
                return pages.not_found_page(request)
            raise FormNotFound()
        if wants_html(request):
            return pages.form_page(request, form=form, token=token)
        return Response(self.public_row(form))

    @extend_schema(
        tags=FORMS,
        operation_id="patient_form_public_submit",
        parameters=[TOKEN_PARAM],
        request=s.PublicSubmitSerializer,
        summary="The patient submits the form (JSON)",
        description="Public; the token is the boundary and is spent by the submission (then 404). A medical "
        "history form: answers by question key, checked like the staff route (400 naming answers.<key>); they "
        "become a new medical history version (source patient). A consent form: agree true and signatureName. "
        "Either way the filled form is stored as a PDF in the patient's clinical documents (category form or "
        "consent). Body at most 256 KiB. " + LIMITS,
        responses={200: s.PublicSubmittedSerializer, **NOT_FOUND_RESPONSES},
        auth=[],
    )
    def post(self, request, token):
        form = self.load(request, token)
        if form is None:
            raise FormNotFound()
        data = self.parse_body(s.PublicSubmitSerializer).validated_data
        services.form_submit(
            form=form,
            answers=data.get("answers"),
            agree=data.get("agree", False),
            signature_name=data.get("signature_name", ""),
        )
        return Response({"status": "completed"})


class PublicFormPostView(PublicFormView):
    parser_classes = [FormParser]
    http_method_names = ["post"]

    @extend_schema(
        tags=FORMS,
        operation_id="patient_form_page_submit",
        parameters=[TOKEN_PARAM],
        request={"application/x-www-form-urlencoded": OpenApiTypes.OBJECT},
        summary="The form page's post: the thank-you page",
        description="Public; the same rules as POST /patient-form/{token}, for the page's form post (one field "
        "per question key: yes/no, text, a choice, several choices, a date, a number; agree and signatureName for "
        "consent). Problems show the form again with them (400); success answers the thank-you page. " + LIMITS,
        responses={
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The thank-you page."),
            (400, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The form again, with the problems."),
            (400, "application/json"): OpenApiResponse(
                ApiErrorSerializer, description="A body that cannot be read as a form (the envelope)."
            ),
            **NOT_FOUND_RESPONSES,
        },
        auth=[],
    )
    def post(self, request, token):
        form = self.load(request, token)
        if form is None:
            if wants_html(request):
                return pages.not_found_page(request)
            raise FormNotFound()
        return pages.submit_page(request, form=form, token=token)
