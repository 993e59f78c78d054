from django.urls import path

from apps.records.api import views

urlpatterns = [
    path("clinical/patients/<uuid_param:id>/notes", views.PatientNotesView.as_view()),
    path("clinical/notes/<uuid_param:id>", views.NoteView.as_view()),
    path("clinical/notes/<uuid_param:id>/amendments", views.NoteAmendmentsView.as_view()),
    path("clinical/notes/<uuid_param:id>/sign", views.NoteSignView.as_view()),
    path("clinical/notes/<uuid_param:id>/amendments/<uuid_param:amendment_id>/sign", views.AmendmentSignView.as_view()),
    path("clinical/medical-history/questionnaires", views.QuestionnairesView.as_view()),
    path("clinical/medical-history/questionnaires/<uuid_param:id>", views.QuestionnaireView.as_view()),
    path(
        "clinical/medical-history/questionnaires/<uuid_param:id>/versions/<int:version>",
        views.QuestionnaireVersionView.as_view(),
    ),
    path("clinical/patients/<uuid_param:id>/medical-history", views.PatientHistoryView.as_view()),
    path("clinical/patients/<uuid_param:id>/alerts", views.PatientAlertsView.as_view()),
    path("clinical/alerts/<uuid_param:id>/resolve", views.AlertResolveView.as_view()),
    path("clinical/patients/<uuid_param:id>/forms", views.PatientFormsView.as_view()),
    path("clinical/forms/<uuid_param:id>/revoke", views.FormRevokeView.as_view()),
    path("patient-form/<str:token>", views.PublicFormPageView.as_view()),
    path("patient-form/<str:token>/page", views.PublicFormPostView.as_view()),
]
