"""The corpus format, corpus loading, and the bundled corpus itself.

The bundled corpus must have at least 40 programs covering every category, all
running on plain ndarrays; differentiated in every mode, none may be wrong or
crash, and the modes must relate as the design says (strict refuses exactly
the mutating programs, poison accepts a superset of strict, snapshot a
superset of poison). The notes that call a program's poison error genuine or
a false alarm are checked against the runner's classification.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

from mutagrad.report import (
    CATEGORIES,
    DEFAULT_CORPUS,
    CorpusError,
    Outcome,
    PoisonVerdict,
    Program,
    add_to,
    load_corpus,
    render_text,
    run_report,
)
from mutagrad.report.runner import as_float, fresh_args
from mutagrad.report.scenarios import EXAMPLES_MISSING, examples_directory

CORPUS = load_corpus(DEFAULT_CORPUS)
# The seed scenarios' functions are the example scripts', which a wheel does not ship.
needs_examples = pytest.mark.skipif(examples_directory() is None, reason=EXAMPLES_MISSING)


@pytest.fixture(scope="module")
def full_report():
    """Every bundled program in every mode, with the cheapest measurements."""
    return run_report(
        CORPUS, corpus=DEFAULT_CORPUS, repeats=1, sample_seconds=1e-4, measure_memory=False
    )


@needs_examples
def test_bundled_corpus_has_forty_programs_in_every_category():
    assert len(CORPUS) >= 40
    assert {p.category for p in CORPUS} == set(CATEGORIES)
    names = [p.name for p in CORPUS]
    assert len(names) == len(set(names))
    assert all(p.description and p.source for p in CORPUS)
    assert sum(p.category == "pure" for p in CORPUS) >= 5
    assert sum(p.category == "seed" for p in CORPUS) >= 10


@pytest.mark.parametrize("program", CORPUS, ids=[p.name for p in CORPUS])
def test_every_program_runs_on_plain_ndarrays(program):
    args = fresh_args(program.args)
    value = as_float(program.function(*args))
    assert math.isfinite(value)
    again = as_float(program.function(*fresh_args(program.args)))
    assert again == value  # deterministic
    for original, used in zip(program.args, fresh_args(program.args)):
        if isinstance(original, np.ndarray):
            assert np.array_equal(original, used)


KNOWN_ISSUES = {p.name for p in CORPUS if p.known_issue}


def test_no_program_is_wrong_or_crashes_in_any_mode(full_report):
    """Only programs marked with a known mutagrad bug may fail (the bundled corpus marks none)."""
    assert full_report.unexpected_failures == (), render_text(full_report)
    for p in full_report.programs:
        if p.name not in KNOWN_ISSUES:
            assert all(r.outcome in (Outcome.RIGHT, Outcome.REFUSED) for r in p.modes), p.name


@pytest.mark.parametrize("name", ["rrule_of_mutating_function", "defvjp_of_mutating_function"])
def test_rules_of_mutating_functions_are_refused_in_every_mode(full_report, name):
    """ChainRules' warning case: a rule whose function mutates its argument. An early
    mutagrad returned a wrong gradient here (this report found it); now it must refuse."""
    program = full_report.program(name)
    assert {r.outcome for r in program.modes} == {Outcome.REFUSED}
    assert {r.error_type for r in program.modes} == {"NotDifferentiableError"}


def test_strict_mode_refuses_exactly_the_mutating_programs(full_report):
    for p in full_report.programs:
        if p.name in KNOWN_ISSUES:
            continue  # the write happens inside a rule, out of the tape's sight
        strict = p.mode("strict")
        if p.program.mutates:
            assert strict.outcome is Outcome.REFUSED, p.name
        else:
            assert {r.cell for r in p.modes} == {strict.cell}, p.name  # modes agree


def test_each_mode_accepts_a_superset_of_the_stricter_one(full_report):
    for p in full_report.programs:
        if p.name in KNOWN_ISSUES:
            continue
        if p.mode("strict").accepted:
            assert p.mode("poison").accepted, p.name
        if p.mode("poison").accepted:
            assert p.mode("snapshot").accepted, p.name


def test_poison_errors_match_the_notes(full_report):
    for p in full_report.programs:
        verdict = p.mode("poison").poison_verdict
        note = p.program.note
        if note.startswith("genuine"):
            assert verdict is PoisonVerdict.GENUINE, p.name
        elif note.startswith("false alarm"):
            assert verdict is PoisonVerdict.FALSE_ALARM, p.name
        else:
            assert verdict is None, p.name
        if verdict is not None:
            assert p.mode("snapshot").accepted, p.name


@needs_examples
def test_seed_scenarios_behave_as_the_seeds_and_the_proposal_say(full_report):
    for name in ("f!", "g", "addone", "fill, x*x unused"):
        assert full_report.result(name, "strict").cell == "MutationError"
        assert full_report.result(name, "poison").accepted
    assert full_report.result("fill after x*x", "poison").cell == "Poisoned (genuine)"
    snapshot = full_report.result("fill after x*x", "snapshot")
    assert snapshot.accepted and snapshot.bytes_copied >= 3 * 8
    for name in ("tryme", "exception", "mse+rrule", "sum3+rrule", "addone+rrule"):
        assert {r.cell for r in full_report.program(name).modes} == {"ok"}


@needs_examples
def test_the_seed_scenarios_run_the_example_scripts_own_functions():
    examples = examples_directory()
    for name in ("f!", "g", "addone", "tryme", "exception", "mse", "sum3", "fill after x*x"):
        (program,) = [p for p in CORPUS if p.name == name]
        assert program.function.__code__.co_filename.startswith(str(examples)), name


def test_load_corpus_from_a_path_and_from_a_module_name(tmp_path, monkeypatch):
    source = textwrap.dedent(
        """
        import numpy as np
        from mutagrad.report import Program, add_to

        CORPUS = []

        @add_to(CORPUS, category="mine", args=(np.ones(2),), mutates=False)
        def doubled(x):
            '''sum(2 * x)'''
            return np.sum(2 * x)
        """
    )
    path = tmp_path / "user_corpus_for_test.py"
    path.write_text(source)
    (program,) = load_corpus(str(path))
    assert program.name == "doubled" and program.description == "sum(2 * x)"
    assert program.category == "mine" and program.args[0].shape == (2,)
    monkeypatch.syspath_prepend(str(tmp_path))
    (again,) = load_corpus("user_corpus_for_test")
    assert again.name == "doubled"


def test_corpus_errors_are_reported(tmp_path):
    with pytest.raises(CorpusError, match="no such corpus file"):
        load_corpus(str(tmp_path / "absent.py"))
    with pytest.raises(CorpusError, match="cannot import corpus module"):
        load_corpus("no_such_module_anywhere")
    empty = tmp_path / "no_corpus.py"
    empty.write_text("X = 1\n")
    with pytest.raises(CorpusError, match="no module-level CORPUS"):
        load_corpus(str(empty))
    twice = tmp_path / "twice.py"
    twice.write_text(
        "from mutagrad.report import Program\n"
        "p = dict(name='a', category='c', description='d', function=abs, args=(1.0,),"
        " mutates=False)\n"
        "CORPUS = [p, p]\n"
    )
    with pytest.raises(CorpusError, match="two programs are named 'a'"):
        load_corpus(str(twice))
    bad = tmp_path / "bad_keys.py"
    bad.write_text("CORPUS = [{'name': 'a'}]\n")
    with pytest.raises(CorpusError, match="wrong or missing keys"):
        load_corpus(str(bad))


def test_add_to_returns_the_function_unchanged():
    corpus: list[Program] = []

    @add_to(corpus, category="c", args=(1.0,), mutates=False, description="square")
    def square(x):
        return x * x

    assert square(3.0) == 9.0
    assert corpus[0].function is square and corpus[0].args == (1.0,)
    assert corpus[0].argument_summary == "float"
