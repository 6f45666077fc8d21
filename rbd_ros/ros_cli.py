"""`python -m rbd_ros param | call | echo | list`: what `ros2 param`, `ros2 service call`,
`ros2 topic echo` and `ros2 node/topic/service list` do, for a pip set-up that has rclpy but no
ros2cli (it is not on PyPI). Works against any ROS 2 node, not only rbd_ros's.

    python -m rbd_ros list                                  # nodes, topics, services
    python -m rbd_ros param list /rbd_sim
    python -m rbd_ros param get /rbd_sim integrator
    python -m rbd_ros param set /rbd_sim position_kp "[200.0]"
    python -m rbd_ros param dump /rbd_dynamics > dynamics.yaml
    python -m rbd_ros call /rbd_sim/pause true              # one-field requests: the value
    python -m rbd_ros call /rbd_sim/reset
    python -m rbd_ros echo /diagnostics --count 1

Values are YAML, as ros2 param set reads them; a value of the parameter's declared type is
converted where that loses nothing (1 for a double, [1, 2] for a double array). echo prints each
message as a YAML document (numbers as numbers, arrays as lists) and a `---` line. Exit status
0, 1 when the node or service does not answer or refuses, 2 for a usage error; Ctrl-C or
SIGTERM: 0 for echo (its end without --count), 130 for a command stopped while it waits.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import time
import traceback

from rbd_ros.stdout import reader_left, watch_teardown

DISCOVERY_S = 5.0


def build_parser():
    parser = argparse.ArgumentParser(
        prog='python -m rbd_ros', description='ros2 param, service call, topic echo and list, '
        'for a pip set-up without ros2cli', formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n'.join(__doc__.split('\n\n')[1].splitlines()))
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('list', help='the nodes, topics (with types) and services on the graph')
    p.add_argument('--timeout', type=float, default=2.0, help='s of discovery (default 2)')
    param = sub.add_parser('param', help='list, get, set or dump a node\'s parameters')
    action = param.add_subparsers(dest='action', required=True)
    for name, text in (('list', 'the parameter names'), ('dump', 'every parameter as YAML '
                       '(a --params-file)')):
        a = action.add_parser(name, help=text)
        a.add_argument('node')
    a = action.add_parser('get', help='one parameter\'s value')
    a.add_argument('node')
    a.add_argument('name')
    a = action.add_parser('set', help='set one parameter (YAML value)')
    a.add_argument('node')
    a.add_argument('name')
    a.add_argument('value')
    for a in action.choices.values():
        a.add_argument('--timeout', type=float, default=DISCOVERY_S,
                       help=f's to wait for the node (default {DISCOVERY_S:g})')
    call = sub.add_parser('call', help='call a service; the request as YAML')
    call.add_argument('service')
    call.add_argument('request', nargs='?', default='{}',
                      help='YAML mapping of the request\'s fields, or the value of a request with '
                      'one field (default: {})')
    call.add_argument('--timeout', type=float, default=DISCOVERY_S)
    echo = sub.add_parser('echo', help='print a topic\'s messages as YAML')
    echo.add_argument('topic')
    echo.add_argument('--count', type=int, default=0, help='stop after N messages (0: Ctrl-C)')
    echo.add_argument('--timeout', type=float, default=0.0,
                      help='give up after this many s without a message (0: never)')
    return parser


class Failed(Exception):
    pass


def main(argv=None):
    """Ctrl-C or SIGTERM stops a command between two messages (echo prints whole messages):
    status 0 for echo, whose normal end it is without --count, else 130 (128 + SIGINT)."""
    args = build_parser().parse_args(argv)
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)
    _stop.clear()
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    node = rclpy.create_node(f'rbd_ros_cli_{int(time.time() * 1000) % 1_000_000}')
    status = 1
    try:
        if args.command == 'list':
            status = list_graph(node, args)
        elif args.command == 'param':
            status = param(node, args)
        elif args.command == 'call':
            status = call(node, args)
        else:
            status = echo(node, args)
    except Failed as exc:
        print(f'error: {exc}', file=sys.stderr)
        status = 1
    except Interrupted:
        status = 0 if args.command == 'echo' else 130
    except BrokenPipeError:     # the reader left (`| head`): what it read is whole
        reader_left()
        status = 0
    except Exception:   # noqa: BLE001 - said here: a hung teardown would exit without it
        traceback.print_exc()
        status = 1
    finally:
        for sig in previous:          # a second Ctrl-C in the teardown and the exit is ignored,
            signal.signal(sig, signal.SIG_IGN)   # as node.run does (a terminal may send two)
        _teardown(node, status)
    return status


#: s the command's teardown (its node, rclpy) may take before it exits without it
TEARDOWN_S = 10.0
#: s more before the last resort, which needs no GIL (below)
TEARDOWN_GRACE_S = 2.0


def _teardown(node, status) -> None:
    """Destroy the node and shut rclpy down, within TEARDOWN_S: the command's output is whole
    by then. Past the limit: one line naming the step, and the exit (os._exit, which ends a
    process that called main() in-process too), with the command's status.
    Fast DDS's participant deletion can spin without end while a discovery callback is in flight
    (eProsima/Fast-DDS#6513; caught here with gdb: an echo whose three sibling echoes left at
    the same moment, 100% of a core for minutes in DomainParticipant::set_listener under
    rcl_node_fini), and it spins holding the GIL, so that no Python code runs again, the watch
    below included. Then faulthandler's watchdog thread, which needs no GIL, prints every
    thread's stack and ends the process with status 1, TEARDOWN_GRACE_S later."""
    import faulthandler

    import rclpy
    step = ['destroy_node']
    done = threading.Event()
    watch_teardown(TEARDOWN_S + TEARDOWN_GRACE_S)

    def run():
        try:
            node.destroy_node()
            step[0] = 'rclpy.try_shutdown'
            rclpy.try_shutdown()
        finally:
            done.set()
    threading.Thread(target=run, name='teardown', daemon=True).start()
    if not done.wait(TEARDOWN_S):
        print(f'warning: {step[0]}() did not return in {TEARDOWN_S:g} s; exiting without it',
              file=sys.stderr, flush=True)
        try:
            sys.stdout.flush()
        finally:
            os._exit(status)
    faulthandler.cancel_dump_traceback_later()


class Interrupted(Exception):
    """Ctrl-C or SIGTERM, raised where a command waits (never inside a message's output)."""


_stop = threading.Event()


def _on_signal(signum, frame):
    _stop.set()


# ---- list ----------------------------------------------------------------------------------
def list_graph(node, args):
    _spin_for(node, args.timeout)
    names = sorted(f'{ns.rstrip("/")}/{name}' for name, ns in
                   node.get_node_names_and_namespaces() if name != node.get_name())
    print('nodes:')
    for name in names:
        print(f'  {name}')
    print('topics:')
    for name, types in sorted(node.get_topic_names_and_types()):
        print(f'  {name} [{", ".join(types)}]')
    print('services:')
    for name, types in sorted(node.get_service_names_and_types()):
        if not name.startswith(f'/{node.get_name()}/'):
            print(f'  {name} [{", ".join(types)}]')
    return 0


def _spin_for(node, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        _spin_once(node, 0.05)


def _spin_once(node, timeout):
    """One slice of work; Interrupted once Ctrl-C or SIGTERM came."""
    import rclpy
    if _stop.is_set():
        raise Interrupted
    rclpy.spin_once(node, timeout_sec=timeout)
    if _stop.is_set():
        raise Interrupted


# ---- param ---------------------------------------------------------------------------------
def param(node, args):
    from rcl_interfaces.srv import GetParameters, ListParameters, SetParameters
    target = args.node if args.node.startswith('/') else '/' + args.node
    if args.action in ('list', 'dump'):
        names = _call(node, ListParameters, f'{target}/list_parameters',
                      ListParameters.Request(), args.timeout).result.names
        names = sorted(names)
        if args.action == 'list':
            for name in names:
                print(name)
            return 0
        values = _call(node, GetParameters, f'{target}/get_parameters',
                       GetParameters.Request(names=names), args.timeout).values
        print(_dump_yaml(target, dict(zip(names, (_python(v) for v in values)))), end='')
        return 0
    values = _call(node, GetParameters, f'{target}/get_parameters',
                   GetParameters.Request(names=[args.name]), args.timeout).values
    if not values or values[0].type == 0:
        raise Failed(f'{target} has no parameter {args.name!r}')
    if args.action == 'get':
        print(_format(_python(values[0])))
        return 0
    parameter = _parameter(args.name, _parse(args.value), values[0])
    value = parameter.value
    request = SetParameters.Request(parameters=[parameter.to_parameter_msg()])
    result = _call(node, SetParameters, f'{target}/set_parameters', request,
                   args.timeout).results[0]
    if not result.successful:
        raise Failed(f'{target} refused {args.name} = {_format(value)}: {result.reason}')
    print(f'{args.name} = {_format(value)}')
    return 0


def _parse(text):
    import yaml
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise Failed(f'not a YAML value: {text!r} ({exc})') from None


def _parameter(name, value, current):
    """The Parameter to set: ``value`` in the current value's type where nothing is lost (1 for
    a double, [1, 2] for a double array, [] for any array); anything else as given (the node
    says what it refuses)."""
    from rclpy.parameter import Parameter
    T = Parameter.Type
    kind = T(current.type)
    numbers = isinstance(value, list) and all(isinstance(x, (int, float)) and not
                                              isinstance(x, bool) for x in value)
    if kind == T.DOUBLE and isinstance(value, int) and not isinstance(value, bool):
        return Parameter(name, T.DOUBLE, float(value))
    if kind == T.DOUBLE_ARRAY and numbers:
        return Parameter(name, T.DOUBLE_ARRAY, [float(x) for x in value])
    if kind == T.STRING and isinstance(value, (int, float, bool)):
        return Parameter(name, T.STRING, str(value))
    if value == [] and kind in (T.STRING_ARRAY, T.DOUBLE_ARRAY, T.INTEGER_ARRAY,
                                T.BOOL_ARRAY, T.BYTE_ARRAY):
        return Parameter(name, kind, [])
    try:
        return Parameter(name, value=value)
    except (TypeError, ValueError) as exc:
        raise Failed(f'{name}: {value!r} is not a parameter value ({exc})') from None


def _python(value_msg):
    from rclpy.parameter import parameter_value_to_python
    value = parameter_value_to_python(value_msg)
    return list(value) if isinstance(value, (tuple, list)) or type(value).__name__ == 'array' \
        else value


def _format(value):
    import yaml
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix(
        '\n...').removesuffix('...').strip()


def _dump_yaml(node, values):
    import yaml
    return yaml.safe_dump({node: {'ros__parameters': values}}, default_flow_style=None,
                          sort_keys=False, width=100)


# ---- call ----------------------------------------------------------------------------------
def call(node, args):
    name = args.service if args.service.startswith('/') else '/' + args.service
    srv_type = _service_type(node, name, args.timeout)
    request = srv_type.Request()
    fields = request.get_fields_and_field_types()
    value = _parse(args.request)
    if value is None:
        value = {}
    if not isinstance(value, dict):
        if len(fields) != 1:
            raise Failed(f'{name} takes {len(fields)} fields ({", ".join(fields) or "none"}): '
                         'give them as a YAML mapping, e.g. "{field: value}"')
        value = {next(iter(fields)): value}
    _set_fields(request, value, name)
    response = _call(node, srv_type, name, request, args.timeout)
    print(to_yaml(response), end='')
    ok = getattr(response, 'success', True)
    return 0 if ok is not False else 1


def _service_type(node, name, timeout):
    deadline = time.monotonic() + timeout
    while True:
        types = dict(node.get_service_names_and_types()).get(name)
        if types:
            return _import_type(types[0])
        if time.monotonic() > deadline:
            raise Failed(f'no service {name} after {timeout:g} s (python -m rbd_ros list shows '
                         'the services)')
        _spin_for(node, 0.1)


def _import_type(full):
    package, kind, name = full.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def _call(node, srv_type, name, request, timeout):
    client = node.create_client(srv_type, name)
    try:
        deadline = time.monotonic() + timeout
        while not client.service_is_ready() and time.monotonic() < deadline:
            _spin_once(node, 0.05)
        if not client.service_is_ready():
            raise Failed(f'{name} is not available after {timeout:g} s (is the node running, '
                         'on this ROS_DOMAIN_ID?)')
        future = client.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            _spin_once(node, 0.05)
        if not future.done():
            raise Failed(f'{name} did not answer within {timeout:g} s')
        return future.result()
    finally:
        node.destroy_client(client)


def _set_fields(msg, values, where):
    fields = msg.get_fields_and_field_types()
    for key, value in values.items():
        if key not in fields:
            raise Failed(f'{where}: no field {key!r} (fields: {", ".join(fields)})')
        current = getattr(msg, key)
        if isinstance(value, dict) and hasattr(current, 'get_fields_and_field_types'):
            _set_fields(current, value, f'{where}.{key}')
            continue
        try:
            setattr(msg, key, type(current)(value) if isinstance(current, (bool, int, float,
                                                                             str)) else value)
        except (TypeError, ValueError, AssertionError) as exc:
            raise Failed(f'{where}.{key}: {exc}') from None


# ---- echo ----------------------------------------------------------------------------------
def echo(node, args):
    deadline = time.monotonic() + max(args.timeout, DISCOVERY_S)
    while True:
        types = dict(node.get_topic_names_and_types()).get(args.topic)
        if types:
            break
        if time.monotonic() > deadline:
            raise Failed(f'no publisher of {args.topic} (python -m rbd_ros list shows the '
                         'topics)')
        _spin_for(node, 0.1)
    msg_type = _import_type(types[0])
    received = []

    def show(msg):
        received.append(1)
        print(to_yaml(msg) + '---', flush=True)
    node.create_subscription(msg_type, args.topic, show, _echo_qos(node, args.topic))
    last = time.monotonic()
    count = 0
    while not args.count or len(received) < args.count:
        _spin_once(node, 0.1)
        if len(received) != count:
            count, last = len(received), time.monotonic()
        elif args.timeout and time.monotonic() - last > args.timeout:
            raise Failed(f'no message on {args.topic} for {args.timeout:g} s')
    return 0


def _echo_qos(node, topic):
    """What ros2 topic echo subscribes with: reliable only when every publisher is (a best-effort
    subscription receives from both), transient local when every publisher is (a latched
    robot_description, /tf_static, ~/collision: their last message arrives)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    infos = node.get_publishers_info_by_topic(topic)
    every = lambda policy, value: bool(infos) and all(  # noqa: E731
        getattr(info.qos_profile, policy) == value for info in infos)
    return QoSProfile(
        depth=100,
        reliability=ReliabilityPolicy.RELIABLE if every('reliability', ReliabilityPolicy.RELIABLE)
        else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if every(
            'durability', DurabilityPolicy.TRANSIENT_LOCAL) else DurabilityPolicy.VOLATILE)


def to_python(value):
    """A message (or one of its fields) as plain Python: a dict in field order per message,
    lists for every array (fixed-size numpy arrays, array.array sequences, lists), int, float,
    bool and str; a ``byte`` (rclpy's bytes of length 1) as its number."""
    if hasattr(value, 'get_fields_and_field_types'):
        return {key: to_python(getattr(value, key)) for key in value.get_fields_and_field_types()}
    if isinstance(value, (bytes, bytearray)):
        return value[0] if len(value) == 1 else list(value)
    if isinstance(value, (list, tuple)):
        return [to_python(item) for item in value]
    if hasattr(value, 'tolist'):              # numpy arrays and scalars, array.array
        return value.tolist()
    return value


def to_yaml(msg):
    """A message as YAML, as ros2 topic echo prints it: nested messages as indented mappings,
    arrays of numbers or strings on one line ([0.0, 1.5]), numbers as numbers; a text with
    newlines (robot_description) as a literal block."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def sequence(dumper, data):
        flow = all(not isinstance(item, (dict, list)) for item in data)
        return dumper.represent_sequence('tag:yaml.org,2002:seq', data, flow_style=flow)

    def text(dumper, data):
        return dumper.represent_scalar('tag:yaml.org,2002:str', data,
                                       style='|' if '\n' in data else None)
    Dumper.add_representer(list, sequence)
    Dumper.add_representer(str, text)
    return yaml.dump(to_python(msg), Dumper=Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=1 << 30)
