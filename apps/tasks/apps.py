from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "apps.tasks"
    label = "tasks"
    verbose_name = "Tasks"

    def ready(self):
        from apps.patients import hooks
        from apps.tasks import services

        hooks.on_erase(services.tasks_erase_for_patients)
        hooks.on_merge(services.tasks_repoint_to_survivor)
