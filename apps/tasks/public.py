"""The tasks app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the task model and statuses the Today view queries, the practice's timezone and today's bounds
(appointments and Today compute their days with them), the renderer of a task row (the serializer, which is
the schema, and `task_row` for `.values(*TASK_VALUES)` rows), and `task_create` (the dialer's follow-up call tasks
for missed calls and voicemails: `data` as the API's validated create data, snake_case, `assignee_id` and `patient`).
"""

from apps.tasks.models import Task, TaskStatus
from apps.tasks.renderers import TASK_VALUES, TaskSerializer, task_row
from apps.tasks.selectors import practice_timezone, today_bounds
from apps.tasks.services import task_create
from apps.tasks.transfer import tasks_export

__all__ = [
    "TASK_VALUES",
    "Task",
    "TaskSerializer",
    "TaskStatus",
    "practice_timezone",
    "task_create",
    "task_row",
    "tasks_export",
    "today_bounds",
]
