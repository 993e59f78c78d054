import os
import sys

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
# Celery's worker and beat fork their processes: they keep plain connections rather than share a pool across a fork.
if os.path.basename(sys.argv[0]).startswith("celery") or sys.argv[1:2] == ["celery"]:
    os.environ.setdefault("SVC_DB_POOL", "0")

app = Celery("practice_crm")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
