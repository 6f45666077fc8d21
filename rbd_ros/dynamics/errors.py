"""Errors raised while building a model from a URDF."""


class ModelError(ValueError):
    """A robot description that cannot become a model.

    The message names where the problem is (file and line, link or joint) and what it is.
    """


class URDFSyntaxError(ModelError):
    """The text is not well-formed XML or not a <robot> document."""


class TopologyError(ModelError):
    """Missing or duplicate links, no root or several roots, cycles."""


class JointError(ModelError):
    """An unsupported joint type, a zero axis, an invalid limit, or a bad mimic."""


class InertiaError(ModelError):
    """A negative mass or a physically impossible rotational inertia."""
