"""Treatment plans (tag Treatment plans): the procedure catalogue, price-list fees, a patient's plans, their items and
status; treatment templates (tag Treatment templates).

Every route is a clinical route (`clinical = True`): 403 PMS_WORKSPACE_UNAVAILABLE while the practice has no clinical
workspace, then 403 transport_not_allowed to API keys and OAuth tokens; a signed-in session only. Reads need
clinical:read; plan, item and template writes clinical:write (the clinicians). The catalogue's procedures and the
price-list fees are the practice's prices: writing them needs pms:manage (owners and managers, who answer for the
practice), not clinical:write — a clinician sets a manual fee on one item instead. Another practice's id in a path
answers 404, in a body 400.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.core.pagination import offset_page
from apps.core.permissions import CLINICAL_AREA
from apps.core.views import BaseApiView
from apps.patients.public import Patient, PriceList
from apps.plans import selectors, services
from apps.plans.api import serializers as s
from apps.plans.models import PlanItem, Procedure, TreatmentPlan, TreatmentTemplate

PLAN_TAGS = ["Treatment plans"]
TEMPLATE_TAGS = ["Treatment templates"]

CLINICAL_403 = (
    " 403 PMS_WORKSPACE_UNAVAILABLE while the practice has no clinical workspace, then transport_not_allowed to API "
    "keys and OAuth tokens (a signed-in session only), then the role's permission."
)
TRANSITION_409 = (
    " A refused move answers 409 TREATMENT_PLAN_TRANSITION_NOT_ALLOWED (details: status, requested, allowed)."
)


class ClinicalView(BaseApiView):
    clinical = True
    scope_area = CLINICAL_AREA
    error_statuses = ("409",)

    def plan(self, plan_id) -> TreatmentPlan:
        return self.get_tenant_object(TreatmentPlan, plan_id)

    def plan_response(self, plan, *, status: int = 200) -> Response:
        detail = selectors.plan_detail(organization=self.organization, plan=plan)
        context = {"totals": {plan.id: detail}, "items": detail["items"]}
        return Response(s.PlanDetailSerializer(plan, context=context).data, status=status)


# --- procedures ------------------------------------------------------------------------------------------------------


class ProcedureListView(ClinicalView):
    permission = {"GET": "clinical:read", "POST": "pms:manage"}

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_procedures_list",
        parameters=[s.ProcedureListQuerySerializer],
        responses={200: s.ProcedurePageSerializer},
        summary="The practice's procedure catalogue",
        description="Permission clinical:read. {items, total, limit, offset} by code; category filters; archived "
        "procedures only with includeArchived=true. The first read of a practice without procedures seeds a "
        "starter catalogue (examinations, radiographs, fillings, root canals, crowns, extractions, implants…) with "
        "default fees in integer minor units of the practice's currency." + CLINICAL_403,
    )
    def get(self, request):
        query = self.parse_query(s.ProcedureListQuerySerializer).validated_data
        services.procedures_seed(organization=self.organization)
        procedures = selectors.procedures_of(
            organization=self.organization,
            include_archived=query["include_archived"],
            category=query.get("category"),
        )
        rows = procedures[query["offset"] : query["offset"] + query["limit"]]
        return offset_page(
            s.ProcedureSerializer(rows, many=True).data,
            procedures.count(),
            limit=query["limit"],
            offset=query["offset"],
        )

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_procedures_create",
        request=s.ProcedureCreateSerializer,
        responses={201: s.ProcedureSerializer},
        summary="Add a procedure to the catalogue",
        description="Permission pms:manage (the practice's prices are the owners' and managers'). code (unique in "
        "the practice, case-insensitive: 409 PROCEDURE_CODE_TAKEN), name, category, defaultFee (integer minor units "
        "of the practice's currency), toothRequired, surfacesRequired (needs toothRequired)." + CLINICAL_403,
    )
    def post(self, request):
        data = self.parse_body(s.ProcedureCreateSerializer).validated_data
        procedure = services.procedure_create(organization=self.organization, actor=request.user, data=dict(data))
        return Response(s.ProcedureSerializer(procedure).data, status=201)


class ProcedureDetailView(ClinicalView):
    permission = {"GET": "clinical:read", "PATCH": "pms:manage"}

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_procedures_read",
        responses={200: s.ProcedureSerializer},
        summary="Read one procedure",
        description="Permission clinical:read. Another practice's id answers 404." + CLINICAL_403,
    )
    def get(self, request, id):
        return Response(s.ProcedureSerializer(self.get_tenant_object(Procedure, id)).data)

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_procedures_update",
        request=s.ProcedureUpdateSerializer,
        responses={200: s.ProcedureSerializer},
        summary="Change a procedure: name, category, default fee, tooth and surfaces, archived",
        description="Permission pms:manage. A new defaultFee applies to items added from now on: items already on "
        "plans keep the fee fixed when they were added. archived true keeps it off new items." + CLINICAL_403,
    )
    def patch(self, request, id):
        self.get_tenant_object(Procedure, id)
        data = self.parse_body(s.ProcedureUpdateSerializer, partial=True).validated_data
        procedure = services.procedure_update(
            organization=self.organization, actor=request.user, procedure_id=id, data=dict(data)
        )
        return Response(s.ProcedureSerializer(procedure).data)


# --- fees -------------------------------------------------------------------------------------------------------------


class FeeView(ClinicalView):
    permission = {"GET": "clinical:read", "PUT": "pms:manage"}

    def price_list(self, id):
        return self.get_tenant_object(PriceList, id)

    def fees_response(self, price_list) -> Response:
        fees = selectors.fees_of(organization=self.organization, price_list=price_list)
        return Response(s.FeeListSerializer({"price_list_id": price_list.id, "items": fees}).data)

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_price_list_fees_list",
        responses={200: s.FeeListSerializer},
        summary="The fees of a price list",
        description="Permission clinical:read. {priceListId, items}: each procedure with a fee on this price list "
        "(amount in integer minor units; defaultFee beside it). A procedure without one is charged its default fee "
        "to patients of this price list. Another practice's price list answers 404." + CLINICAL_403,
    )
    def get(self, request, id):
        return self.fees_response(self.price_list(id))

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_price_list_fees_set",
        request=s.FeeSetSerializer,
        responses={200: s.FeeListSerializer},
        summary="Set or clear fees on a price list",
        description="Permission pms:manage (prices are the practice's, set by owners and managers). fees: "
        "[{procedureId, amount}] (up to 500; amount null removes the fee, so the default applies); procedures not "
        "named keep theirs. Fees of items already on plans never change. Another practice's procedure id answers "
        "400." + CLINICAL_403,
    )
    def put(self, request, id):
        price_list = self.price_list(id)
        data = self.parse_body(s.FeeSetSerializer).validated_data
        services.fees_set(
            organization=self.organization, actor=request.user, price_list=price_list, entries=data["fees"]
        )
        return self.fees_response(price_list)


# --- plans ------------------------------------------------------------------------------------------------------------


class PatientPlanListView(ClinicalView):
    permission = {"GET": "clinical:read", "POST": "clinical:write"}

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plans_list",
        parameters=[s.PlanListQuerySerializer],
        responses={200: s.PlanPageSerializer},
        summary="A patient's treatment plans, newest first",
        description="Permission clinical:read. {items, total, limit, offset}; status filters. Each plan with its "
        "totals (computed from the items: total, completed, remaining, itemCount; minor units of currency). "
        "Another practice's patient answers 404." + CLINICAL_403,
    )
    def get(self, request, id):
        patient = self.get_tenant_object(Patient, id)
        query = self.parse_query(s.PlanListQuerySerializer).validated_data
        plans = selectors.plans_of_patient(
            organization=self.organization, patient_id=patient.id, status=query.get("status")
        )
        rows = list(plans[query["offset"] : query["offset"] + query["limit"]])
        totals = selectors.plan_totals(organization=self.organization, plan_ids=[plan.id for plan in rows])
        return offset_page(
            s.PlanSerializer(rows, many=True, context={"totals": totals}).data,
            plans.count(),
            limit=query["limit"],
            offset=query["offset"],
        )

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plans_create",
        request=s.PlanCreateSerializer,
        responses={201: s.PlanDetailSerializer},
        summary="Start a treatment plan for a patient",
        description="Permission clinical:write. title, notes (clinical text, stored encrypted, never in events), "
        "practitionerId (default: the author's linked practitioner profile). The plan starts proposed, in the "
        "practice's currency. A merged patient answers 409 PATIENT_MERGED; another practice's patient 404. Emits "
        "pms_treatment_plan.updated (action created)." + CLINICAL_403,
    )
    def post(self, request, id):
        patient = self.get_tenant_object(Patient, id)
        data = self.parse_body(s.PlanCreateSerializer).validated_data
        plan = services.plan_create(organization=self.organization, actor=request.user, patient=patient, **data)
        return self.plan_response(plan, status=201)


class PlanDetailView(ClinicalView):
    permission = {"GET": "clinical:read", "PATCH": "clinical:write"}

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plans_read",
        responses={200: s.PlanDetailSerializer},
        summary="Read a treatment plan with its items, phases and totals",
        description="Permission clinical:read. The plan, notes, items in phase order (each with its fixed unit fee "
        "and lineTotal), phases (ordered by number, each with its totals) and the plan's totals, all summed by the "
        "database from the items (cancelled items count for nothing). Another practice's plan answers 404."
        + CLINICAL_403,
    )
    def get(self, request, plan_id):
        return self.plan_response(self.plan(plan_id))

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plans_update",
        request=s.PlanUpdateSerializer,
        responses={200: s.PlanDetailSerializer},
        summary="Change a plan's title, notes or practitioner",
        description="Permission clinical:write. Any of title, notes, practitionerId; the status has its own route. "
        "Emits pms_treatment_plan.updated (action updated, changedFields naming the fields, never their "
        "values)." + CLINICAL_403,
    )
    def patch(self, request, plan_id):
        self.plan(plan_id)
        data = self.parse_body(s.PlanUpdateSerializer, partial=True).validated_data
        plan = services.plan_update(
            organization=self.organization, actor=request.user, plan_id=plan_id, data=dict(data)
        )
        return self.plan_response(plan)


class PlanStatusView(ClinicalView):
    permission = "clinical:write"

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plans_status",
        request=s.PlanStatusSerializer,
        responses={200: s.PlanDetailSerializer},
        summary="Move a plan: accept, decline, cancel, start, reopen",
        description="Permission clinical:write. status: proposed → accepted, declined or cancelled; accepted → "
        "in_progress or cancelled; in_progress → cancelled; declined → proposed. completed is reached when the "
        "last planned item is completed or cancelled (with at least one completed); completed and cancelled are "
        "final. The same status again changes nothing. Concurrent moves are serialized on the plan: the later one "
        "is judged against the earlier's result." + TRANSITION_409 + " Emits pms_treatment_plan.updated (action "
        "status_changed)." + CLINICAL_403,
    )
    def post(self, request, plan_id):
        self.plan(plan_id)
        data = self.parse_body(s.PlanStatusSerializer).validated_data
        plan = services.plan_set_status(
            organization=self.organization, actor=request.user, plan_id=plan_id, status=data["status"]
        )
        return self.plan_response(plan)


# --- items ------------------------------------------------------------------------------------------------------------


class ItemListView(ClinicalView):
    permission = {"GET": "clinical:read", "POST": "clinical:write"}

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plan_items_list",
        responses={200: s.ItemSerializer(many=True)},
        summary="A plan's items in phase order",
        description="Permission clinical:read. Every item (at most 200 per plan), by phase then by when it was "
        "added. Another practice's plan answers 404." + CLINICAL_403,
    )
    def get(self, request, plan_id):
        plan = self.plan(plan_id)
        return Response(
            s.ItemSerializer(selectors.items_of(organization=self.organization, plan_id=plan.id), many=True).data
        )

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plan_items_add",
        request=s.ItemCreateSerializer,
        responses={201: s.ItemSerializer},
        summary="Add a procedure to a plan",
        description="Permission clinical:write. procedureId (of this practice, not archived: another practice's "
        "answers 400), tooth (FDI: permanent 11-48, primary 51-85; required when the procedure needs one), "
        "surfaces (a set of M O D B L I valid for that tooth: incisors and canines M D B L I, premolars and molars "
        "M O D B L; required when the procedure needs them), quantity (1-99), phase (1-20), fee (a manual unit "
        "fee; left out: the patient's default price list's fee for the procedure, else its default fee — fixed on "
        "the item, a later fee change does not rewrite it), practitionerId (default: the plan's). A completed, "
        "declined or cancelled plan answers 409 TREATMENT_PLAN_CLOSED; a plan of 200 items 409 "
        "TREATMENT_PLAN_TOO_LARGE. Emits pms_treatment_plan.updated (action item_added)." + CLINICAL_403,
    )
    def post(self, request, plan_id):
        self.plan(plan_id)
        data = self.parse_body(s.ItemCreateSerializer).validated_data
        item = services.item_add(organization=self.organization, actor=request.user, plan_id=plan_id, data=dict(data))
        return Response(s.ItemSerializer(item).data, status=201)


class ItemDetailView(ClinicalView):
    permission = {"PATCH": "clinical:write", "DELETE": "clinical:write"}

    def check(self, plan_id, item_id) -> None:
        plan = self.plan(plan_id)
        self.get_tenant_object(
            PlanItem, item_id, queryset=PlanItem.objects.for_org(self.organization).filter(plan=plan)
        )

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plan_items_update",
        request=s.ItemUpdateSerializer,
        responses={200: s.ItemSerializer},
        summary="Change a planned item: tooth, surfaces, quantity, phase, fee, practitioner",
        description="Permission clinical:write. Only a planned item of an open plan (409 TREATMENT_PLAN_ITEM_CLOSED, "
        "409 TREATMENT_PLAN_CLOSED); the procedure stays (remove the item and add another). A fee given here is a "
        "manual fee. Tooth and surfaces are checked together against the procedure. Emits "
        "pms_treatment_plan.updated (action item_updated)." + CLINICAL_403,
    )
    def patch(self, request, plan_id, item_id):
        self.check(plan_id, item_id)
        data = self.parse_body(s.ItemUpdateSerializer, partial=True).validated_data
        item = services.item_update(
            organization=self.organization, actor=request.user, plan_id=plan_id, item_id=item_id, data=dict(data)
        )
        return Response(s.ItemSerializer(item).data)

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plan_items_remove",
        responses={204: OpenApiResponse(description="Removed.")},
        summary="Remove a planned item",
        description="Permission clinical:write. Only a planned item of an open plan; a completed item stays (it is "
        "charged) and a cancelled one stays on record. Emits pms_treatment_plan.updated (action item_removed)."
        + CLINICAL_403,
    )
    def delete(self, request, plan_id, item_id):
        self.check(plan_id, item_id)
        services.item_remove(organization=self.organization, actor=request.user, plan_id=plan_id, item_id=item_id)
        return Response(status=204)


class ItemStatusView(ClinicalView):
    permission = "clinical:write"

    @extend_schema(
        tags=PLAN_TAGS,
        operation_id="clinical_treatment_plan_items_status",
        request=s.ItemStatusSerializer,
        responses={200: s.ItemStatusResultSerializer},
        summary="Complete or cancel an item",
        description="Permission clinical:write. status completed (the plan accepted or in progress) or cancelled (the "
        "plan open); completed and cancelled are final. Completing an item of an accepted plan moves it to "
        "in_progress; once no item is planned and one is completed the plan is completed. A refused move answers "
        "409 TREATMENT_PLAN_ITEM_TRANSITION_NOT_ALLOWED (details: status, requested, allowed, and planStatus when "
        "the plan is the reason). Answers {item, planStatus, totals}. Emits pms_treatment_plan.updated (action "
        "item_status_changed)." + CLINICAL_403,
    )
    def post(self, request, plan_id, item_id):
        plan = self.plan(plan_id)
        self.get_tenant_object(
            PlanItem, item_id, queryset=PlanItem.objects.for_org(self.organization).filter(plan=plan)
        )
        data = self.parse_body(s.ItemStatusSerializer).validated_data
        plan, item = services.item_set_status(
            organization=self.organization, actor=request.user, plan_id=plan_id, item_id=item_id, status=data["status"]
        )
        totals = selectors.plan_totals(organization=self.organization, plan_ids=[plan.id])[plan.id]["totals"]
        return Response(s.ItemStatusResultSerializer({"item": item, "plan_status": plan.status, "totals": totals}).data)


class TemplateApplyView(ClinicalView):
    permission = "clinical:write"

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="clinical_treatment_plans_apply_template",
        request=s.TemplateApplySerializer,
        responses={201: s.TemplateApplyResultSerializer},
        summary="Add a template's procedures to a plan",
        description="Permission clinical:write. templateId (of this practice: another's answers 400); tooth (FDI) "
        "when a procedure of the template is done on a tooth: it goes on those items, whose template surfaces must "
        "fit it. Each item gets the patient's fee (price list, else the procedure's default) and the template's "
        "phase and quantity. Answers the items added and the plan's totals. Emits pms_treatment_plan.updated "
        "(action template_applied)." + CLINICAL_403,
    )
    def post(self, request, plan_id):
        plan = self.plan(plan_id)
        data = self.parse_body(s.TemplateApplySerializer).validated_data
        items = services.template_apply(
            organization=self.organization,
            actor=request.user,
            plan_id=plan.id,
            template=data["template"],
            tooth=data.get("tooth"),
        )
        totals = selectors.plan_totals(organization=self.organization, plan_ids=[plan.id])[plan.id]["totals"]
        return Response(s.TemplateApplyResultSerializer({"items": items, "totals": totals}).data, status=201)


# --- templates --------------------------------------------------------------------------------------------------------


class TemplateView(ClinicalView):
    def template(self, id):
        return self.get_tenant_object(
            TreatmentTemplate, id, queryset=selectors.templates_of(organization=self.organization)
        )


class TemplateListView(TemplateView):
    permission = {"GET": "clinical:read", "POST": "clinical:write"}

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="clinical_treatment_templates_list",
        parameters=[s.OffsetQuerySerializer],
        responses={200: s.TemplatePageSerializer},
        summary="The practice's treatment templates, by name",
        description="Permission clinical:read. {items, total, limit, offset}; each template with its procedures in "
        "order." + CLINICAL_403,
    )
    def get(self, request):
        query = self.parse_query(s.OffsetQuerySerializer).validated_data
        templates = selectors.templates_of(organization=self.organization)
        rows = templates[query["offset"] : query["offset"] + query["limit"]]
        return offset_page(
            s.TemplateSerializer(rows, many=True).data, templates.count(), limit=query["limit"], offset=query["offset"]
        )

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="clinical_treatment_templates_create",
        request=s.TemplateCreateSerializer,
        responses={201: s.TemplateSerializer},
        summary="Create a treatment template",
        description="Permission clinical:write. name (unique in the practice, case-insensitive: 409 "
        "TREATMENT_TEMPLATE_NAME_TAKEN), items: [{procedureId, phase, quantity, surfaces}] (1-50, in order; "
        "surfaces only for procedures done on a tooth, whose tooth is given when the template is applied)."
        + CLINICAL_403,
    )
    def post(self, request):
        data = self.parse_body(s.TemplateCreateSerializer).validated_data
        template = services.template_create(
            organization=self.organization, actor=request.user, name=data["name"], items=data["items"]
        )
        return Response(s.TemplateSerializer(self.template(template.id)).data, status=201)


class TemplateDetailView(TemplateView):
    permission = {"GET": "clinical:read", "PATCH": "clinical:write", "DELETE": "clinical:write"}

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="clinical_treatment_templates_read",
        responses={200: s.TemplateSerializer},
        summary="Read a treatment template",
        description="Permission clinical:read. Another practice's id answers 404." + CLINICAL_403,
    )
    def get(self, request, id):
        return Response(s.TemplateSerializer(self.template(id)).data)

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="clinical_treatment_templates_update",
        request=s.TemplateUpdateSerializer,
        responses={200: s.TemplateSerializer},
        summary="Rename a template or replace its procedures",
        description="Permission clinical:write. name; items replaces the whole list. Plans it was applied to keep "
        "their items." + CLINICAL_403,
    )
    def patch(self, request, id):
        self.template(id)
        data = self.parse_body(s.TemplateUpdateSerializer, partial=True).validated_data
        services.template_update(organization=self.organization, actor=request.user, template_id=id, data=dict(data))
        return Response(s.TemplateSerializer(self.template(id)).data)

    @extend_schema(
        tags=TEMPLATE_TAGS,
        operation_id="clinical_treatment_templates_delete",
        responses={204: OpenApiResponse(description="Deleted.")},
        summary="Delete a treatment template",
        description="Permission clinical:write. Plans it was applied to keep their items." + CLINICAL_403,
    )
    def delete(self, request, id):
        self.template(id)
        services.template_delete(organization=self.organization, actor=request.user, template_id=id)
        return Response(status=204)
