"""The one form of a result the core hands over as JSON (a diagnosis, an SGLang breakdown or
plan): the dict itself, read by key or through the subclass's typed properties."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JsonResult:
    """`data` is the core's JSON as a dict; `result[key]` reads it, to_dict / to_json copy it."""

    data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2)
