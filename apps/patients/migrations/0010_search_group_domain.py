"""The search's second step in groups: patients_search_group, a domain over text[], lets one statement hold an array
of term groups, so `keys && ANY(groups)` runs one GIN scan per group (the bitmap index scan iterates the array).
One scan over all of a word's similar terms costs matches x terms; about 32 terms a scan keeps it near-linear."""

from django.db import migrations

CREATE_DOMAIN = "CREATE DOMAIN patients_search_group AS text[]"
DROP_DOMAIN = "DROP DOMAIN IF EXISTS patients_search_group"


class Migration(migrations.Migration):
    dependencies = [
        ("patients", "0009_search_keys"),
    ]

    operations = [
        migrations.RunSQL(CREATE_DOMAIN, DROP_DOMAIN),
    ]
