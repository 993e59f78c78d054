from django.apps import AppConfig


class AppointmentsConfig(AppConfig):
    name = "apps.appointments"
    label = "appointments"
    verbose_name = "Appointments and scheduling"

    def ready(self):
        from apps.appointments import services
        from apps.patients.public import on_erase, on_merge

        on_erase(services.appointments_erase_for_patients)
        on_merge(services.appointments_repoint_to_survivor)
