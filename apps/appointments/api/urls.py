from django.urls import path

from apps.appointments.api import views

urlpatterns = [
    path("appointments", views.AppointmentListView.as_view()),
    path("appointments/<uuid_param:id>", views.AppointmentView.as_view()),
    path("appointments/<uuid_param:id>/reschedule", views.AppointmentRescheduleView.as_view()),
    path("appointments/<uuid_param:id>/status", views.AppointmentStatusView.as_view()),
    path("appointments/<uuid_param:id>/cancel", views.AppointmentCancelView.as_view()),
    path("calendar", views.CalendarView.as_view()),
    path("scheduling/availability", views.AvailabilityView.as_view()),
    path("scheduling/practitioners/<uuid_param:id>/working-hours", views.WorkingHoursView.as_view()),
    path("settings/scheduling", views.SchedulingSettingsView.as_view()),
]
