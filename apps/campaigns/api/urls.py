from django.urls import path

from apps.campaigns.api import views

urlpatterns = [
    path("templates", views.TemplateListView.as_view()),
    path("templates/<uuid_param:id>", views.TemplateView.as_view()),
    path("templates/<uuid_param:id>/approval", views.TemplateApprovalView.as_view()),
    path("templates/<uuid_param:id>/preview", views.TemplatePreviewView.as_view()),
    path("templates/<uuid_param:id>/send", views.TemplateSendView.as_view()),
    path("campaigns", views.CampaignListView.as_view()),
    path("campaigns/<uuid_param:id>", views.CampaignView.as_view()),
    path("campaigns/<uuid_param:id>/launch", views.CampaignLaunchView.as_view()),
    path("campaigns/<uuid_param:id>/pause", views.CampaignPauseView.as_view()),
    path("campaigns/<uuid_param:id>/resume", views.CampaignResumeView.as_view()),
    path("campaigns/<uuid_param:id>/cancel", views.CampaignCancelView.as_view()),
    path("campaigns/<uuid_param:id>/recipients", views.CampaignRecipientsView.as_view()),
    path("campaigns/<uuid_param:id>/test-send", views.CampaignTestSendView.as_view()),
    path("marketing/unsubscribe/<str:token>", views.UnsubscribeView.as_view()),
]
