"""`python -m rbd_ros inspect [URDF] [--floating-base]`, `python -m rbd_ros analyze LOG...`,
`python -m rbd_ros list | param | call | echo` (ros2cli's everyday commands, for pip set-ups)."""
import sys

status = 1     # (a reader that leaves before a command knows its status)
try:
    if sys.argv[1:2] == ['analyze']:
        from rbd_ros.analysis.cli import main
        status = main(sys.argv[2:])
    elif sys.argv[1:2] in (['list'], ['param'], ['call'], ['echo']):
        from rbd_ros.ros_cli import main
        status = main(sys.argv[1:])
    else:
        from rbd_ros.inspect_model import main
        status = main()
    sys.stdout.flush()
except BrokenPipeError:
    # the reader went away (`... | head`, `... | grep -q`): no traceback; Python's documented
    # recipe, so that the flush at exit does not raise again. The status stays the command's
    # when it has one (inspect judges every file whether or not anyone reads its report).
    from rbd_ros.stdout import reader_left
    reader_left()
except KeyboardInterrupt:
    # Ctrl-C before a command took over the signals (while Python imports ROS): no traceback
    status = 130
sys.exit(status)
