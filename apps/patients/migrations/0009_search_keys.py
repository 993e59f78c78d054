"""The search's second step keyed by practice: patients_search_keys(organization_id, search_words) turns each word
into '<first 8 hex digits of the practice id>:<word>', and one GIN index on it replaces the (organization, words)
one, which intersected the practice's whole posting tree with every matched term's."""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models

# IMMUTABLE: the same practice and words always give the same keys (uuid → text and the string functions do not
# depend on settings). search_words never holds an empty word, so no key is the bare prefix of a real word.
CREATE_FUNCTION = """
CREATE OR REPLACE FUNCTION patients_search_keys(organization uuid, words text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    AS $$ SELECT string_to_array(
              left(organization::text, 8) || ':' || array_to_string(words, ' ' || left(organization::text, 8) || ':'),
              ' ') $$
"""
DROP_FUNCTION = "DROP FUNCTION IF EXISTS patients_search_keys(uuid, text[])"


class Migration(migrations.Migration):
    dependencies = [
        ("patients", "0008_captured_kind_and_match_indexes"),
    ]

    operations = [
        migrations.RunSQL(CREATE_FUNCTION, DROP_FUNCTION),
        migrations.RemoveIndex(
            model_name="patient",
            name="patients_org_search_words_idx",
        ),
        migrations.AddIndex(
            model_name="patient",
            index=django.contrib.postgres.indexes.GinIndex(
                models.Func(
                    models.F("organization"),
                    models.F("search_words"),
                    function="patients_search_keys",
                    output_field=django.contrib.postgres.fields.ArrayField(base_field=models.TextField(), size=None),
                ),
                fastupdate=False,
                name="patients_search_keys_idx",
            ),
        ),
    ]
