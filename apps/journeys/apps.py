from django.apps import AppConfig


class JourneysConfig(AppConfig):
    name = "apps.journeys"
    label = "journeys"
    verbose_name = "Treatments, pipelines and journeys"

    def ready(self):
        from apps.journeys.hooks import erase_journeys_of_patients, repoint_journeys_to_survivor
        from apps.journeys.renderers import embed_journeys, embed_journeys_field
        from apps.patients.public import PatientEmbed, on_erase, on_merge, register_patient_embed

        on_erase(erase_journeys_of_patients)
        on_merge(repoint_journeys_to_survivor)
        register_patient_embed(PatientEmbed(name="journeys", field=embed_journeys_field, render=embed_journeys))
