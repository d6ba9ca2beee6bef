"""Files read and written without surprises: the one place that opens what a user names.

Reading (:func:`read_bytes`, :func:`read_text`, :func:`text_lines`, :func:`regular_size`): regular
files only (a FIFO, a device or a folder is refused before a byte is read, so nothing hangs on a
pipe or reads ``/dev/zero`` forever), within a size limit where one is given, and no descriptor is
kept once the call returns. Text must be UTF-8; a line that is not says its file and line number.

Writing (:func:`private_folder`, :func:`write_text`): what is written goes first into a private
folder created beside the destination (``tempfile.mkdtemp``: a fresh, unpredictable name, mode
0700, made exclusively), and reaches the destination by one ``os.replace``. Nothing else in the
destination's folder is opened, followed or changed; SIGTERM and SIGINT remove the private folder
before the process ends, and a later write into the same folder removes the ones a killed process
left (:func:`remove_stale`: only this pattern, owned by this user, older than this process, whose
process is gone). A read-only destination is replaced only when asked (``force``).

Everyone may import this module; it imports the standard library and :mod:`parity.errors` only.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

from .errors import ParityUsageError

__all__ = [
    "read_bytes",
    "read_text",
    "read_table",
    "text_lines",
    "regular_size",
    "open_regular",
    "private_folder",
    "write_text",
    "check_destination",
    "publish",
    "remove_stale",
    "kind_of",
    "PRIVATE_PREFIX",
    "PRIVATE_SUFFIX",
]

PRIVATE_PREFIX = ".parity-"
PRIVATE_SUFFIX = ".partial"
# ".parity-<pid>-<mkdtemp's 8 characters>.partial": the pid tells a later run whether the writer lives.
_PRIVATE = re.compile(r"^\.parity-(\d+)-[A-Za-z0-9_]{8}\.partial$")
_STARTED = time.time()  # this process (near enough: when parity.files was first imported)
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# -- reading ---------------------------------------------------------------------------------------


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words: "a FIFO (named pipe)", "a folder"..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


@contextlib.contextmanager
def _opened(path, what: str) -> Iterator[Tuple[int, int]]:
    """(descriptor, size) of ``path`` opened for reading, a regular file; closed on leaving.
    ``O_NONBLOCK`` makes opening a FIFO return at once, so that it is refused rather than waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ParityUsageError(f"{what} {path}: {_reason(exc)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ParityUsageError(f"{what} {path}: {kind_of(info.st_mode)}, not a regular file; give a file")
        os.set_blocking(fd, True)
        yield fd, info.st_size
    finally:
        os.close(fd)


@contextlib.contextmanager
def open_regular(path, what: str) -> Iterator:
    """``path``, a regular file, open for binary reading (a real file object: numpy reads an array
    from it in one copy); closed on leaving."""
    with _opened(path, what) as (fd, _):
        with os.fdopen(os.dup(fd), "rb") as stream:
            yield stream


def regular_size(path, what: str) -> int:
    """The size of ``path``, a regular file (a link to one is followed), or a usage error naming ``what``."""
    with _opened(path, what) as (_, size):
        return size


def read_bytes(path, what: str, *, limit: Optional[int] = None) -> bytes:
    """The bytes of the regular file ``path``, refused beyond ``limit`` bytes; ``what`` names it in errors."""
    with open_regular(path, what) as stream:
        size = os.fstat(stream.fileno()).st_size
        if limit is not None and size > limit:
            raise ParityUsageError(f"{what} {path}: {size} bytes, over the limit of {limit} bytes")
        data = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(data) > limit:  # the file grew while being read
            raise ParityUsageError(f"{what} {path}: over the limit of {limit} bytes")
        return data


def _decode(line: bytes, path, number: int, what: str) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParityUsageError(
            f"{what} {path}:{number}: not UTF-8 text (byte 0x{line[exc.start]:02x} at column "
            f"{exc.start + 1}); is it a binary file?"
        ) from None


def read_text(path, what: str, *, limit: Optional[int] = None) -> str:
    """The UTF-8 text of ``path`` (as :func:`read_bytes`); a byte that is not UTF-8 names its line."""
    data = read_bytes(path, what, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        _decode(data[start : end if end >= 0 else len(data)], path, number, what)
        raise  # pragma: no cover - _decode raised


def read_table(path, source: str, what: str, *, limit: int) -> object:
    """The data of a ``.toml`` or ``.json`` file (as :func:`read_text` reads it), or a usage error
    that starts with ``source``: another suffix, no such file, or text that does not parse."""
    path = Path(path)
    if path.suffix not in (".toml", ".json"):
        raise ParityUsageError(f"{source}: give a .toml or .json file")
    if not path.exists():
        raise ParityUsageError(f"{source}: no such file")
    text = read_text(path, what, limit=limit)
    try:
        if path.suffix == ".toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover - Python < 3.11
                import tomli as tomllib
            return tomllib.loads(text)
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError and JSONDecodeError are ValueErrors
        raise ParityUsageError(f"{source}: cannot parse it: {exc}") from None


def text_lines(path, what: str) -> Iterator[Tuple[int, str]]:
    """(number, line) of the UTF-8 text file ``path``, read a line at a time (a large file is never
    held whole); its descriptor closes when the iteration ends."""
    with open_regular(path, what) as stream:
        for number, line in enumerate(stream, 1):
            yield number, _decode(line, path, number, what)


# -- writing ---------------------------------------------------------------------------------------


def check_destination(dst: Path, what: str, *, force: bool = False) -> None:
    """A file may be written at ``dst``: not a folder, its folder exists and is writable, and an
    existing read-only file is replaced only with ``force``."""
    try:
        info = os.stat(dst)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise ParityUsageError(f"{what} {dst}: cannot look at it: {_reason(exc)}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ParityUsageError(f"{what} {dst}: a folder; give the path of the file to write")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ParityUsageError(f"{what} {dst}: {kind_of(info.st_mode)}; give the path of a regular file to write")
    if not dst.parent.is_dir():
        raise ParityUsageError(f"{what} {dst}: folder {dst.parent} does not exist")
    if not os.access(dst.parent, os.W_OK | os.X_OK):
        raise ParityUsageError(f"{what} {dst}: the folder {dst.parent} is not writable")
    if info is not None and not force and (not os.access(dst, os.W_OK) or not info.st_mode & 0o222):
        raise ParityUsageError(
            f"{what} {dst}: exists and is read-only; make it writable, or pass --force (force=True) to replace it"
        )


def _default_mode() -> int:
    """The mode an ordinary new file gets here: 0666 less the umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


class _Signals:
    """While a private folder exists: SIGTERM raises ``SystemExit`` (so ``finally`` blocks run) and
    SIGINT ``KeyboardInterrupt``, as it does by default. Restored on leaving; main thread only."""

    def __enter__(self):
        self.saved = {}
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGTERM, signal.SIGINT):
                previous = signal.getsignal(number)
                if previous in (signal.SIG_DFL, signal.default_int_handler):
                    self.saved[number] = previous
                    signal.signal(number, self._raise)
        return self

    @staticmethod
    def _raise(number, frame):
        if number == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + number)

    def __exit__(self, *exc):
        for number, previous in self.saved.items():
            signal.signal(number, previous)
        return False


@contextlib.contextmanager
def private_folder(dst: Path, what: str, *, force: bool = False) -> Iterator[Path]:
    """A fresh private folder beside ``dst`` (checked first with :func:`check_destination`), to write
    in; :func:`publish` moves a file of it onto ``dst``. The folder and whatever is left in it are
    removed on leaving, on an error, SIGINT or SIGTERM."""
    dst = Path(dst)
    check_destination(dst, what, force=force)
    remove_stale(dst.parent)
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{os.getpid()}-", suffix=PRIVATE_SUFFIX, dir=dst.parent))
    except OSError as exc:
        raise ParityUsageError(f"{what} {dst}: cannot write in {dst.parent}: {_reason(exc)}") from None
    try:
        with _Signals():
            yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def publish(written: Path, dst: Path, what: str) -> None:
    """Move ``written`` (a file in a :func:`private_folder`) onto ``dst`` in one step, with the mode
    an ordinary new file gets (MindSpore leaves its checkpoints read-only)."""
    try:
        os.chmod(written, _default_mode(), follow_symlinks=False)
        os.replace(written, dst)
    except OSError as exc:
        raise ParityUsageError(f"{what} {dst}: cannot move the written file into place: {_reason(exc)}") from None


def write_text(path, text: str, what: str, *, force: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a private folder: a reader never sees half a file."""
    path = Path(path)
    with private_folder(path, what, force=force) as folder:
        written = folder / "out"
        try:
            written.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ParityUsageError(f"{what} {path}: cannot write it: {_reason(exc)}") from None
        publish(written, path, what)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError as exc:  # EPERM: it exists, another user's
        return exc.errno == errno.EPERM
    return True


def remove_stale(folder: Path) -> list:
    """Remove the private folders a killed process left in ``folder``: a name of the private pattern,
    a real folder (not a link), owned by this user, last changed before this process started, and
    its writer's process gone. Nothing else is touched. Returns what was removed."""
    removed: List[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = _PRIVATE.match(name)
        if not match or int(match.group(1)) == os.getpid():
            continue
        path = Path(folder) / name
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if (
            stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.geteuid()
            and info.st_mtime < _STARTED
            and not _alive(int(match.group(1)))
        ):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
