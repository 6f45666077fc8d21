"""Keeping ROS 2 runs private on a shared machine: one domain id per process, held with a lock
file, shared by the test fixtures (test/conftest.py) and the node benchmark; or the one
ROS_DOMAIN_ID names, when it is set."""
import fcntl
import os
import tempfile

_domain_lock = None
#: the highest domain id Fast DDS and Cyclone DDS take (ports 7400 + 250 x domain and up)
MAX_DOMAIN_ID = 232


def private_domain_id() -> int:
    """ROS_DOMAIN_ID when it is set (the user's choice: every node and probe of the run is on
    it), else a ROS domain id (1..100) that no other rbd_ros test or benchmark process on this
    machine holds; the lock is held until the process exits. RuntimeError for a ROS_DOMAIN_ID
    that is not a domain id."""
    global _domain_lock
    if _domain_lock is not None:
        return _domain_lock[1]
    chosen = os.environ.get('ROS_DOMAIN_ID', '').strip()
    if chosen:
        if not chosen.isdigit() or int(chosen) > MAX_DOMAIN_ID:
            raise RuntimeError(f'ROS_DOMAIN_ID={chosen!r}: a ROS domain id is a whole number '
                               f'from 0 to {MAX_DOMAIN_ID}')
        _domain_lock = (None, int(chosen))
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
