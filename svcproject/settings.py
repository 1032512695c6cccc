"""Django settings for svc. Everything user-facing comes from svcproject.config ($SVC_HOME)."""

import os
from pathlib import Path

import dj_database_url

from svcproject import config

BASE_DIR = Path(__file__).resolve().parent.parent
SVC_HOME = config.svc_home()
SVC_PORT = config.svc_port()

# Validate settings.json now: a bad file must stop start-up with file, key and reason.
config.current_settings()

SECRET_KEY = config.load_auth().owner_token
DEBUG = os.environ.get("SVC_DEBUG") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", ".localhost"]

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
    "channels",
    "sessions_app",
    "bridge_app",
    "previews_app",
    "mcp_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "svcproject.auth.OwnerTokenMiddleware",
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
    url = os.environ.get("DATABASE_URL")
    if url:
        return dj_database_url.parse(url, conn_max_age=0)
    # WAL + IMMEDIATE: read-then-write transactions take the write lock at BEGIN instead of
    # failing at lock upgrade ("database is locked") under concurrent async writers.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": SVC_HOME / "db.sqlite3",
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
        "TEST": {"NAME": str(SVC_HOME / "test-db.sqlite3")},
    }


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def _channel_layers() -> dict:
    redis_url = os.environ.get("SVC_REDIS_URL")
    if redis_url:
        return {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {
                    "hosts": [redis_url],
                    "prefix": os.environ.get("SVC_REDIS_PREFIX", "svc"),
                    "capacity": 1000,
                },
            }
        }
    # Capacity well above a burst of changes: a full channel silently drops group messages.
    return {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1000}}
    }


CHANNEL_LAYERS = _channel_layers()

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
CSRF_COOKIE_NAME = "svc_csrftoken"
SESSION_COOKIE_SAMESITE = "Strict"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Strict"
LOGIN_URL = "/login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["svcproject.auth.OwnerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "svcproject.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "svc internal API",
    "DESCRIPTION": "Internal: backs the dashboard and the CLI. Not a stable public interface.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "svcproject.logfilter.RedactSecrets"}},
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
    "root": {"handlers": ["console", "file"], "level": os.environ.get("SVC_LOG_LEVEL", "INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}
