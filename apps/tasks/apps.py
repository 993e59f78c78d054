from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "apps.tasks"
    label = "tasks"
    verbose_name = "Tasks"

    def ready(self):
        from apps.patients.public import on_erase, on_merge
        from apps.tasks.hooks import erase_tasks_of_patients, repoint_tasks_to_survivor

        on_erase(erase_tasks_of_patients)
        on_merge(repoint_tasks_to_survivor)
