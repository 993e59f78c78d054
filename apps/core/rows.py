"""Model instances from the columns of a hand-written SQL statement, for the few hot reads where one statement
(joins the ORM cannot express, such as LATERAL) beats several ORM queries.

`ModelColumns(Model, "alias")` lists every concrete column of the model under a table alias for a SELECT list, and
builds the instance back from its slice of a row with `Model.from_db`, after the same database converters the ORM's
compiler applies (JSON, arrays, …), so the instance is exactly what a queryset would have returned.
"""

from django.db import connections


class ModelColumns:
    def __init__(self, model, alias: str):
        self.model, self.alias = model, alias
        self.fields = tuple(model._meta.concrete_fields)
        self.attnames = [field.attname for field in self.fields]
        self.width = len(self.fields)
        self._pk_index = self.fields.index(model._meta.pk)
        self._converters: dict[str, list] = {}

    def select_list(self, using: str = "default") -> str:
        quote = connections[using].ops.quote_name
        return ", ".join(f"{self.alias}.{quote(field.column)}" for field in self.fields)

    @property
    def table(self) -> str:
        return self.model._meta.db_table

    def _converters_for(self, connection) -> list:
        found = self._converters.get(connection.alias)
        if found is None:
            found = []
            for index, field in enumerate(self.fields):
                column = field.get_col(self.alias)
                chain = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
                if chain:
                    found.append((index, column, chain))
            self._converters[connection.alias] = found
        return found

    def build(self, row, start: int, using: str = "default"):
        """The instance in row[start:start + width]; None when its primary key is NULL (an outer join found none)."""
        values = list(row[start : start + self.width])
        if values[self._pk_index] is None:
            return None
        connection = connections[using]
        for index, column, chain in self._converters_for(connection):
            for converter in chain:
                values[index] = converter(values[index], column, connection)
        return self.model.from_db(using, self.attnames, values)
