"""The tasks app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the task model and statuses the Today view queries, the practice's timezone and today's bounds
(appointments and Today compute their days with them), and the renderer of a task row (the serializer, which is
the schema, and `task_row` for `.values(*TASK_VALUES)` rows).
"""

from apps.tasks.models import Task, TaskStatus
from apps.tasks.renderers import TASK_VALUES, TaskSerializer, task_row
from apps.tasks.selectors import practice_timezone, today_bounds

__all__ = ["TASK_VALUES", "Task", "TaskSerializer", "TaskStatus", "practice_timezone", "task_row", "today_bounds"]
