"""Attacks on the grader process itself (issue 8), checked on the shared fixture class.

The per-submission outcome of each attack spec (status, reason, exact passing
cells, 0 points where it earns nothing) is checked by test_autograder_grading;
here: what must hold *outside* the attacker's row — intake exactness, the CSV,
the grader's memory, the host files the attacks pointed at, the clean-up.
"""

from __future__ import annotations

import csv
import re

import autograder_specs as specs


def test_intake_conflicts_and_rejected_ids_are_reported_and_never_graded(graded_class):
    for name, (status, pattern) in specs.INTAKE.items():
        shown = ascii(name)[1:-1] if any(ord(c) < 32 for c in name) else name
        matches = [r for r in graded_class.rows if r["status"] == status and r["reason"].startswith(f"class/{shown}: ")]
        assert len(matches) == 1, (name, [r for r in graded_class.rows if r["status"] == status])
        row = matches[0]
        assert re.search(pattern, row["reason"]), (name, row["reason"])
        assert row["assignment"] == "" and float(row["score"]) == 0
    conflicts = [r for r in graded_class.rows if r["status"] == "conflict"]
    assert len(conflicts) == 6  # both entries of each of the three pairs
    graded_ids = {r["student"] for r in graded_class.rows if r["assignment"]}
    for name in specs.INTAKE:
        stem = name[:-4] if name.endswith(".zip") else name
        assert not ({stem, stem.lower(), specs.NFC_NAME} & graded_ids), name
        if stem not in (".", ".."):  # (`..` is checked below)
            assert not (graded_class.out / "feedback" / stem).exists()
    assert not (graded_class.out / "feedback" / specs.NFC_NAME).exists()
    assert not (graded_class.out.parent / "feedback").exists()  # `..` never became an output folder
    assert "conflicting student ids (6 entries, none graded)" in graded_class.stdout


def test_grades_csv_neutralizes_formulas(graded_class):
    with open(graded_class.out / "grades.csv", newline="", encoding="utf-8") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert "'=SUM(1;2)" in cells and "'@cmd" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], "a cell a spreadsheet would run"
    row = graded_class.row("=SUM(1;2)")  # graded as themselves, read back exactly
    assert row["status"] == "ok" and float(row["score"]) == float(row["max_score"])


def test_message_flood_is_dropped_at_the_socket_and_grader_memory_stays_bounded(graded_class):
    import json

    timings = {(t["student"], t["assignment"]): t for t in json.loads((graded_class.out / "timings.json").read_text())}
    flood = timings[("attack_message_flood", specs.A02)]["grader_peak_kb"]
    others = [t["grader_peak_kb"] for k, t in timings.items() if k[0] != "attack_message_flood" and t["grader_peak_kb"]]
    assert flood and others
    # each message was 64 MiB: had one reached Python, the worker's peak would be >= 64 MiB above the rest
    assert flood <= max(others) + 32 * 1024, (flood, sorted(others)[-3:])


def test_links_planted_by_student_code_are_never_followed(graded_class):
    canary = graded_class.root / "canary"
    now = {p.name: p.read_bytes() for p in sorted(canary.iterdir())}
    assert now == graded_class.canary  # nothing deleted, changed or added there
    result = graded_class.result("attack_observe_link")
    cell = [c for c in result["cells"] if c["grade_id"] == "global_max_share_value"][0]
    assert not cell["passed"]  # the reference's own file was not read


def test_hostile_trees_are_removed(graded_class):
    assert graded_class.row("attack_hostile_tree")["status"] == "ok"
    assert "INTERNAL GRADER ERRORS" not in graded_class.stderr
    left = list((graded_class.root / "tmp").iterdir())
    assert not left, f"left behind: {left}"


def test_observation_files_not_written_by_the_hidden_part_are_logged(graded_class):
    logs = graded_class.result("tamper_fake_record").get("observe_log", [])
    assert any(
        re.match(r"scaled_sum_total: found before the cell ran: .*'scaled_sum_total\.json'", line) for line in logs
    ), logs
    assert not graded_class.result("correct").get("observe_log")


def test_the_hidden_half_of_a_test_cell_never_reaches_a_feedback_page(graded_class):
    """Issue 16: the kernel prints the source of every execution (a `pre_run_cell` callback, plainly and
    reversed), keeps them, prints them again after the last test and raises them from an answer.
    The hidden parts run after every other cell and whatever they printed or raised is dropped, so
    the page shows only what the kernel saw before any hidden line reached it."""
    import html
    import json

    page = html.unescape(
        (graded_class.out / "feedback" / "attack_print_hidden_source" / f"{specs.A02}.html").read_text()
    )
    autograded = json.loads(
        (graded_class.out / "autograded" / "attack_print_hidden_source" / specs.A02 / f"{specs.A02}.ipynb").read_text()
    )
    outputs = json.dumps([c.get("outputs", []) for c in autograded["cells"]])
    assert "SEEN:" in page and "NEES:" in page and "ALL:" in page  # it printed what it saw: visible parts
    assert "q.scaled_sum.check(scaled_sum)" in page
    # (the grader's own snapshot code, run after each visible part, may show: it is no hidden line; the
    # restore runs only in the hidden phase, so it must not)
    for leak in (
        "BEGIN HIDDEN",
        "NEDDIH NIGEB",
        "record(",
        "(drocer",
        ".observe(",
        "(evresbo.",
        "_autograder_snapshots'].pop(",
        "(pop.]'stohspans_redargotua_",
    ):
        assert leak not in page, leak
        assert leak not in outputs, leak
    cell = [
        c for c in graded_class.result("attack_print_hidden_source")["cells"] if c["grade_id"] == "scaled_mean_value"
    ][0]
    assert not cell["passed"] and re.match(specs.HIDDEN_ERROR_REASON, cell["reason"]), cell


def test_a_circulated_table_of_right_figures_scores_nothing_in_a_graded_class(graded_class):
    """Issue 46: notebook 10's formula answers replaced by a table of right figures (the solution's, on the
    visible cases and on the old fixed hidden cases). The visible checks pass, since the table holds their
    figures; the grader draws this run's cases from its secret, hands them to the kernel and computes the
    solution's figures on them, so the three formula cells score 0, for their values. The honest right answers
    of the class (`equivalent_10`, the solution) keep every point (test_autograder_grading)."""
    import tamper_specs

    result = graded_class.result("circulated_10", tamper_specs.A10)
    cells = {c["grade_id"]: c for c in result["cells"]}
    assert cells["swiglu_block_megatron"]["passed"]
    for gid in ("step_costs_formulas", "choose_layout_budget", "step_time_model"):
        assert not cells[gid]["passed"] and float(cells[gid]["points"]) == 0, cells[gid]
        assert "values differ" in cells[gid]["reason"], cells[gid]  # the judge's word
    import json

    nb = json.loads(
        (graded_class.out / "autograded" / "circulated_10" / tamper_specs.A10 / f"{tamper_specs.A10}.ipynb").read_text(
            encoding="utf-8"
        )
    )
    printed = json.dumps([c.get("outputs", []) for c in nb["cells"]], ensure_ascii=False)
    for name in ("step_costs", "choose_layout", "step_time"):  # they ran and exported: the judge decided the rest
        assert f"• `{name}` runs and exports." in printed, name
