"""The recording journal: every answered call is appended to a file before its answer goes out.

A gateway's recordings travel to the store through its recorder process and stay in memory
until they are committed; a gateway killed with SIGKILL loses that memory. So each entry is
also appended (one `write(2)`, no fsync: the kernel keeps what a killed process wrote) to a
journal file of this process: `<dir>/<host>-<pid>-<n>.journal`, opened O_APPEND, mode 0600,
and locked with `flock` while the process lives (the kernel drops the lock when it dies, however
it dies). Its frames are those of the pipe (`recorder._journal`): a hello, then one frame per
packed entry. Once every entry in a file is confirmed in the store, the file is emptied (or,
after rotation, deleted).

The hello never holds the configured secret values, only a salted hash of each: a process
writes a journal back only if it knows every one of them (`know_secrets`: the gateway and its
recorder process do, from the config), so the rows it writes are redacted as the dead gateway's
would have been; any other process leaves the journal for a gateway with the same config.

`recover` writes the journals whose owner is gone (the lock can be taken) and deletes them; it
runs whenever a store is opened (`core.store_hooks`): by the recorder process, by the next
gateway, by any `toolreel` command. Writes are upserts, so an entry written twice is harmless.

Where: next to a SQLite file (`<file>.journal/`); for other stores, under the user data
directory, in a folder named after a hash of the URL without its password.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import itertools
import logging
import os
import re
import socket
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from toolreel.core.errors import StoreError
from toolreel.core.store_peek import in_memory
from toolreel.recorder._journal import HEADER_SIZE, decode, encode, frame_length, unpack
from toolreel.recorder._rows import Entry, entry, write_entries

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = ["ROTATE_BYTES", "Spool", "journal_dir", "journal_dirs", "know_secrets", "pending_journals", "recover"]

logger = logging.getLogger("toolreel.recorder")

ROTATE_BYTES = 8 * 1024 * 1024  # a file past this starts a new one (a stream that never catches up)
RECOVER_BATCH = 500  # entries per transaction when a journal is written back
_SUFFIX = ".journal"
_names = itertools.count(1)
_known: set[str] = set()  # secret values this process redacts with


def know_secrets(values: Sequence[str]) -> None:
    """Secret values this process knows (from its config): journals that need them can be written."""
    _known.update(v for v in values if v)


def _digest(salt: bytes, value: str) -> str:
    return hashlib.sha256(salt + value.encode("utf-8", "surrogatepass")).hexdigest()


def journal_dirs(url: str | None) -> list[Path]:
    """Where journals of the store at `url` may be: `journal_dir`, then a fallback in memory-backed
    /dev/shm (or the runtime dir) for when that disk is full or read-only: it outlives a killed
    process, not a reboot."""
    primary = journal_dir(url)
    if primary is None:
        return []
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp")
    key = hashlib.sha256(str(primary).encode()).hexdigest()[:16]
    return [primary, base / f"toolreel-journal-{os.getuid()}" / key]


def journal_dir(url: str | None) -> Path | None:
    """Where the journals of the store at `url` live; None for a database in one process's memory."""
    url = url or os.environ.get("TOOLREEL_DB") or _default_url()
    if in_memory(url):
        return None
    prefix = "sqlite:///"
    if url.startswith(prefix) and "?" not in url:
        return Path(url[len(prefix) :]).absolute().parent / (Path(url[len(prefix) :]).name + _SUFFIX)
    import platformdirs  # light

    key = hashlib.sha256(_without_password(url).encode()).hexdigest()[:16]
    return Path(platformdirs.user_data_dir("toolreel")) / "journal" / key


def _default_url() -> str:
    from toolreel.core.store_peek import _default_path

    return _default_path()


def _without_password(url: str) -> str:
    url = re.sub(r"^(postgres|postgresql)(\+psycopg)?://", "postgresql+psycopg://", url)
    return re.sub(r"://([^:/@]*):[^@/]*@", r"://\1@", url)


class Spool:
    """This process's journal files. `append` is called once per submitted entry, in order;
    `confirmed(n)` when the first n entries are in the store."""

    def __init__(self, directories: Sequence[Path], secret_values: Sequence[str] = ()) -> None:
        self._dirs = list(directories)  # the first that takes a write is used: a full disk moves on
        self._dir = self._dirs[0] if self._dirs else None
        self._secret_values = list(secret_values)
        self._fd = -1
        self._path: Path | None = None
        self._size = 0
        self._head = 0  # size of the hello frame
        self._count = 0  # entries appended (or attempted): the writer's submission count
        self._in_file = 0  # entries in the current file since it was last emptied
        # rotated files (still open: locked), and the count that confirms them
        self._full: deque[tuple[Path, int, int]] = deque()
        self.error: str | None = None  # the last append failed: why
        self._missed = False  # an append failed since everything was last confirmed

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def complete(self) -> bool:
        """Every entry not yet confirmed is in the journal."""
        return not self._missed

    def append(self, packed: bytes) -> bool:
        """Journal one entry; False (and `error` says why) when it could not be written."""
        self._count += 1
        if self._dir is None:
            return False
        while True:
            try:
                written = self._write(packed)
                break
            except OSError as exc:
                self._undo()
                if self._next_dir():
                    continue
                self._missed = True
                self.error = f"the recording journal {self._path or self._dir} cannot be written ({exc})"
                return False
        self.error = None
        self._size += written
        self._in_file += 1
        if self._size >= ROTATE_BYTES:
            self._rotate()
        return True

    def _write(self, packed: bytes) -> int:
        if self._fd < 0:
            self._open()
        written = os.writev(self._fd, (_header(len(packed)), packed))
        if written != HEADER_SIZE + len(packed):
            raise OSError(errno.ENOSPC, "the journal file took only part of an entry")
        return written

    def _next_dir(self) -> bool:
        """Go on in the next folder (the file so far is kept, locked, until its entries are saved)."""
        at = self._dirs.index(self._dir) if self._dir in self._dirs else len(self._dirs)
        if at + 1 >= len(self._dirs):
            return False
        if self._fd >= 0:
            self._full.append((self._path or self._dirs[at], self._fd, self._count - 1))
            self._fd, self._path = -1, None
        self._dir = self._dirs[at + 1]
        logger.warning("the recording journal moves to %s (%s cannot be written)", self._dir, self._dirs[at])
        return True

    def confirmed(self, written: int) -> None:
        """The first `written` entries are in the store: drop the files that hold nothing else."""
        while self._full and self._full[0][2] <= written:
            path, fd, _ = self._full.popleft()
            _unlink(path)
            os.close(fd)
        if written >= self._count:
            self._missed = False
        if written >= self._count and self._in_file and self._fd >= 0:
            with contextlib.suppress(OSError):  # an emptied file is an optimisation: recovery rewrites at worst
                os.ftruncate(self._fd, self._head)
                self._size, self._in_file = self._head, 0

    def close(self, written: int) -> int:
        """At exit: delete what is confirmed, keep the rest for the next opening of the store;
        returns how many entries were kept."""
        self.confirmed(written)
        kept = self._count - written
        for _, fd, _ in self._full:  # unconfirmed: left for the next opening of the store
            os.close(fd)
        self._full.clear()
        if self._fd >= 0:
            if not kept and self._path is not None:
                _unlink(self._path)
            os.close(self._fd)
            self._fd = -1
        return max(0, kept)

    def _open(self) -> None:
        assert self._dir is not None
        self._dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"{socket.gethostname()}-{os.getpid()}-{next(_names)}{_SUFFIX}"
        path = self._dir / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            salt = os.urandom(16)
            hello = encode(("hello", salt, sorted({_digest(salt, v) for v in self._secret_values if v})))
            if os.write(fd, hello) != len(hello):
                raise OSError(errno.ENOSPC, "the journal file took only part of its header")
        except OSError:
            os.close(fd)
            _unlink(path)
            raise
        self._fd, self._path, self._size, self._head, self._in_file = fd, path, len(hello), len(hello), 0

    def _undo(self) -> None:
        """Cut a partly written frame off, so that the file stays readable."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)

    def _rotate(self) -> None:
        assert self._path is not None
        self._full.append((self._path, self._fd, self._count))  # kept open, so kept locked
        self._fd, self._path = -1, None


def _header(length: int) -> bytes:
    return length.to_bytes(HEADER_SIZE, "big")


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


# recovery -------------------------------------------------------------------------------------
def pending_journals(url: str | None) -> list[Path]:
    """Journal files of the store at `url` (any owner): something may wait to be written."""
    found: list[Path] = []
    for directory in journal_dirs(url):
        with contextlib.suppress(OSError):
            found.extend(sorted(directory.glob(f"*{_SUFFIX}")))
    return found


def recover(store: Store, url: str) -> None:
    """Write the journals whose owner is gone, then delete them (an open hook: `core.store_hooks`)."""
    total = 0
    for path in pending_journals(url):
        total += _recover_one(store, path)
    if total:
        logger.warning("wrote %d recorded calls that a stopped gateway had journaled but not saved", total)


def _recover_one(store: Store, path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise StoreError(f"the recording journal {path} cannot be read ({exc}); check its permissions") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # its process is alive and writes it
        if _gone(fd, path):
            return 0  # another process recovered it meanwhile
        with open(fd, "rb", closefd=False) as file:
            data = file.read()
        hello, entries = _parse(data, path)
        secret_values = _secrets_for(hello, path)
        if secret_values is None:
            return 0
        created: set[str] = set()
        store.redactor.add(secret_values)  # the store redacts every row it writes
        for start in range(0, len(entries), RECOVER_BATCH):
            write_entries(store, entries[start : start + RECOVER_BATCH], created)
        _unlink(path)
        return sum(1 for item in entries if item.kind != "execution")
    finally:
        os.close(fd)


def _gone(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino != os.fstat(fd).st_ino
    except FileNotFoundError:
        return True


def _secrets_for(hello: Sequence[object], path: Path) -> list[str] | None:
    """The known secret values whose hashes the hello lists; None (and a warning) if one is unknown."""
    if len(hello) < 3 or not isinstance(hello[1], bytes) or not isinstance(hello[2], list | tuple):
        return []  # an empty journal (its hello cut short)
    salt, wanted = hello[1], set(hello[2])
    values = [value for value in _known if _digest(salt, value) in wanted]
    if len(values) < len(wanted):
        logger.warning(
            "the recording journal %s holds calls of a gateway configured with %d secret values this command "
            "does not know, so it cannot redact them: start toolreel serve with that gateway's config to save them",
            path,
            len(wanted) - len(values),
        )
        return None
    return values


def _parse(data: bytes, path: Path) -> tuple[Sequence[object], list[Entry]]:
    """The hello and the entries; a frame cut short at the end (a write the process did not
    finish) ends the file, a frame that cannot be read is skipped and said."""
    hello: Sequence[object] = ()
    entries: list[Entry] = []
    at = 0
    first = True
    while len(data) - at >= HEADER_SIZE:
        length = frame_length(data[at : at + HEADER_SIZE])
        body = data[at + HEADER_SIZE : at + HEADER_SIZE + length]
        if len(body) < length:
            break
        at += HEADER_SIZE + length
        try:
            if first:
                first = False
                hello = decode(body)
                continue
            entries.append(entry(unpack(body)))
        except (ValueError, EOFError, TypeError, IndexError) as exc:
            logger.error("skipped an unreadable entry in the recording journal %s (%s)", path, exc)
    return hello, entries
