"""The README's API tour runs as written (from the repository root, as a user would)."""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), '..')


def test_readme_api_tour_runs():
    with open(os.path.join(ROOT, 'README.md')) as handle:
        text = handle.read()
    blocks = re.findall(r'```python\n(.*?)```', text, flags=re.S)
    tour = [b for b in blocks if 'import rbd_ros.dynamics as rbd' in b]
    assert tour, 'the README lost its API tour'
    done = subprocess.run([sys.executable, '-c', tour[0]], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_readme_names_the_two_commands_and_ci_runs_the_test_command():
    with open(os.path.join(ROOT, 'README.md')) as handle:
        text = handle.read()
    assert 'bash scripts/demo.sh' in text and 'bash scripts/test.sh' in text
    with open(os.path.join(ROOT, '.ci', 'run')) as handle:
        assert 'bash scripts/test.sh' in handle.read()
