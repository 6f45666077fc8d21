"""One code path, compiled when numba is available, interpreted otherwise.

Kernels are written in the subset of Python that numba compiles (loops over flat numpy
arrays). ``RBD_ROS_NO_JIT=1`` (or numba's own ``NUMBA_DISABLE_JIT=1``) runs the very same
functions in the interpreter, which is how the tests prove the two modes agree.
"""
import contextlib
import functools
import hashlib
import os
import sys
import tempfile
import threading
import time

import numpy as _np

try:
    if os.environ.get('RBD_ROS_NO_JIT', '') not in ('', '0'):
        raise ImportError('disabled by RBD_ROS_NO_JIT')
    import numba as _numba
except ImportError:  # pragma: no cover - exercised by the no-JIT test in a subprocess
    _numba = None

JIT_ENABLED = _numba is not None and os.environ.get('NUMBA_DISABLE_JIT', '') in ('', '0')


def _import_arraymath_without_scipy_linalg():
    """Import numba's np.arraymath with its BLAS check answered from the files on disk.

    numba loads its array implementations (np.arraymath) at a process's first kernel load, and
    that module's import asks whether BLAS is there by importing scipy.linalg: 0.2 s of wall
    time and 0.35 s of CPU (OpenBLAS's threads start) in every node, analysis or script
    start-up where scipy is installed, though no rbd_ros kernel calls BLAS. The answer is the
    same (is scipy's cython_blas there?), found without importing it; a kernel that does call
    BLAS (np.dot in a user's own) still imports it then, through numba's own check. Anything
    unexpected (another numba's layout): numba's own import, as before."""
    import importlib.util
    try:
        from numba.np import linalg
        check = linalg.ensure_blas
    except (ImportError, AttributeError):
        return
    if 'numba.np.arraymath' in sys.modules or 'scipy.linalg' in sys.modules:
        return

    def cython_blas_on_disk():
        spec = importlib.util.find_spec('scipy')          # (the package's top level only)
        for folder in (spec.submodule_search_locations or ()) if spec else ():
            linalg_dir = os.path.join(folder, 'linalg')
            if os.path.isdir(linalg_dir) and any(
                    name.startswith('cython_blas.') for name in os.listdir(linalg_dir)):
                return
        raise ImportError('scipy.linalg.cython_blas not found')

    linalg.ensure_blas = cython_blas_on_disk
    try:
        import numba.np.arraymath  # noqa: F401  (binds the probe for its one check at import)
    except Exception:  # noqa: BLE001 - numba imports it again where it needs it
        pass
    finally:
        linalg.ensure_blas = check


if JIT_ENABLED:
    _import_arraymath_without_scipy_linalg()

# Batches run on numba's threads. Where TBB is not installed numba's default is GNU OpenMP,
# which aborts any process that forks after using it ("fork() called from a process already
# using GNU OpenMP"): a user's multiprocessing.Pool after one batched call killed every
# worker. Unless the user chose a layer (NUMBA_THREADING_LAYER), a fork-safe one: TBB (the
# ``fast`` extra installs its wheel; _load_tbb below), else numba's own workqueue (api.py
# already keeps batch calls from entering it from two threads at once, which workqueue does
# not allow).
if _numba is not None and not os.environ.get('NUMBA_THREADING_LAYER'):
    _numba.config.THREADING_LAYER = 'forksafe'


def _load_tbb():
    """Load TBB from where its PyPI wheel (the ``fast`` extra) puts it, <prefix>/lib, which
    the loader does not search: numba's TBB layer (linked against libtbb.so.12) then finds it
    already loaded. Without it numba falls back to workqueue, whose threads take ~150 us to
    wake for each batch (TBB's: ~2 us). Nothing when the wheel is not installed."""
    import ctypes
    import sys
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        path = os.path.join(prefix, 'lib', 'libtbb.so.12')
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:     # pragma: no cover - a broken install: workqueue, as before
                pass
            return


if JIT_ENABLED and _numba.config.THREADING_LAYER in ('forksafe', 'safe', 'tbb'):
    _load_tbb()

#: the packages whose kernels are cached: a kernel calls helpers of other files, but numba keys
#: its cache on the kernel's own file only (control: the observer's step runs the CRBA and RNEA)
KERNEL_PACKAGES = ('dynamics', 'simulation', 'control')


def _kernel_sources():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [os.path.join(root, package, name) for package in KERNEL_PACKAGES
            for name in sorted(os.listdir(os.path.join(root, package))) if name.endswith('.py')]


@functools.lru_cache(maxsize=None)
def _cache_state():
    """(stamp of every kernel source, numba's cache directories of those sources, the
    sources); once per process (the sources a process runs do not change under it)."""
    from numba.core import caching
    impl = getattr(caching, 'CacheImpl', None) or getattr(caching, '_CacheImpl')
    sources = _kernel_sources()
    digest = hashlib.sha1()
    for path in sources:
        with open(path, 'rb') as handle:
            # the file's name in the package, not its path: the same files reached through
            # another path (colcon --symlink-install's build/ link, an editable install of
            # that checkout) share numba's cache directory, so they share its stamp
            name = '/'.join(path.split(os.sep)[-2:])
            digest.update(name.encode() + b'\0' + handle.read())
    caches = []
    for source in sources:
        for locator_class in impl._locator_classes:
            locator = locator_class.from_function(drop_stale_caches, source)
            if locator is not None:
                caches.append(locator.get_cache_path())
                break
    return digest.hexdigest(), sorted(set(caches)), sources


#: written into each cache directory once a process has imported the dynamics core under the
#: exclusive lock: every entry point of these sources is then in the cache, for this numba and
#: this Python, and processes started together load it at once instead of one after another
COMPLETE_MARK = 'rbd_ros_complete.stamp'


def _complete_text(stamp):
    return f'{stamp} numba {_numba.__version__} python {sys.version_info[0]}.{sys.version_info[1]}\n'


def cache_is_complete():
    """Whether a process has filled numba's cache for these very sources (COMPLETE_MARK)."""
    if _numba is None:
        return False
    try:
        stamp, caches, _ = _cache_state()
        text = _complete_text(stamp)
        for cache in caches:
            with open(os.path.join(cache, COMPLETE_MARK)) as handle:
                if handle.read() != text:
                    return False
        return bool(caches)
    except Exception:   # noqa: BLE001 - no mark, no cache, a cache we cannot read
        return False


def mark_cache_complete():
    """Say in each cache directory that the dynamics core's kernels are in it (best effort)."""
    try:
        stamp, caches, _ = _cache_state()
        for cache in caches:
            path = os.path.join(cache, COMPLETE_MARK)
            with open(f'{path}.{os.getpid()}', 'w') as handle:
                handle.write(_complete_text(stamp))
            os.replace(f'{path}.{os.getpid()}', path)
    except Exception:   # noqa: BLE001 - then the next process takes the exclusive lock again
        return


def drop_stale_caches():
    """Delete numba's cached kernels of rbd_ros when any kernel source changed since they were
    written. numba checks a cached kernel against its own file only: after an upgrade that
    changes a helper in another file (a joint model, the row solver) it would load the old
    machine code. A stamp of every kernel source sits beside each cache directory; a mismatch
    removes that directory's rbd_ros index and data files, and they are compiled again.
    Best effort: any failure leaves the caches as they are."""
    if _numba is None:
        return
    try:
        stamp, caches, sources = _cache_state()
        for cache in caches:
            if not os.path.isdir(cache):
                continue
            stamp_file = os.path.join(cache, 'rbd_ros_sources.stamp')
            try:
                with open(stamp_file) as handle:
                    if handle.read().strip() == stamp:
                        continue
            except OSError:
                pass
            modules = {os.path.splitext(os.path.basename(p))[0] for p in sources}
            if any(name.endswith('.nbi') for name in os.listdir(cache)):
                global STALE_DROPPED
                STALE_DROPPED = True        # (said by say_compiling)
            for name in os.listdir(cache):
                if name.endswith(('.nbi', '.nbc')) and name.split('.')[0] in modules:
                    try:
                        os.remove(os.path.join(cache, name))
                    except OSError:
                        pass
            with open(stamp_file, 'w') as handle:
                handle.write(stamp + '\n')
    except Exception:   # noqa: BLE001 - a cache we cannot check is left to numba
        return


#: whether drop_stale_caches removed kernels compiled from other sources (an upgrade, an edit)
STALE_DROPPED = False


def say_compiling():
    """One line on stderr before a process compiles every kernel at its import of the dynamics
    core (minutes, on one core), so that the wait is not a silent hang: a first use after
    installing without `warmup`, or after the kernels' sources changed. Quiet in the warm-up's
    own processes (RBD_ROS_DEFER_COMPILE, RBD_ROS_WARMUP_PROCESS), which say what they do."""
    if DEFER_COMPILE or os.environ.get('RBD_ROS_WARMUP_PROCESS', '') == '1':
        return
    why = ('the kernels changed since they were compiled' if STALE_DROPPED
           else "numba's cache does not hold the kernels yet")
    print(f'rbd_ros: {why}: compiling them now, once (about 3 minutes on one core; '
          '`python -m rbd_ros.warmup`, on a ROS install `ros2 run rbd_ros warmup`, does it '
          'ahead of time on every core)', file=sys.stderr, flush=True)


# The warm-up's worker processes set RBD_ROS_DEFER_COMPILE=1: signature kernels are then
# compiled only on request (warmup.compile_group), so that the cores fill the cache in parallel.
DEFER_COMPILE = os.environ.get('RBD_ROS_DEFER_COMPILE', '') == '1'
DEFERRED = []   # (dispatcher, signature) of each signature kernel, in DEFER_COMPILE mode


@contextlib.contextmanager
def compile_lock(exclusive=None):
    """Hold a cross-process lock while the kernels are compiled or loaded from numba's cache:
    exclusive while the cache may lack them (three nodes started at once then compile one after
    the other, the first filling the cache for the others, instead of racing on its files),
    shared once a process has filled it (cache_is_complete: sixteen processes started together
    then load it at once; they took turns before, 0.8 s each). ``exclusive`` forces either. A
    process killed mid-compile releases the lock with its death. Within it, the same thread
    takes it again for nothing (a kernel's first call in a section that holds it). No-op
    without numba or fcntl."""
    if _numba is None or getattr(_lock_held, 'depth', 0):
        yield          # (held by this thread already: a first call inside a locked section)
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    # one lock per cache, whatever the path: the sources' directory, or NUMBA_CACHE_DIR's (a
    # process compiling into a cache of its own, such as a test's, holds up nobody else's)
    here = os.path.dirname(os.path.realpath(__file__))
    cache_dir = os.environ.get('NUMBA_CACHE_DIR', '')
    if cache_dir:
        here += '\0' + os.path.realpath(cache_dir)
    key = hashlib.sha1(here.encode()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f'rbd_ros_compile_{key}.lock')
    try:
        handle = open(path, 'a+')
    except OSError:  # pragma: no cover - no writable temporary directory: no lock
        yield
        return
    if exclusive is None:
        exclusive = not cache_is_complete()
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    with handle:
        if not _try_lock(fcntl, handle, LOCK_QUIET_S, mode):
            # another process compiles (loading the cache takes less than LOCK_QUIET_S): say
            # why this one seems to hang
            print('rbd_ros: waiting for another process to finish compiling the kernels '
                  '(`warmup` compiles them ahead of time)', file=sys.stderr, flush=True)
            try:
                fcntl.flock(handle, mode)
            except KeyboardInterrupt:        # Ctrl-C while waiting: leave, without a traceback
                raise SystemExit(130) from None
        _lock_held.depth = 1
        try:
            yield
        finally:
            _lock_held.depth = 0
            fcntl.flock(handle, fcntl.LOCK_UN)


_lock_held = threading.local()     # depth 1 in the thread that holds compile_lock


#: seconds to wait for the compile lock before saying so (processes started together, such as
#: Dask workers or a launch file's nodes, take turns loading the cache: about a second each)
LOCK_QUIET_S = 3.0


def _try_lock(fcntl, handle, seconds, mode):
    """Take the lock within ``seconds`` (polling); False if another process still holds it."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def kernel(fn=None, signature=None, parallel=False):
    """Compile ``fn`` with numba (cached on disk, no Python objects, GIL released).

    With a ``signature`` the kernel is compiled for exactly those types: any other argument
    type raises TypeError instead of compiling a new specialisation on the fly, which is how
    the public functions detect inputs that need converting (see api.py)."""
    def wrap(function):
        if _numba is None:
            return function
        options = dict(cache=True, nogil=True, fastmath=False, error_model='numpy',
                       parallel=parallel)
        if signature is None:
            return _numba.njit(**options)(function)
        if DEFER_COMPILE:
            dispatcher = _numba.njit(**options)(function)
            DEFERRED.append((dispatcher, signature))
            return dispatcher
        if _load_on_first_call():
            del options['cache']
            dispatcher = _FirstCallDispatcher(py_func=function, locals={},
                                              targetoptions=dict(options, nopython=True))
            dispatcher.enable_caching()
            dispatcher.first_signature = signature
            FIRST_CALL.append(dispatcher)
            return dispatcher
        return _numba.njit(signature, **options)(function)
    return wrap if fn is None else wrap(fn)


@functools.lru_cache(maxsize=None)
def _load_on_first_call() -> bool:
    """Whether signature kernels load from numba's cache on their first call (a cache a
    process has filled for these very sources), rather than at import: loading the 29 took
    0.4 s of every import of the dynamics core, though an analysis or a script calls a few.
    While the cache is being filled they compile at import, all of them, as the COMPLETE_MARK
    promises."""
    return JIT_ENABLED and cache_is_complete()


if _numba is not None:
    from numba.core.registry import CPUDispatcher as _CPUDispatcher

    class _FirstCallDispatcher(_CPUDispatcher):
        """A signature kernel that loads its one signature (``first_signature``) from numba's
        cache on its first call, then takes no other: a call of other argument types raises
        TypeError from then on, exactly as an eagerly compiled signature kernel does (the
        public functions rely on it to tell which inputs need converting). numba calls
        ``_compile_for_args`` when no loaded signature matches and compiling is allowed, then
        calls what it returns."""
        first_signature = None
        _first_call_lock = threading.Lock()

        def load(self) -> None:
            """Load the signature (the caller holds compile_lock) unless loaded: from numba's
            cache while it is still of the sources this process imported, else compiled here
            without it (another process may have refilled it for changed sources since, and
            numba checks a kernel against its own file only)."""
            with self._first_call_lock:
                if self._can_compile:
                    if not cache_is_complete():
                        from numba.core.caching import NullCache
                        self._cache = NullCache()
                    self.compile(self.first_signature)
                    self.disable_compile()

        def compile(self, sig):
            """``first_signature`` only: numba's typing of a compiled caller would otherwise
            add a specialisation for the caller's argument types."""
            from numba.core import sigutils
            args, _ = sigutils.normalize_signature(sig)
            if tuple(args) != tuple(self.first_signature.args):
                raise TypeError(f'{self.py_func.__name__} is compiled for '
                                f'{self.first_signature} only, not for {args}')
            return super().compile(sig)

        def _compile_for_args(self, *args, **kws):
            if self._can_compile:
                with compile_lock():
                    self.load()
            return self     # (numba calls what this returns with the arguments: a dispatch)

    def _first_call_lock_after_fork():
        # (a lock a thread held at the fork would stay held in the child)
        _FirstCallDispatcher._first_call_lock = threading.Lock()

    os.register_at_fork(after_in_child=_first_call_lock_after_fork)


#: the signature kernels that load on their first call (_FirstCallDispatcher)
FIRST_CALL = []


def load_signature_kernels() -> int:
    """Load now every signature kernel that would load on its first call; how many it loaded.
    For a process that serves messages (the nodes, before they spin): a kernel's first call
    costs ~3.5 ms, three late messages at 1 kHz, paid here at start-up instead."""
    pending = [d for d in FIRST_CALL if d._can_compile]
    if pending:
        with compile_lock():
            for dispatcher in pending:
                dispatcher.load()
    return len(pending)


if _numba is not None:
    from numba import types as _t
    STATUS = _t.int64
    HANDLE = _t.Array(_t.int64, 1, 'C')         # data.handle (layout.H_*)
    INDEX = _t.int64
    VECTOR = _t.Array(_t.float64, 1, 'C')
    MATRIX = _t.Array(_t.float64, 2, 'C')
    ARRAY3 = _t.Array(_t.float64, 3, 'C')
    SCALAR = _t.float64
else:  # pragma: no cover
    STATUS = HANDLE = INDEX = VECTOR = MATRIX = ARRAY3 = SCALAR = None


def signature(*argument_types):
    """int64(argument_types...) or None without numba."""
    return None if _numba is None else STATUS(*argument_types)


def _ir_inlining() -> bool:
    """Whether helpers are inlined at numba's IR level. numba 0.58.1 takes minutes per
    kernel that inlines the joint models (19 min of warmup; 60 s without; 0.59: 75 s with),
    so before 0.59 they are left to LLVM's inliner (older versions untested with IR inlining):
    the same numbers, kernels up to 2x slower.
    RBD_ROS_IR_INLINE=0/1 overrides, with a NUMBA_CACHE_DIR of its own: numba's cache keys
    a kernel by its source and types, not by how its helpers were inlined."""
    forced = os.environ.get('RBD_ROS_IR_INLINE', '')
    if forced in ('0', '1'):
        return forced == '1'
    major, minor = (int(x) for x in _numba.__version__.split('.')[:2])
    return (major, minor) >= (0, 59)


IR_INLINING = _numba is not None and _ir_inlining()


def inline_kernel(fn):
    """A small helper compiled inline into its callers (numba IR inlining), so that the
    array views it receives cost no reference counting: ~4x faster kernels."""
    if _numba is None:
        return fn
    return _numba.njit(cache=True, nogil=True, fastmath=False, error_model='numpy',
                       inline='always' if IR_INLINING else 'never')(fn)


# ---- borrowed views ------------------------------------------------------------------
# numba reference-counts every array a compiled function binds to a name, with an atomic
# NRT_incref/NRT_decref call; the inlined helpers bind the workspace ~15 times per body, and
# those atomics were more than half of an RNEA. A *borrowed* view (numba.carray over the same
# memory, without a meminfo) makes every one of them a null check. The entry points borrow
# their arguments, which the caller keeps alive for the duration of the call.
#
# The model's tables and the workspace reach a kernel as addresses in one int64 array (the
# data's handle, layout.H_*): one argument instead of the three to five arrays an entry point
# reads (the model's two tables and the workspace; the zero external wrenches of RNEA and ABA
# without f_ext; the Coriolis matrix's per-DoF rows), since numba's dispatcher costs about
# 45 ns per array argument, more than a body's step of RNEA. The Data object that owns the
# handle keeps those arrays alive.
if _numba is not None:
    from numba.core import cgutils as _cgutils
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def _as_pointer(typingctx, address):
        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], _cgutils.voidptr_t)
        return _t.voidptr(address), codegen

    @_numba.njit(inline='always', cache=True)
    def borrow(a):
        """A view of ``a`` that numba does not reference-count."""
        return _numba.carray(_as_pointer(a.ctypes.data), a.shape, a.dtype)

    @_numba.njit(inline='always', cache=True)
    def table_of(a, start, rows, cols):
        """a[start:start + rows cols] as a (rows, cols) table, borrowed: a slice's reshape
        is a call into numba's runtime (numba_attempt_nocopy_reshape) on every use."""
        return _numba.carray(_as_pointer(a.ctypes.data + start * a.itemsize), (rows, cols),
                             a.dtype)

    @_numba.njit(inline='always', cache=True)
    def float_view(address, n):
        """The n float64 at ``address``, borrowed."""
        return _numba.carray(_as_pointer(address), n, _np.float64)

    @_numba.njit(inline='always', cache=True)
    def int_view(address, rows, cols):
        """The (rows, cols) int64 table at ``address``, borrowed."""
        return _numba.carray(_as_pointer(address), (rows, cols), _np.int64)

    @_numba.njit(inline='always', cache=True)
    def index_view(address, n):
        """The n int64 at ``address``, borrowed."""
        return _numba.carray(_as_pointer(address), n, _np.int64)
else:  # pragma: no cover - the interpreted mode builds the same views with ctypes
    import ctypes as _ctypes

    def borrow(a):
        return a

    def table_of(a, start, rows, cols):
        return a[start:start + rows * cols].reshape((rows, cols))

    def float_view(address, n):
        return _np.ctypeslib.as_array(_ctypes.cast(int(address), _ctypes.POINTER(_ctypes.c_double)),
                                      (int(n),))

    def int_view(address, rows, cols):
        return _np.ctypeslib.as_array(_ctypes.cast(int(address), _ctypes.POINTER(_ctypes.c_int64)),
                                      (int(rows), int(cols)))

    def index_view(address, n):
        return _np.ctypeslib.as_array(_ctypes.cast(int(address), _ctypes.POINTER(_ctypes.c_int64)),
                                      (int(n),))


# ---- batches over threads --------------------------------------------------------------
# A batch splits its rows into one chunk per thread, each with its own copy of the workspace.
# numba's default thread pool must not be entered from two Python threads at once: api.py
# serialises batch calls with a lock.
# The thread count is passed in: calling numba.get_num_threads() inside a kernel would make it
# uncacheable (it reads a ctypes global), i.e. recompiled in every process.
if _numba is not None:
    prange = _numba.prange

    def thread_count():
        return _numba.get_num_threads()
else:  # pragma: no cover
    prange = range

    def thread_count():
        return 1


@inline_kernel
def chunk_setup(rows, threads, ws):
    """(chunks, workspaces, statuses) of a batch of ``rows``: one chunk per thread, at least
    16 rows each, with room for each chunk's workspace copy and status."""
    chunks = min(threads, max(1, rows // 16))
    return chunks, _np.empty((chunks, ws.shape[0])), _np.zeros(chunks, _np.int64)


@inline_kernel
def chunk_rows(chunk, chunks, rows):
    """The row range of one chunk."""
    return range(chunk * rows // chunks, (chunk + 1) * rows // chunks)


@inline_kernel
def chunk_workspace(workspaces, chunk, ws):
    """A chunk's own copy of the workspace, borrowed."""
    workspaces[chunk, :] = ws
    return borrow(workspaces[chunk])


@inline_kernel
def first_failure(statuses):
    """The first nonzero status of the chunks (chunks are in row order), or 0."""
    for status in statuses:
        if status != 0:
            return status
    return 0


if not cache_is_complete():     # (a complete cache is of these very sources: nothing stale)
    with compile_lock(exclusive=True):     # before any kernel is compiled or loaded
        drop_stale_caches()
