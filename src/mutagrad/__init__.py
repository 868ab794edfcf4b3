"""mutagrad: reverse-mode automatic differentiation for NumPy code that mutates arrays.

Every traced array is a :class:`WrappedArray` with a version number; values a
pullback will need are kept as captures that record the version they saw. An
in-place write that overlaps a capture poisons it, and the backward pass
raises :class:`PoisonedCaptureError` if it ever reads it, instead of returning
a wrong gradient. Writes whose old value no gradient needs just work.

    >>> import numpy as np, mutagrad
    >>> def f(x):
    ...     y = np.empty_like(x)
    ...     y[:] = 2 * x          # a buffer filled in place: fine
    ...     return np.sum(y * x)
    >>> mutagrad.gradient(f, np.array([1.0, 2.0]))
    (array([4., 8.]),)
"""

from mutagrad import rules  # noqa: F401  (importing the rule modules registers every numpy fact)
from mutagrad.buffer import Buffer
from mutagrad.call import WithGradient
from mutagrad.checkpoint import checkpointed
from mutagrad.core.engine import ANS
from mutagrad.core.modes import mode
from mutagrad.core.tangents import NoTangent, ZeroTangent
from mutagrad.custom import defjvp, defvjp, non_differentiable, primitive, rrule
from mutagrad.errors import (
    FrozenBufferError,
    MissingForwardRuleError,
    MissingRuleError,
    MutagradError,
    MutationError,
    NotDifferentiableError,
    PoisonedCaptureError,
    SnapshotUnavailableError,
    TracerConversionError,
    UnsupportedAttributeError,
)
from mutagrad.explain import Explanation, explain

# hessian and hvp are forward over reverse (forward.py), as JAX's and Zygote's are.
from mutagrad.forward import (
    forward_jacobian,
    forwarddiff,
    hessian,
    hvp,
    jacfwd,
    jvp,
    linearize,
)
from mutagrad.hook import hook
from mutagrad.jacobians import WithJacobian, diaghessian, hessian_reverse, withjacobian
from mutagrad.params import Grads, Params
from mutagrad.porting import (
    adam,
    elementwise_grad,
    flatten,
    hessian_vector_product,
    make_vjp,
    ravel_pytree,
    rmsprop,
    sgd,
)
from mutagrad.traced import array, asarray, is_traced
from mutagrad.traced.value import WrappedArray, WrappedScalar, WrappedValue

# jacobian and hessian have two faces: jacobian(f, x) is Zygote's, jacobian(f) JAX's.
from mutagrad.transforms import grad, jacobian, jacrev, value_and_grad, vjp
from mutagrad.zygote import Pullback, gradient, ignore_derivatives, pullback, withgradient

__version__ = "0.1.0"

__all__ = [
    "ANS",
    "Buffer",
    "Explanation",
    "FrozenBufferError",
    "Grads",
    "MissingForwardRuleError",
    "MissingRuleError",
    "MutagradError",
    "MutationError",
    "NoTangent",
    "NotDifferentiableError",
    "Params",
    "PoisonedCaptureError",
    "Pullback",
    "SnapshotUnavailableError",
    "TracerConversionError",
    "UnsupportedAttributeError",
    "WithGradient",
    "WithJacobian",
    "WrappedArray",
    "WrappedScalar",
    "WrappedValue",
    "ZeroTangent",
    "adam",
    "array",
    "asarray",
    "checkpointed",
    "defjvp",
    "defvjp",
    "diaghessian",
    "elementwise_grad",
    "explain",
    "flatten",
    "forward_jacobian",
    "forwarddiff",
    "grad",
    "gradient",
    "hessian",
    "hessian_reverse",
    "hessian_vector_product",
    "hook",
    "hvp",
    "ignore_derivatives",
    "is_traced",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "linearize",
    "make_vjp",
    "mode",
    "non_differentiable",
    "primitive",
    "pullback",
    "ravel_pytree",
    "rmsprop",
    "rrule",
    "sgd",
    "value_and_grad",
    "vjp",
    "withgradient",
    "withjacobian",
]
