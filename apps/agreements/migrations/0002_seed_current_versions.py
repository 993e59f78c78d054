"""The versions in force when agreements were introduced: the terms of service and the data-processing agreement,
both needing the owner's acceptance. Later versions are written and published by platform staff in the admin."""

from datetime import UTC, datetime

from django.db import migrations

PUBLISHED = datetime(2025, 6, 1, tzinfo=UTC)
EFFECTIVE = datetime(2025, 7, 1, tzinfo=UTC)

TERMS = """These terms govern the practice's use of the service. By accepting them, the practice owner agrees on \
behalf of the practice.

1. The service. We provide a hosted CRM and practice workspace for dental practices: patients and leads, \
appointments, conversations, campaigns, payments and the related integrations. Features may change; we give \
reasonable notice before removing one the practice relies on.

2. Accounts. The practice is responsible for who it invites, for the roles it gives them, for keeping credentials \
(passwords, API keys, connected apps) secret, and for everything done with them. Tell us at once of any \
unauthorised use.

3. Acceptable use. Do not use the service to send unsolicited messages, to store data you have no right to process, \
to probe or overload the service, or to break the law. We may suspend access that puts the service or others at \
risk, and will tell the practice why.

4. Practice data. The practice owns the data it puts into the service. We process it only to provide the service, \
under the data-processing agreement. The practice can export its data at any time and for 30 days after its \
subscription ends.

5. Fees. Fees are those of the practice's plan, billed in advance. Unpaid invoices may lead to suspension after \
notice.

6. Availability and liability. We aim for high availability but do not guarantee uninterrupted service. Our \
liability is limited to the fees paid in the 12 months before the claim, except where the law does not allow \
a limit.

7. Changes. We publish new versions of these terms in the service. A new version applies from its effective date; \
the practice owner is asked to accept it.

8. Ending. The practice may stop at the end of any billing period. We may end the agreement for serious breach after \
notice and a chance to remedy it."""

DPA = """This data-processing agreement forms part of the terms of service. The practice is the controller of the \
personal data it puts into the service; we process it as its processor (GDPR Article 28).

1. Instructions. We process personal data only on the practice's documented instructions: to provide, secure and \
support the service. We do not sell it or use it for our own purposes.

2. Confidentiality. Everyone who can access personal data is bound by confidentiality, and access is limited to what \
their work needs.

3. Security. We keep appropriate technical and organisational measures: encryption in transit and of secrets at \
rest, access control by role, audit logging, backups and tested recovery.

4. Sub-processors. We use sub-processors for hosting, e-mail, messaging, telephony and payments. We list them in \
the service and give notice before adding one; the practice may object.

5. Assistance. We help the practice answer data-subject requests (access, rectification, erasure, portability) and \
with impact assessments and consultations where the law requires them.

6. Breaches. We notify the practice without undue delay, and in any case within 48 hours, of a personal-data breach \
affecting its data, with what we know and what we are doing.

7. Location. Practice data is stored in the region the practice belongs to (EU or US). Transfers outside it rely on \
an adequacy decision or standard contractual clauses.

8. End of processing. When the agreement ends we delete the practice's personal data after the 30-day export \
window, unless the law requires us to keep it.

9. Audits. We make available the information needed to show compliance and allow audits with reasonable notice."""


def seed(apps, schema_editor):
    Agreement = apps.get_model("agreements", "Agreement")
    for kind, title, body in (
        ("terms", "Terms of service", TERMS),
        ("data_processing", "Data-processing agreement", DPA),
    ):
        Agreement.objects.update_or_create(
            kind=kind,
            version="2025-06",
            defaults={
                "title": title,
                "body": body,
                "published_at": PUBLISHED,
                "effective_at": EFFECTIVE,
                "requires_acceptance": True,
            },
        )


class Migration(migrations.Migration):
    dependencies = [("agreements", "0001_initial")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
