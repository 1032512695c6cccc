"""Every committed change to a listed model pushes its live list, admin edits included.

QuerySet.update() and bulk operations send no signals: services that use them call
lists.broadcast_on_commit themselves.
"""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from sessions_app import lists
from sessions_app.models import Channel, Session, Tunnel

_LIST_OF = {Session: "sessions", Channel: "channels", Tunnel: "tunnels"}


@receiver(post_save)
@receiver(post_delete)
def push_list(sender: type, **kwargs: object) -> None:
    name = _LIST_OF.get(sender)
    if name:
        lists.broadcast_on_commit(name)
