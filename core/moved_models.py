"""Moving a model from one app to another without touching its rows (used by migrations): the
table keeps its name, only Django's state moves (SeparateDatabaseAndState), and the model's
content type follows, so admin history and permissions stay attached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def content_types_moved(old_app: str, new_app: str, models: tuple[str, ...]) -> Callable:
    """A RunPython forward function: the content types of `models` now belong to `new_app`."""

    def forward(apps: Any, schema_editor: Any) -> None:
        content_type = apps.get_model("contenttypes", "ContentType")
        for model in models:
            if content_type.objects.filter(app_label=new_app, model=model).exists():
                continue  # already made by a post-migrate run of the new app
            content_type.objects.filter(app_label=old_app, model=model).update(app_label=new_app)

    return forward


def content_types_back(old_app: str, new_app: str, models: tuple[str, ...]) -> Callable:
    return content_types_moved(new_app, old_app, models)
