from django.urls import path

from apps.booking.api import pages, views

BASE = "settings/booking-pages"

urlpatterns = [
    path(BASE, views.PageListView.as_view()),
    path(f"{BASE}/<uuid_param:id>", views.PageView.as_view()),
    path(f"{BASE}/<uuid_param:id>/token/rotate", views.PageRotateTokenView.as_view()),
    path("booking/manage/<str:uid>", views.PublicManageView.as_view()),
    path("booking/manage/<str:uid>/cancel", views.PublicCancelView.as_view()),
    path("booking/manage/<str:uid>/reschedule", views.PublicRescheduleView.as_view()),
    path("booking/manage/<str:uid>/page/times", pages.ManageTimesView.as_view()),
    path("booking/manage/<str:uid>/page/reschedule", pages.ManageRescheduleView.as_view()),
    path("booking/manage/<str:uid>/page/cancel", pages.ManageCancelView.as_view()),
    path("booking/<str:token>", pages.BookingPageDayView.as_view()),
    path("booking/<str:token>/page/hold", pages.BookingPageHoldView.as_view()),
    path("booking/<str:token>/page/complete", pages.BookingPageCompleteView.as_view()),
    path("booking/<str:token>/config", views.PublicConfigView.as_view()),
    path("booking/<str:token>/availability", views.PublicAvailabilityView.as_view()),
    path("booking/<str:token>/holds", views.PublicHoldView.as_view()),
    path("booking/<str:token>/holds/<str:hold_id>/complete", views.PublicCompleteView.as_view()),
]
