from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "apps.tasks"
    label = "tasks"
    verbose_name = "Tasks"

    def ready(self):
        from apps.patients.public import on_erase, on_merge
        from apps.tasks import services

        on_erase(services.tasks_erase_for_patients)
        on_merge(services.tasks_repoint_to_survivor)
