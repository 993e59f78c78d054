from django.urls import path

from apps.dialer.api import views

urlpatterns = [
    path("dialer/connections", views.ConnectionListView.as_view()),
    path("dialer/connections/<uuid_param:id>", views.ConnectionDetailView.as_view()),
    path("dialer/numbers", views.NumberListView.as_view()),
    path("dialer/numbers/search", views.NumberSearchView.as_view()),
    path("dialer/numbers/<uuid_param:id>", views.NumberDetailView.as_view()),
    path("dialer/porting-orders", views.PortingOrderListView.as_view()),
    path("dialer/porting-orders/<uuid_param:id>", views.PortingOrderDetailView.as_view()),
    path("dialer/parked-events", views.ParkedListView.as_view()),
    path("dialer/parked-events/<uuid_param:id>/replay", views.ParkedReplayView.as_view()),
    path("dialer/parked-events/<uuid_param:id>/dismiss", views.ParkedDismissView.as_view()),
    path("dialer/calls", views.CallPlaceView.as_view()),
    path("calls", views.CallListView.as_view()),
    path("calls/<uuid_param:id>", views.CallDetailView.as_view()),
    path("calls/<uuid_param:id>/recording", views.RecordingView.as_view()),
]
