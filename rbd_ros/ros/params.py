"""Parameters: declared with their type and default in one place per node, validated at start-up
(a bad value stops the node with one line naming the parameter) and at set time (a bad value
is refused with the reason, so a parameter always describes the running node).

Every parameter is declared with a value of its type, empty lists included (an empty list
would otherwise become a BYTE_ARRAY, or an uninitialised parameter that makes rclpy's
get_parameters service answer nothing, so that ``ros2 param dump`` prints ``{}``). Parameters
that are not ``dynamic`` are read at start-up only: setting one later is refused.
"""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable, Mapping

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.parameter import Parameter

TYPES = {'bool': Parameter.Type.BOOL, 'int': Parameter.Type.INTEGER,
         'double': Parameter.Type.DOUBLE, 'string': Parameter.Type.STRING,
         'double_array': Parameter.Type.DOUBLE_ARRAY,
         'string_array': Parameter.Type.STRING_ARRAY}
_EXAMPLES = {'bool': 'true', 'int': '3', 'double': '0.5', 'string': 'text',
             'double_array': '[0.0, 1.5]', 'string_array': "['joint_1', 'joint_2']"}


class ParameterError(ValueError):
    """A parameter value the node cannot run with; the message names the parameter."""


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One parameter: its type (a key of TYPES), default, description, an optional validator
    (raises ValueError with the reason) and whether it may change at run time."""

    type: str
    default: Any
    description: str
    validate: Callable[[Any], None] | None = None
    dynamic: bool = False


# ---- validators ---------------------------------------------------------------------------------
def one_of(*choices: str) -> Callable[[Any], None]:
    def check(value):
        if value not in choices:
            raise ValueError(f'must be one of {", ".join(choices)} (got {value!r})')
    return check


def positive(value) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f'must be a finite number > 0 (got {value!r})')


def non_negative(value) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f'must be a finite number >= 0 (got {value!r})')


def finite_vector(n: int | None = None, minimum: float | None = None,
                  maximum: float | None = None) -> Callable[[Any], None]:
    def check(value):
        arr = np.asarray(list(value), dtype=float)
        if n is not None and arr.shape != (n,):
            raise ValueError(f'must have {n} elements (got {len(arr)})')
        if not np.all(np.isfinite(arr)):
            raise ValueError('must be finite')
        if minimum is not None and np.any(arr < minimum):
            raise ValueError(f'must be >= {minimum:g} (got {arr.tolist()})')
        if maximum is not None and np.any(arr > maximum):
            raise ValueError(f'must be <= {maximum:g} (got {arr.tolist()})')
    return check


def unique_names(value) -> None:
    if len(set(value)) != len(value):
        raise ValueError(f'names a joint twice: {list(value)}')


def per_command_joint(values, slots, count: int) -> np.ndarray:
    """A parameter of one value for all command joints, or one per command joint (``slots``:
    their places among ``count`` joints), as one value per joint: 0 where not commanded."""
    values = np.asarray(values, dtype=float)
    out = np.zeros(count)
    out[slots] = values if len(values) > 1 else values[0]
    return out


# ---- declaration --------------------------------------------------------------------------------
def _python(value):
    """A parameter value as plain Python (arrays as lists)."""
    if isinstance(value, (list, tuple)) or type(value).__name__ == 'array':
        return list(value)
    return value


def _typed_default(spec: ParamSpec):
    if spec.type == 'double':
        return float(spec.default)
    if spec.type == 'double_array':
        return [float(x) for x in spec.default]
    return spec.default


def declare_parameters(node, specs: Mapping[str, ParamSpec]) -> dict[str, Any]:
    """Declare every parameter of ``specs`` with its type and default, validate the values,
    and return them as a dict. Raises ParameterError naming the parameter."""
    values = {}
    for name, spec in specs.items():
        ptype = TYPES[spec.type]
        descriptor = ParameterDescriptor(
            name=name, type=ptype.value, description=spec.description,
            additional_constraints='' if spec.dynamic else 'read at start-up only')
        try:
            if spec.type.endswith('_array') and not spec.default:
                param = node.declare_parameter(name, ptype, descriptor)
            else:
                param = node.declare_parameter(name, _typed_default(spec), descriptor)
            if param.type_ == Parameter.Type.NOT_SET:   # no value, or an empty YAML list
                node.set_parameters([Parameter(name, ptype, _typed_default(spec))])
        except ParameterException as exc:
            raise ParameterError(f'parameter {name}: expected a {spec.type.replace("_", " ")} '
                                 f'(e.g. {name}:={_EXAMPLES[spec.type]}){_got(exc, name, spec)}'
                                 ) from None
        value = _python(node.get_parameter(name).value)
        _validate(name, spec, value)
        values[name] = value
    return values


def _got(exc, name, spec):
    """', got <type> <value>' from rclpy's InvalidParameterTypeException text; for a string
    given a boolean, how to quote it (YAML 1.1, which ROS parses -p with, reads on/off/yes/no
    as booleans)."""
    match = re.search(r"to '(.*)' of type '(\w+)'", str(exc), re.S)
    if not match:
        return ''
    got = match.group(2).lower()
    hint = (f"; quote a word YAML reads as a boolean: {name}:=\"'off'\""
            if spec.type == 'string' and got == 'bool' else '')
    return f', got {got} {match.group(1)!r}{hint}'


def _validate(name, spec, value):
    if spec.validate is None:
        return
    try:
        spec.validate(value)
    except ValueError as exc:
        raise ParameterError(f'parameter {name}: {exc}') from None


def install_set_validation(node, specs: Mapping[str, ParamSpec],
                           check: Callable[[str, Any], str | None],
                           changed: Callable[[str, Any], None]) -> None:
    """Refuse, at set time, a change to a parameter read at start-up only, a value of the wrong
    type or that its validator refuses, or one ``check(name, value)`` refuses (it returns the
    reason, or None). After a change is accepted, ``changed(name, value)`` runs."""

    def on_set(params):
        for p in params:
            spec = specs.get(p.name)
            if spec is None:
                continue
            if not spec.dynamic:
                return SetParametersResult(
                    successful=False, reason=f'{p.name} is read at start-up only: restart the '
                    'node with the new value')
            if p.type_ != TYPES[spec.type]:
                return SetParametersResult(
                    successful=False, reason=f'{p.name}: expected a {spec.type}, got '
                    f'{p.type_.name.lower()}')
            value = _python(p.value)
            try:
                _validate(p.name, spec, value)
            except ParameterError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            reason = check(p.name, value)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def after_set(params):
        for p in params:
            if p.name in specs:
                changed(p.name, _python(p.value))

    node.add_on_set_parameters_callback(on_set)
    node.add_post_set_parameters_callback(after_set)
