import json


def write_result(command, result: dict, *, as_json: bool) -> None:
    """--json prints one JSON object (for scripts); otherwise one readable line per key."""
    if as_json:
        command.stdout.write(json.dumps(result))
        return
    for name, value in result.items():
        command.stdout.write(f"{name}: {value if value is not None else '-'}")
