"""The tasks app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the task model and statuses the Today view queries, the practice's timezone and today's bounds
(appointments and Today compute their days with them), and the renderer of a task row.
"""

from apps.tasks.models import Task, TaskStatus
from apps.tasks.renderers import TaskSerializer
from apps.tasks.selectors import practice_timezone, today_bounds

__all__ = ["Task", "TaskSerializer", "TaskStatus", "practice_timezone", "today_bounds"]
