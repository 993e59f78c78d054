from django.apps import AppConfig


class AppointmentsConfig(AppConfig):
    name = "apps.appointments"
    label = "appointments"
    verbose_name = "Appointments and scheduling"

    def ready(self):
        from apps.appointments.hooks import erase_appointments_of_patients, repoint_appointments_to_survivor
        from apps.patients.public import on_erase, on_merge

        on_erase(erase_appointments_of_patients)
        on_merge(repoint_appointments_to_survivor)
