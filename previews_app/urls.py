from django.urls import path

from previews_app import views

urlpatterns = [
    path("md-preview/<str:slug>", views.md_page),
    path("md-preview/<str:slug>/", views.md_page),
    path("md-preview/<str:slug>/<path:rest>", views.md_asset),
]
