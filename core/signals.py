"""The foundation's own events. Apps connect to them in their `AppConfig.ready()`; the
foundation never names an app (docs/foundation.md "Apps plug in")."""

from django.dispatch import Signal

# settings.json was (re)read: each app mirrors what it declares into the database, in the order
# the apps are installed (sessions' agents before the MCP entries written for them). Receivers
# take `settings` (core.config.Settings); an error stops the mirror, as a bad file would.
settings_mirrored = Signal()

# The owner and MCP tokens were replaced (core.rotation.tokens_rotate): whatever was
# granted under the old ones ends (paired devices), whatever carries them is written again
# (agents' MCP entries). Receivers take `auth` (core.config.Auth).
tokens_rotated = Signal()
