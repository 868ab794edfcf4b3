"""Forward mode on the bundled corpus (issue 23): every program numpy runs is accepted by
``jacfwd`` with the reference gradient, or is named below with the reason.

The report's forward column judges ``jacfwd`` against finite differences;
this test holds it to a tighter oracle: snapshot mode's gradient where
snapshot mode runs the program (exact, every write allowed), else central
finite differences with the program's own tolerances.
"""

from __future__ import annotations

import warnings

import numpy as np

import mutagrad as mg
from mutagrad.report.programs import CORPUS
from mutagrad.testing.finite_differences import numerical_gradient

# The programs forward mode refuses, and why (each by name, never a wrong number).
REFUSED = {
    "comprehension": "np.array of a list of traced values: a conversion, refused in every mode",
    "raw_zeros_buffer": "a traced value written into a raw np.zeros: refused in every mode",
    "rrule_of_mutating_function": "the rule writes into its argument: refused in every mode",
    "defvjp_of_mutating_function": "the rule writes into its argument: refused in every mode",
}


def _fresh(args):
    return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]


def _floats(args):
    return tuple(
        i for i, a in enumerate(args)
        if isinstance(a, (np.ndarray, float)) and np.result_type(a).kind == "f"
    )  # fmt: skip


def _reference(program, positions):
    args = tuple(program.args)
    try:
        grads = mg.grad(program.function, argnums=positions, mode="snapshot")(*_fresh(args))
        return [np.asarray(g, dtype=float) for g in grads], True
    except mg.MutagradError:
        return [numerical_gradient(program.function, _fresh(args), i) for i in positions], False


def test_forward_mode_accepts_the_corpus_with_the_reference_gradients():
    accepted, refused, wrong = [], {}, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for program in CORPUS:
            positions = _floats(program.args)
            if not positions:
                continue
            try:
                grads = mg.jacfwd(program.function, argnums=positions)(*_fresh(program.args))
            except mg.MutagradError as error:
                refused[program.name] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
                continue
            references, exact = _reference(program, positions)
            for got, want in zip(grads, references):
                scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
                rtol, atol = (1e-7, 1e-9 * scale) if exact else (
                    program.rtol or 1e-4, (program.atol or 1e-6) * scale)  # fmt: skip
                if not np.allclose(got, want, rtol=rtol, atol=atol):
                    wrong.append(program.name)
                    break
            else:
                accepted.append(program.name)
    assert not wrong, f"forward mode gave wrong gradients for {wrong}"
    # (an installed wheel has no examples/: its corpus lacks the programs made from them)
    present = {program.name for program in CORPUS}
    assert set(refused) == set(REFUSED) & present, refused
    candidates = sum(1 for program in CORPUS if _floats(program.args))
    assert len(accepted) == candidates - len(refused) >= 0.9 * candidates
