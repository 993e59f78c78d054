"""Tasks routes: thin views that parse, call one selector or service, and render."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.core.errors import NotFound
from apps.core.pagination import offset_page
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.views import BaseApiView
from apps.tasks import selectors, services
from apps.tasks.api import serializers as s

TAGS = ["tasks"]


class TasksView(BaseApiView):
    scope_area = "tasks"
    renderer_classes = [CamelCaseJSONRenderer]

    def task(self, id):
        task = selectors.task_get(organization=self.organization, task_id=id)
        if task is None:
            raise NotFound("No such task.")
        return task


class TaskListView(TasksView):
    permission = {"GET": "task:read", "POST": "task:create"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="tasks_list",
        parameters=[s.TaskListQuerySerializer],
        responses={200: s.TaskPageSerializer},
        summary="List tasks: views mine / overdue / due today / all, filters, offset paging",
        description="Sorted by due date (undated last), then creation. Filters are ANDed with the view. "
        "Today and overdue are reckoned in the practice's timezone (UTC while the practice has none).",
    )
    def get(self, request):
        query = self.parse_query(s.TaskListQuerySerializer)
        data = query.validated_data
        rows, total = selectors.task_page(
            organization=self.organization,
            user=request.user,
            query=selectors.TaskQuery(
                view=data["view"],
                assignee_id=data.get("assignee_id"),
                patient_id=data.get("patient_id"),
                journey_id=data.get("journey_id"),
                status=data.get("status"),
                priority=data.get("priority"),
                due_before=data.get("due_before"),
                due_after=data.get("due_after"),
            ),
            limit=data["limit"],
            offset=data["offset"],
        )
        items = s.TaskSerializer(rows, many=True).data
        return offset_page(items, total, limit=data["limit"], offset=data["offset"])

    @extend_schema(
        tags=TAGS,
        request=s.TaskCreateSerializer,
        responses={201: s.TaskSerializer},
        summary="Create a task (title required; assigned to the creator unless assigneeId is given)",
        description="assigneeId must be a member of the practice, patientId a patient and journeyId a journey of "
        "the practice (400 otherwise). With journeyId and no patientId the task takes the journey's patient; a "
        "journey of another patient than patientId is 400. A merged patient answers 409 PATIENT_MERGED. A task "
        "about a patient writes task_created (and later task_completed / task_cancelled / task_reopened) on the "
        "patient's timeline.",
    )
    def post(self, request):
        body = self.parse_body(s.TaskCreateSerializer)
        task = services.task_create(organization=self.organization, user=request.user, data=body.validated_data)
        return Response(s.TaskSerializer(task).data, status=201)


class TaskView(TasksView):
    permission = {"GET": "task:read", "PATCH": "task:update"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        responses={200: s.TaskSerializer},
        summary="Read one task",
        description="Permission task:read. One task; another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.TaskSerializer(self.task(id)).data)

    @extend_schema(
        tags=TAGS,
        request=s.TaskUpdateSerializer,
        responses={200: s.TaskSerializer},
        summary="Update any subset of a task's fields (status moves through complete / reopen / cancel)",
        description="A task linked to a journey stays about the journey's patient: a new journeyId alone moves the "
        "task to that journey's patient; a patientId that is not the journey's patient is 400 (change or clear "
        "journeyId with it).",
    )
    def patch(self, request, id):
        task = self.task(id)
        body = self.parse_body(s.TaskUpdateSerializer, partial=True)
        task = services.task_update(
            organization=self.organization, user=request.user, task_id=task.id, data=body.validated_data
        )
        return Response(s.TaskSerializer(task).data)


class TaskTransitionView(TasksView):
    permission = "task:update"
    error_statuses = ("409",)
    action_name: str = ""

    def post(self, request, id):
        task = self.task(id)
        task = services.task_transition(
            organization=self.organization, user=request.user, task_id=task.id, action=self.action_name
        )
        return Response(s.TaskSerializer(task).data)


TRANSITION_DESCRIPTION = (
    "Permission task:update. Only the moves open → completed (sets completedAt), open → cancelled (sets cancelledAt) "
    "and completed or cancelled → open (clears both) exist; any other answers 409 TASK_TRANSITION_NOT_ALLOWED with "
    "details.status, details.action and details.allowedFrom. The row is locked while it changes. Emits "
    "task.completed, task.cancelled or task.reopened (ids only)."
)


def _transition_schema(summary: str):
    return extend_schema(
        tags=TAGS,
        request=None,
        responses={200: s.TaskSerializer},
        summary=summary,
        description=TRANSITION_DESCRIPTION,
    )


class TaskCompleteView(TaskTransitionView):
    action_name = "completed"

    @_transition_schema("Complete an open task (409 TASK_TRANSITION_NOT_ALLOWED otherwise)")
    def post(self, request, id):
        return super().post(request, id)


class TaskReopenView(TaskTransitionView):
    action_name = "reopened"

    @_transition_schema("Reopen a completed or cancelled task (409 TASK_TRANSITION_NOT_ALLOWED otherwise)")
    def post(self, request, id):
        return super().post(request, id)


class TaskCancelView(TaskTransitionView):
    action_name = "cancelled"

    @_transition_schema("Cancel an open task (409 TASK_TRANSITION_NOT_ALLOWED otherwise)")
    def post(self, request, id):
        return super().post(request, id)
