from django.urls import path

from apps.bootstrap.api import views

urlpatterns = [path("bootstrap", views.BootstrapView.as_view())]
