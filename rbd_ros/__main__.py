"""`python -m rbd_ros inspect [URDF] [--floating-base]`"""
import sys

from rbd_ros.inspect_model import main

sys.exit(main())
