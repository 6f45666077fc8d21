"""`python -m rbd_ros inspect [URDF] [--floating-base]`"""
import os
import sys

from rbd_ros.inspect_model import main

try:
    status = main()
    sys.stdout.flush()
except BrokenPipeError:
    # the reader went away (`... | head`): no traceback; Python's documented recipe, so that
    # the flush at exit does not raise again
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = 1
sys.exit(status)
