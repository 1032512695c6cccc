from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from bridge_app import api as bridge_api
from channels_app import api as channels_api
from core import browser
from core import settings_api as svc_api
from fleet_app import api as fleet_api
from mcp_app import api as integrations_api
from notifications_app import api as notifications_api
from notifications_app import views_sw
from previews_app import api as previews_api
from previews_app import views as previews_views
from remote_app import api as remote_api
from remote_app import views as remote_views
from sessions_app import api as sessions_api
from sessions_app import api_approvals, api_search
from subagents_app import api as turns_api
from svcproject import views

api_patterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("workspaces", sessions_api.WorkspaceListView.as_view()),
    path("workspaces/<int:workspace_id>", sessions_api.WorkspaceDetailView.as_view()),
    path("profiles", bridge_api.ProfileListView.as_view()),
    path("profiles/<str:profile_id>", bridge_api.ProfileDetailView.as_view()),
    path("usage", bridge_api.UsageView.as_view()),
    path("agents", sessions_api.AgentListView.as_view()),
    path("agents/<str:name>", sessions_api.AgentDetailView.as_view()),
    path("agents/<str:name>/check", sessions_api.AgentCheckView.as_view()),
    path("sessions", sessions_api.SessionListView.as_view()),
    # Before sessions/<id>: `stop_all` is never taken for a session's id.
    path("sessions/stop_all", sessions_api.SessionStopAllView.as_view()),
    path("sessions/<str:session_id>", sessions_api.SessionDetailView.as_view()),
    path("sessions/<str:session_id>/resume", sessions_api.SessionResumeView.as_view()),
    path("sessions/<str:session_id>/log", sessions_api.SessionLogView.as_view()),
    path("sessions/<str:session_id>/events/<int:seq>", sessions_api.SessionEventView.as_view()),
    path("sessions/<str:session_id>/handover", sessions_api.SessionHandoverView.as_view()),
    path("sessions/<str:session_id>/permissions", api_approvals.SessionPermissionsView.as_view()),
    path("sessions/<str:session_id>/diff", turns_api.SessionDiffView.as_view()),
    path("sessions/<str:session_id>/diff/comments", turns_api.SessionDiffCommentsView.as_view()),
    path("subagents/<str:run_id>/diff", turns_api.SubagentDiffView.as_view()),
    path("subagents/<str:run_id>/diff/comments", turns_api.SubagentDiffCommentsView.as_view()),
    path("subagents/<str:run_id>/merge", turns_api.SubagentMergeView.as_view()),
    path("subagents/<str:run_id>/discard", turns_api.SubagentDiscardView.as_view()),
    path("handover/pickup", sessions_api.HandoverPickupView.as_view()),
    path("search", api_search.SearchView.as_view()),
    path("approvals", api_approvals.ApprovalListView.as_view()),
    path("subagent-turns", turns_api.SubagentTurnListView.as_view()),
    path("subagent-turns/<str:turn_id>", turns_api.SubagentTurnDetailView.as_view()),
    path("channels", channels_api.ChannelListView.as_view()),
    path("channels/<str:kind>/check", channels_api.ChannelCheckView.as_view()),
    path("channels/<str:name>/asking", channels_api.ChannelAskingView.as_view()),
    path("channels/<str:name>/allow", channels_api.ChannelAllowView.as_view()),
    path("channels/<str:name>", channels_api.ChannelDetailView.as_view()),
    path("tunnels", remote_api.TunnelListView.as_view()),
    path("tunnels/offers", remote_api.TunnelOffersView.as_view()),
    path("tunnels/<str:name>", remote_api.TunnelDetailView.as_view()),
    re_path(
        r"^tunnels/(?P<name>[^/]+)/(?P<action>start|stop)$", remote_api.TunnelActionView.as_view()
    ),
    path("remote", remote_api.RemoteAccessView.as_view()),
    path("remote/lan", remote_api.RemoteLanView.as_view()),
    path("pairings", remote_api.PairingListView.as_view()),
    path("pairings/pending", remote_api.PairingPendingView.as_view()),
    path("pairings/approve", remote_api.PairingApproveView.as_view()),
    path("pairings/invites", remote_api.PairingInviteView.as_view()),
    path("pairings/requests/<str:request_id>/deny", remote_api.PairingDenyView.as_view()),
    path("pairings/<str:device_id>", remote_api.PairingDetailView.as_view()),
    path("machines", fleet_api.MachineListView.as_view()),
    path("machines/<str:machine>", fleet_api.MachineDetailView.as_view()),
    path("settings", svc_api.SettingsView.as_view()),
    path("settings/problem", svc_api.SettingsProblemView.as_view()),
    path("status", svc_api.StatusView.as_view()),
    path("integrations", integrations_api.IntegrationsView.as_view()),
    path("previews", previews_api.PreviewListView.as_view()),
    path("preview-files", previews_api.PreviewFilesView.as_view()),
    path("previews/<str:slug>", previews_api.PreviewDetailView.as_view()),
    path("notifications", notifications_api.NotificationListView.as_view()),
    path("push/key", notifications_api.PushKeyView.as_view()),
    path("push/subscriptions", notifications_api.PushSubscriptionView.as_view()),
]

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("sw.js", views_sw.service_worker, name="service-worker"),
    path("login", browser.login_view, name="login"),
    path("pair", remote_views.pair_page),
    path("pair/start", remote_views.pair_start),
    path("pair/status", remote_views.pair_status),
    path("pair/session", remote_views.pair_session),
    path("logout", browser.logout_view, name="logout"),
    path("admin/login/", views.admin_login),
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("docs/<str:name>", previews_views.docs_page),  # svc's docs, linked from the dashboard
    path("", include("previews_app.urls")),
]
