"""A handled event's outcome: `failed` with its reason when handling it raised (security review,
issue 31, finding 6), so a bad update is recorded instead of replayed into a wedge."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("channels_app", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="handledevent",
            name="status",
            field=models.CharField(
                choices=[("taken", "taken"), ("failed", "failed")], default="taken", max_length=16
            ),
        ),
        migrations.AddField(
            model_name="handledevent",
            name="error",
            field=models.CharField(blank=True, max_length=500),
        ),
    ]
