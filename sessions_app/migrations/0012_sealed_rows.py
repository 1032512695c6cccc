# Issue 41, finding 2: the rows that make svc act carry svc's seal (sessions_app/seals.py).
#
# Sessions and queued prompts already in the database are sealed here, once, as the upgrade
# finds them: prompts waiting across the upgrade are still sent and earlier sessions can still be
# resumed. Their provenance cannot be told after the fact; from now on, only what svc writes is
# sealed. Handover codes live two minutes: one from before the upgrade is simply refused.

from django.db import migrations, models


def seal_what_is_there(apps, schema_editor) -> None:  # noqa: ANN001
    from sessions_app import seals

    alias = schema_editor.connection.alias
    Session = apps.get_model("sessions_app", "Session")
    QueuedPrompt = apps.get_model("sessions_app", "QueuedPrompt")
    for session in Session.objects.using(alias).all().iterator():
        session.seal = seals.launch_seal(session)
        session.save(update_fields=["seal"])
    for row in QueuedPrompt.objects.using(alias).all().iterator():
        row.seal = seals.queued_seal(row)
        row.save(update_fields=["seal"])


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0011_prompt_keys"),
    ]

    operations = [
        migrations.AddField(
            model_name="handovercode",
            name="seal",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AddField(
            model_name="queuedprompt",
            name="seal",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AddField(
            model_name="session",
            name="seal",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.RunPython(seal_what_is_there, migrations.RunPython.noop),
    ]
