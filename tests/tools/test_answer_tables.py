"""tools/answer_tables.py: the visible checks' tables are what the solution notebook's answers compute, and a
stale one is refused (`make check-notebooks`) until `make notebooks` rewrites it."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path

from tools import answer_tables


@dataclasses.dataclass(frozen=True)
class _TableAt(answer_tables.Table):
    at: Path = Path()

    @property
    def path(self) -> Path:
        return self.at


def test_a_stale_table_is_refused_and_rewritten(tmp_path, monkeypatch, capsys):
    real = answer_tables.TABLES[0]
    table = _TableAt(real.notebook, real.module, real.answers, at=tmp_path / "table.json")
    monkeypatch.setattr(answer_tables, "TABLES", (table,))
    table.path.write_text(real.path.read_text(encoding="utf-8").replace("8", "9"), encoding="utf-8")
    assert answer_tables.main(["--check"]) == 1
    assert "stale (run `make notebooks`): table.json" in capsys.readouterr().err
    assert answer_tables.main([]) == 0 and answer_tables.main(["--check"]) == 0
    assert table.path.read_text(encoding="utf-8") == real.path.read_text(encoding="utf-8")


def test_the_tables_come_from_the_solution_notebooks_answers():
    costs, times = answer_tables.TABLES
    answers = answer_tables.read_solution_answers(costs.notebook, (*costs.answers, *times.answers))
    figures = json.loads(costs.path.read_text(encoding="utf-8"))
    config, layout, batch = importlib.import_module(costs.module).COST_CASES[0]
    assert figures["step_costs"][0]["want"] == answers["step_costs"](config, layout, batch)
    figures = json.loads(times.path.read_text(encoding="utf-8"))
    config, layout, batch, chip = importlib.import_module(times.module)._TIME_CASES[0]
    assert figures["step_time"][0]["want"] == answers["step_time"](config, layout, batch, dict(chip))
    assert costs.path.name == "answers.json" and times.path.name == "time_answers.json"
