"""The OSD device layouts (bench/layouts.toml), resolved for a round's spec."""
from __future__ import annotations

from .. import paths
from ..common import EXIT_ERROR, StageError, load_toml

LAYOUTS = paths.BENCH / "layouts.toml"
DEFAULT = "hdd"
DEVICES = ("file", "loop")


def load_layout(name: str = DEFAULT) -> dict:
    """One layout's table with its name; a clear error naming the file for an
    unknown name or a malformed table."""
    layouts = load_toml(LAYOUTS)
    if name not in layouts:
        raise StageError(f"no layout {name!r} in {LAYOUTS}; known: {', '.join(layouts)}", EXIT_ERROR)
    layout = dict(layouts[name])
    if layout.get("device", "file") not in DEVICES:
        raise StageError(f"{LAYOUTS}: [{name}] device = {layout.get('device')!r}; one of {', '.join(DEVICES)}",
                         EXIT_ERROR)
    if not isinstance(layout.get("expect", {}), dict):
        raise StageError(f"{LAYOUTS}: [{name}.expect] must be a table", EXIT_ERROR)
    return {"name": name, **layout}


def layout_names() -> list[str]:
    return list(load_toml(LAYOUTS))
