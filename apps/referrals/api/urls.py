from django.urls import path

from apps.referrals.api import views

urlpatterns = [
    path("referral-programmes", views.ProgrammeListView.as_view()),
    path("referral-programmes/<uuid_param:id>", views.ProgrammeView.as_view()),
    path("referral-programmes/<uuid_param:id>/referrals", views.ProgrammeReferralsView.as_view()),
    path("referral-rewards", views.RewardListView.as_view()),
    path("referral-rewards/<uuid_param:id>/mark-paid", views.RewardPayView.as_view()),
    path("patients/<uuid_param:id>/referral-token", views.AdvocateTokenView.as_view()),
    path("referral/<str:token>", views.ReferralPageView.as_view()),
    path("referral/<str:token>/submit", views.ReferralSubmitView.as_view()),
    path("referral/<str:token>/status", views.ReferralStatusView.as_view()),
]
