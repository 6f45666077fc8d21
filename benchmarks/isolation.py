"""Keeping ROS 2 runs private on a shared machine: one domain id per process, held with a lock
file, shared by the test fixtures (test/conftest.py) and the node benchmark."""
import fcntl
import os
import tempfile

_domain_lock = None


def private_domain_id() -> int:
    """A ROS domain id (1..100) that no other rbd_ros test or benchmark process on this machine
    holds; the lock is held until the process exits."""
    global _domain_lock
    if _domain_lock is not None:
        return _domain_lock[1]
    start = os.getpid() % 100
    for k in range(100):
        domain = 1 + (start + k) % 100
        fh = open(os.path.join(tempfile.gettempdir(), f'rbd_ros_test_domain_{domain}.lock'), 'w')
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            continue
        _domain_lock = (fh, domain)
        return domain
    raise RuntimeError('no free ROS domain id (1..100) on this machine')
