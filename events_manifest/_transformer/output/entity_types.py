"""An entity type of a run's kept events: the value its message lists, and the text form its rows
carry through Arrow (`ENTITY URI`, and ` FORMAT` in shred mode), written and read here only."""

from __future__ import annotations

import attrs


def type_text(schema_key: str, entity: str, format: str = "") -> str:
    """The text form of `EntityType(schema_key, entity, format)`, without building one."""
    return f"{entity} {schema_key} {format}" if format else f"{entity} {schema_key}"


@attrs.frozen(order=True)
class EntityType:
    """The schema key, the entity kind (`CONTEXT`, `SELF_DESCRIBING_EVENT`), and in shred mode the
    format (`TSV`, `JSON`)."""

    schema_key: str
    entity: str
    format: str = ""

    @property
    def text(self) -> str:
        return type_text(self.schema_key, self.entity, self.format)

    @classmethod
    def parse(cls, text: str) -> EntityType:
        """The type a row's text names (see `type_text`)."""
        entity, schema_key, *format = text.split(" ")
        return cls(schema_key, entity, *format)
