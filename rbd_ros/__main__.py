"""`python -m rbd_ros inspect [URDF] [--floating-base]`, `python -m rbd_ros analyze LOG...`"""
import os
import sys

try:
    if sys.argv[1:2] == ['analyze']:
        from rbd_ros.analysis.cli import main
        status = main(sys.argv[2:])
    else:
        from rbd_ros.inspect_model import main
        status = main()
    sys.stdout.flush()
except BrokenPipeError:
    # the reader went away (`... | head`): no traceback; Python's documented recipe, so that
    # the flush at exit does not raise again
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = 1
sys.exit(status)
