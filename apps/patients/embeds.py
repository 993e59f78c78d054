"""What other areas fold into GET /patients/{id}?embed=...: a registry each area fills in its AppConfig.ready().

    register_patient_embed(PatientEmbed(name="journeys", field=..., render=...))

`field()` builds the serializer field that describes the key in the PatientDetail schema; `render(*, organization,
patient)` returns its wire data (snake_case; the renderer camelizes). The patients app names the keys it accepts
(EMBEDS in its api serializers) and never imports the areas that answer them.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers


@dataclass(frozen=True)
class PatientEmbed:
    name: str
    field: Callable[[], serializers.Field]
    render: Callable[..., Any]


_embeds: dict[str, PatientEmbed] = {}


def register_patient_embed(embed: PatientEmbed) -> PatientEmbed:
    _embeds[embed.name] = embed
    return embed


def patient_embed(name: str) -> PatientEmbed | None:
    return _embeds.get(name)
