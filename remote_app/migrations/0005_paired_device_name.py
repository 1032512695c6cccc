# Issue 43, friction 8: a paired device has a name the owner reads (and may change) instead of
# its raw User-Agent. Devices paired before it keep "" and are shown by their readable name.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('remote_app', '0004_sealed_pairings'),
    ]

    operations = [
        migrations.AddField(
            model_name='paireddevice',
            name='name',
            field=models.CharField(blank=True, db_default='', default='', max_length=60),
        ),
    ]
