"""JAX's persistent compilation cache for coreval's fits.

Every new Python process compiles coreval's JAX programs again: for a 2PL SVI
fit on CPU that is about 4-6 s of XLA compilation before the first step (the
fit itself of ``arc_challenge``, 218 × 1172, takes about 2 s once compiled).
JAX can keep compiled programs on disk and load them in later processes
(https://docs.jax.dev/en/latest/persistent_compilation_cache.html).

The ``coreval`` command line turns the cache on, and the processes it starts
(the harness's joblib workers) inherit it through the environment; in a script or
notebook, call :func:`enable_compilation_cache` once. The cache lives
in ``$COREVAL_JAX_CACHE``, else ``$XDG_CACHE_HOME/coreval/jax``, else
``~/.cache/coreval/jax``; ``COREVAL_JAX_CACHE=off`` turns it off. A cache
directory the user already configured for JAX is left as it is.

Trust boundary
--------------
JAX loads the compiled programs in the cache and runs them. Anyone who can write
into the cache directory can therefore run code in your coreval processes. Keep it
private (the default under your home is created with mode 0700); coreval warns when
the directory, or the folder that holds it, is writable by other users, and then does
not use it.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

#: Environment variable naming the cache directory (or ``off``).
ENV_VAR = "COREVAL_JAX_CACHE"
#: Programs that compile faster than this are not written to the cache.
MIN_COMPILE_SECONDS = 0.1


def default_cache_dir() -> Path | None:
    """The cache directory from the environment (see the module docstring); None if off."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value.lower() in {"off", "0", "false", "no"}:
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "coreval" / "jax"


def writable_by_others(directory: Path) -> Path | None:
    """The directory if another user owns it or its group or others may write to it, or
    its parent if anyone may.

    A world-writable parent with the sticky bit (``/tmp``) does not count: others cannot
    replace a folder they do not own there. A folder that another user created first
    (e.g. at a predictable path under ``/tmp``) is theirs to fill, whatever its mode.
    """
    import stat

    checks = ((directory, stat.S_IWGRP | stat.S_IWOTH), (directory.parent, stat.S_IWOTH))
    for path, bits in checks:
        try:
            st = path.stat()
        except OSError:
            continue
        if path == directory and hasattr(os, "getuid") and st.st_uid != os.getuid():
            return path
        if st.st_mode & bits and not (path != directory and st.st_mode & stat.S_ISVTX):
            return path
    return None


def enable_compilation_cache(path: str | os.PathLike | None = None, *,
                             min_compile_seconds: float = MIN_COMPILE_SECONDS) -> Path | None:
    """Turn on JAX's persistent compilation cache, so later processes skip compilation.

    The setting goes into JAX's configuration when JAX is already imported, and
    always into the environment (``JAX_COMPILATION_CACHE_DIR``,
    ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``), so that worker processes
    started afterwards (the harness's joblib workers) use the same cache.

    Parameters
    ----------
    path : path-like, optional
        Cache directory; default :func:`default_cache_dir`.
    min_compile_seconds : float
        Only programs whose compilation took at least this long are cached.

    Returns
    -------
    Path or None
        The directory in use: the one JAX was already configured with, if any,
        else ``path``; None when the cache is turned off (``COREVAL_JAX_CACHE=off``
        and no ``path``, or the directory cannot be created).
    """
    jax = sys.modules.get("jax")
    current = (jax.config.jax_compilation_cache_dir if jax is not None
               else os.environ.get("JAX_COMPILATION_CACHE_DIR"))
    if current:
        return Path(current)
    directory = Path(path).expanduser() if path is not None else default_cache_dir()
    if directory is None:
        return None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:  # e.g. a read-only home: run without the cache
        warnings.warn(f"JAX compilation cache not enabled: {exc}", stacklevel=2)
        return None
    shared = writable_by_others(directory)
    if shared is not None:
        warnings.warn(f"JAX compilation cache not enabled: {shared} is owned or writable by "
                      "other users, who could place programs there that coreval would run; use a "
                      f"private folder ({ENV_VAR}=PATH) or chmod go-w it", stacklevel=2)
        return None
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(directory)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(float(min_compile_seconds))
    if jax is not None:
        jax.config.update("jax_compilation_cache_dir", str(directory))
        jax.config.update("jax_persistent_cache_min_compile_time_secs",
                          float(min_compile_seconds))
    return directory


#: Share of the kernel's limit on a process's memory mappings (``vm.max_map_count``)
#: above which :func:`release_compiled_programs` drops JAX's compiled programs.
MAP_SHARE = 0.5


def memory_map_usage() -> tuple[int, int] | None:
    """``(memory mappings of this process, the kernel's limit)``, or None without ``/proc``."""
    try:
        with open(f"/proc/{os.getpid()}/maps", "rb") as maps:
            used = sum(1 for _ in maps)
        with open("/proc/sys/vm/max_map_count") as limit:
            return used, int(limit.read().strip())
    except (OSError, ValueError):
        return None


def release_compiled_programs(share: float = MAP_SHARE) -> bool:
    """Drop JAX's in-memory compiled programs once they hold too many memory mappings.

    XLA maps each compiled program's code and data into memory (a few mappings per
    program), and JAX keeps every program it compiled, for every shape, for the life of
    the process. A long harness run fits many shapes (folds, splits, datasets) and
    reaches Linux's limit on a process's mappings (``vm.max_map_count``, 65530 by
    default) after an hour or so; XLA then fails with "LLVM ERROR: Unable to allocate
    section memory" and the process dies. The harness calls this after each unit of
    work: when the process holds more than ``share`` of the limit, ``jax.clear_caches()``
    frees the programs (later fits compile again, or load from the persistent cache of
    :func:`enable_compilation_cache`).

    Parameters
    ----------
    share : float
        Share of the limit above which the programs are dropped (0 drops them always).

    Returns
    -------
    bool
        Whether they were dropped (never when JAX was not imported, or where the
        mappings cannot be counted).
    """
    jax = sys.modules.get("jax")
    if jax is None:  # nothing compiled: no need to read the mappings
        return False
    usage = memory_map_usage()
    if usage is None or usage[0] <= share * usage[1]:
        return False
    import gc

    jax.clear_caches()
    gc.collect()  # the programs are freed, and their mappings unmapped, with their objects
    return True
