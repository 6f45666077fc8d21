"""package.xml declares what the code imports, and nothing it does not: rosdep installs exactly
what a colcon-built rbd_ros needs on a real ROS 2 install."""
import ast
import pathlib
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Python module -> rosdep key, where they differ
ROSDEP = {'numpy': 'python3-numpy', 'numba': 'python3-numba', 'lxml': 'python3-lxml',
          'yaml': 'python3-yaml', 'matplotlib': 'python3-matplotlib'}


# The offline analysis (rbd_ros/analysis, `python -m rbd_ros analyze`) is a pip extra
# (setup.py's `analyze`: rosbags and dask have no rosdep keys); the nodes never import it.
# lz4 and backports (.zstd) decompress MCAP chunks (rosbags' own dependencies).
ANALYSIS_ONLY = {'rosbags', 'dask', 'lz4', 'backports'}   # (dask: dask.distributed, for --scheduler)
#: modules of a later Python's standard library (compression.zstd: 3.14)
LATER_STDLIB = {'compression'}


def imported_modules(files=None):
    modules = set()
    if files is None:
        files = [p for p in (ROOT / 'rbd_ros').rglob('*.py') if 'analysis' not in p.parts]
        files += list((ROOT / 'launch').glob('*.py'))
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split('.')[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split('.')[0])
    return {m for m in modules if m not in sys.stdlib_module_names | LATER_STDLIB
            and m != 'rbd_ros'}


def test_package_xml_declares_every_import_and_nothing_else():
    root = ET.parse(ROOT / 'package.xml').getroot()
    declared = {e.text for e in root.iter('exec_depend')}
    needed = {ROSDEP.get(m, m) for m in imported_modules()}
    assert needed - declared == set(), f'imported but not declared: {needed - declared}'
    assert declared - needed == set(), f'declared but never imported: {declared - needed}'


def test_the_analysis_imports_only_its_extra_beyond_the_package():
    """What rbd_ros/analysis imports beyond the package's own dependencies is in setup.py's
    `analyze` extra, and nothing outside rbd_ros/analysis imports those."""
    analysis = imported_modules(list((ROOT / 'rbd_ros' / 'analysis').glob('*.py')))
    extra = analysis - imported_modules()
    assert extra == ANALYSIS_ONLY, extra
    setup = (ROOT / 'setup.py').read_text()
    for module in ('rosbags', 'dask[distributed]', 'lz4', 'backports.zstd'):
        assert f"'{module}" in setup.split("'analyze':")[1].split(']')[0] + ']', module
