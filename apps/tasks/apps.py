from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "apps.tasks"
    label = "tasks"
    verbose_name = "Tasks"

    def ready(self):
        from apps.patients import hooks
        from apps.tasks.hooks import erase_tasks_of_patients, repoint_tasks_to_survivor

        hooks.on_erase(erase_tasks_of_patients)
        hooks.on_merge(repoint_tasks_to_survivor)
