"""svc's foundation: what every app builds on and that names no app (docs/foundation.md)."""
