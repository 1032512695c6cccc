from django.db import migrations, models


def earlier_titles(apps, schema_editor) -> None:  # noqa: ANN001
    # A title stored before names had sources came from a first prompt or the agent: let the
    # agent's next title replace it.
    Session = apps.get_model("sessions_app", "Session")
    Session.objects.exclude(title="").update(title_by="prompt")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0009_queued_prompts"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="title_by",
            field=models.CharField(blank=True, default="", max_length=8),
        ),
        migrations.RunPython(earlier_titles, migrations.RunPython.noop),
    ]
