from django.urls import path

from apps.deposits.api import callbacks, connect, views

urlpatterns = [
    path("deposits", views.DepositListView.as_view()),
    path("deposits/<uuid_param:id>", views.DepositView.as_view()),
    path("deposits/<uuid_param:id>/send", views.DepositSendView.as_view()),
    path("deposits/<uuid_param:id>/cancel", views.DepositCancelView.as_view()),
    path("l/<str:token>", views.DepositLinkView.as_view()),
    path("l/<str:token>/checkout", views.DepositCheckoutView.as_view()),
    path("webhooks/payments-connect", callbacks.PaymentsConnectWebhookView.as_view()),
    path("webhooks/payments-connect/oauth/callback", connect.ConnectCallbackView.as_view()),
    path("auth/payments-billing/webhook", callbacks.PaymentsBillingWebhookView.as_view()),
    path("settings/payments", connect.PaymentSettingsView.as_view()),
    path("settings/payments/connect", connect.ConnectStartView.as_view()),
]
