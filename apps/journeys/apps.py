from django.apps import AppConfig


class JourneysConfig(AppConfig):
    name = "apps.journeys"
    label = "journeys"
    verbose_name = "Treatments, pipelines and journeys"

    def ready(self):
        from apps.journeys.hooks import erase_journeys_of_patients, repoint_journeys_to_survivor
        from apps.patients import hooks

        hooks.on_erase(erase_journeys_of_patients)
        hooks.on_merge(repoint_journeys_to_survivor)
