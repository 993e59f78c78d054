from django.urls import path

from apps.clinical.api import views

DOCUMENTS = "clinical/patients/<uuid_param:id>/documents"

urlpatterns = [
    path("settings/practitioners/<uuid_param:id>/user-link", views.PractitionerUserLinkView.as_view()),
    path("day-list", views.DayListView.as_view()),
    path("book", views.BookView.as_view()),
    path("patient-record/<uuid_param:id>", views.PatientRecordView.as_view()),
    path("pms-inbox/conversations", views.PmsInboxView.as_view()),
    path("clinical/chairs", views.ChairListView.as_view()),
    path("clinical/chairs/<uuid_param:id>", views.ChairDetailView.as_view()),
    path("clinical/appointments/<uuid_param:id>/progress", views.AppointmentProgressView.as_view()),
    path("clinical/appointments/<uuid_param:id>/chair", views.AppointmentChairView.as_view()),
    path(DOCUMENTS, views.DocumentListView.as_view()),
    path(f"{DOCUMENTS}/<uuid_param:doc_id>", views.DocumentDetailView.as_view()),
    path(f"{DOCUMENTS}/<uuid_param:doc_id>/download", views.DocumentDownloadView.as_view()),
]
