"""Django settings for svc. Everything user-facing comes from core.config ($SVC_HOME)."""

from pathlib import Path

import dj_database_url

from core import config
from fleet_app import conf as fleet_conf

BASE_DIR = Path(__file__).resolve().parent.parent
SVC_HOME = config.svc_home()

# Validate settings.json now: a bad file must stop start-up with file, key and reason.
_settings = config.current_settings()

SECRET_KEY = config.load_auth().owner_token
KNOBS = config.knobs()
DEBUG = KNOBS.debug
# Host names are judged before Django, by svc's own ASGI layers: on the main port a foreign host
# reaches shares only (previews_app.asgi.PreviewRouter, against DNS rebinding); on the remote
# listener a tunnel's public name is whatever its provider gives, and remote_app.gate decides.
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's assets, served locally (/api/docs/)
    "channels",
    # svc's apps, lowest layer first (docs/foundation.md): their ready() runs in this order.
    "sessions_app",
    "subagents_app",
    "bridge_app",
    "previews_app",
    "remote_app",
    "fleet_app",
    "notifications_app",
    "mcp_app",
    "channels_app",
    "svcproject",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "core.auth.OwnerTokenMiddleware",
    "fleet_app.middleware.FleetMiddleware",  # another member's sessions (contract §18)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "svcproject.urls"
ASGI_APPLICATION = "svcproject.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def _database() -> dict:
    if KNOBS.database_url:
        # Kept with their request threads (svcproject/request_threads.py), checked before reuse.
        return dict(
            dj_database_url.parse(KNOBS.database_url, conn_max_age=600, conn_health_checks=True)
        )
    # WAL + IMMEDIATE: read-then-write transactions take the write lock at BEGIN instead of
    # failing at lock upgrade ("database is locked") under concurrent async writers.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": SVC_HOME / "db.sqlite3",
        # One connection per thread for the daemon's life: opening one (its PRAGMAs) was a fifth
        # of starting a session, paid on every request and every database hop.
        "CONN_MAX_AGE": None,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
        "TEST": {"NAME": str(SVC_HOME / "test-db.sqlite3")},
    }


# Contract §18: a fleet member keeps its own tables in its own schema of the shared database, and
# the fleet's shared rows in another (fleet_app.conf); without a fleet, one database as ever.
FLEET = fleet_conf.fleet_config(
    _settings, SVC_HOME, database=_database(), redis_url=KNOBS.redis_url
)
DATABASES = fleet_conf.databases(_database(), FLEET)
if FLEET is not None:
    DATABASE_ROUTERS = ["fleet_app.routers.FleetRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


# A consumer waits for its next message with BZPOPMIN for channels-redis's 5 s; redis-py 8 also
# gives up reading a reply after 5 s by default, so an empty wait's answer, arriving a moment
# late on a busy machine, ended the WebSocket with 1011. Reads may take this long instead.
REDIS_READ_TIMEOUT_S = 30


def channel_layers(redis_url: str | None, prefix: str) -> dict:
    if redis_url:
        host = {"address": redis_url, "socket_timeout": REDIS_READ_TIMEOUT_S}
        return {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [host], "prefix": prefix, "capacity": 1000},
            }
        }
    # Capacity well above a burst of changes: a full channel silently drops group messages.
    return {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1000}}
    }


CHANNEL_LAYERS = channel_layers(
    fleet_conf.channel_layer_redis(KNOBS.redis_url, FLEET), KNOBS.redis_prefix
)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = SVC_HOME / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]

# svc-prefixed names: the preview proxy strips exactly svc's cookies and leaves a previewed
# Django app its own `sessionid` and `csrftoken`.
SESSION_COOKIE_NAME = "svc_session"
# Rows kept under a keyed hash of the cookie's id: the database holds no cookie that opens svc.
SESSION_ENGINE = "core.session_store"
CSRF_COOKIE_NAME = "svc_csrftoken"
SESSION_COOKIE_SAMESITE = "Strict"
SESSION_COOKIE_HTTPONLY = True
# Browser sessions (core.browser) end after this long without a request.
SESSION_COOKIE_AGE = KNOBS.browser_idle_seconds
SESSION_SAVE_EVERY_REQUEST = True
# The CSRF secret lives in the server-side session: no cookie another local page could plant.
CSRF_USE_SESSIONS = True
CSRF_COOKIE_SAMESITE = "Strict"
# svc's pages never tell another origin where they came from (the dashboard host must stay
# unguessable). Not "no-referrer": with it Chromium sends `Origin: null` on svc's own form posts.
SECURE_REFERRER_POLICY = "same-origin"
LOGIN_URL = "/login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["core.auth.OwnerTokenAuthentication"],
    # JSON only: a form post (the one body a page of another site can send without a CORS
    # preflight) gets 415 before any view runs. Nested past core.untrusted_json's limit → 400.
    "DEFAULT_PARSER_CLASSES": ["core.api_parsers.UntrustedJSONParser"],
    "DEFAULT_PERMISSION_CLASSES": ["core.auth.IsOwner"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "core.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "svc internal API",
    "DESCRIPTION": "Internal: backs the dashboard and the CLI. Not a stable public interface.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "core.logfilter.RedactSecrets"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["redact"]},
        "file": {
            "class": "logging.handlers.RotatingFileHandler",
            "filename": str(SVC_HOME / "logs" / "svc.log"),
            "maxBytes": 5_000_000,
            "backupCount": 3,
            "filters": ["redact"],
        },
    },
    # Configuring root here makes the mcp SDK's logging.basicConfig() a no-op.
    "root": {"handlers": ["console", "file"], "level": KNOBS.log_level},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        # daphne's access log: failures (4xx/5xx) always, every request only when debugging — a
        # log line per request costs more than a tool call's own work on the hot paths.
        "django.channels.server": {"level": "DEBUG" if KNOBS.log_level == "DEBUG" else "WARNING"},
    },
}
