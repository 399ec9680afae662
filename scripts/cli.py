"""cli: what the Python command lines share so that they behave as ./train and ./infer do.

- Parser: argparse whose usage errors are one line, "PROG: error: ...", exit 2.
- run(prog, main, argv): calls main(argv) (which may return an exit status)
  and turns an Error into one line on
  stderr and its exit status (1 unless it says 2), checks that standard output
  was written and closed (a full disk or a closed pipe is exit 1 with the
  reason, never a lost result), and leaves no traceback for a failure of the
  input or the system.
- write_file(path, data): an output file written atomically, its failure naming it.
- read_input(path, what): the bytes of a file the user named, refusing a missing
  file, a directory, a FIFO or a device before opening it, so nothing blocks.
- OutputDir: the rule ./infer --report follows for its directory (app/report/report.c,
  docs/checkpoint.md): write only where there is nothing, into an empty
  directory, or over this script's own earlier output, recognised by its marker
  file and by holding nothing else; build the new contents in DIR.tmp.XXXXXX
  beside DIR and put them in place by renaming, so a failure leaves DIR as it was.

What each script reads, draws or computes is its own.
"""
import argparse
import codecs
import errno
import hashlib
import os
import stat
import sys
import tempfile


class Error(Exception):
    """A failure to report in one line; status 2 for usage, 1 otherwise."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (the usage itself is in --help)."""

    def error(self, message):
        raise Error(message, 2)

    def print_help(self, file=None):
        """--help's text, written so that a failed write raises (argparse's own
        swallows it) and run() reports a full disk or a closed pipe in one line."""
        (file or sys.stdout).write(self.format_help())

    def exit(self, status=0, message=None):
        """After --help: its text is flushed here, inside run(), for the same reason."""
        if message:
            sys.stderr.write(message)
        sys.stdout.flush()
        sys.exit(status)


def _quiet_stdout():
    """Points standard output at /dev/null, so that the interpreter's own flush
    at exit cannot fail a second time and print a traceback."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


def _escape_bytes(err):
    """The error handler of standard output and error: a path's undecodable
    bytes, which Python holds as lone surrogates (U+DC80..U+DCFF), are written
    as the bytes they stand for, \\xNN, and any other character the stream
    cannot encode as its backslash escape."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    shown = []
    for c in err.object[err.start:err.end]:
        o = ord(c)
        if 0xDC80 <= o <= 0xDCFF:
            shown.append("\\x%02x" % (o - 0xDC00))
        elif o <= 0xFF:
            shown.append("\\x%02x" % o)
        elif o <= 0xFFFF:
            shown.append("\\u%04x" % o)
        else:
            shown.append("\\U%08x" % o)
    return "".join(shown), err.end


codecs.register_error("headcount_bytes", _escape_bytes)


def shown(text: str) -> str:
    """text for a message: a path's undecodable bytes as \\xNN (see
    _escape_bytes), whatever stream or file the message goes to."""
    return text.encode("utf-8", "headcount_bytes").decode("utf-8")


def _open_stdout():
    """Standard output as the script writes it. When the script was started with
    it closed, Python has none (sys.stdout is None): descriptor 1 is then held by
    /dev/null opened read-only, so that no file the script opens later takes its
    place (and reaches a program it starts as that program's output), and a write
    to it fails as on a closed descriptor, reported by run() in one line."""
    if sys.stdout is not None:
        sys.stdout.reconfigure(errors="headcount_bytes")
        return
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
        sys.stdout = open(1, "w", encoding="utf-8", errors="headcount_bytes", closefd=False)
    except OSError:
        pass


def run(prog: str, main, argv=None) -> None:
    """Runs main(argv) as a program named prog and exits with its status: what
    main returns (None is 0), or that of the Error it raises."""
    status = 0
    _open_stdout()
    if sys.stderr is not None:
        sys.stderr.reconfigure(errors="headcount_bytes")
    try:
        status = main(sys.argv[1:] if argv is None else argv) or 0
        sys.stdout.flush()
    except Error as e:
        status = e.status
        message = str(e)
    except KeyboardInterrupt:
        status, message = 130, "interrupted"
    except BrokenPipeError:
        status, message = 1, "cannot write standard output: the reader closed it"
    except OSError as e:
        status = 1
        message = ("%s: %s" % (e.filename, e.strerror or e) if e.filename is not None
                   else "cannot write standard output: %s" % (e.strerror or e))
    else:
        message = None
        try:
            sys.stdout.close()
        except OSError as e:
            status, message = 1, "cannot write standard output: %s" % (e.strerror or e)
    if message is not None:
        _quiet_stdout()
        if sys.stderr is not None:
            sys.stderr.write("%s: error: %s\n" % (prog, shown(message)))
            sys.stderr.flush()
    sys.exit(status)


NAME_MAX = 255  # the longest name (one path component) a file system takes


def sibling(path: str, suffix: str, room: int = 0) -> str:
    """The path of a file beside path named after it: path + suffix, with room
    bytes more to come (mkdtemp's random letters). When that name would pass
    NAME_MAX, path's last component is cut (at a character's start) to leave
    room for "~", 16 hex digits of a hash of the whole component, and the
    suffix, so a legal name of up to NAME_MAX bytes can always be written."""
    head, base = os.path.split(path)
    name, tail = os.fsencode(base), os.fsencode(suffix)
    if len(name) + len(tail) + room <= NAME_MAX:
        return path + suffix
    keep = max(0, NAME_MAX - len(tail) - room - 17)
    while keep > 0 and keep < len(name) and name[keep] & 0xC0 == 0x80:
        keep -= 1  # not inside a UTF-8 sequence
    short = name[:keep] + b"~" + hashlib.sha256(name).hexdigest()[:16].encode() + tail
    return os.path.join(head, os.fsdecode(short))


def write_file(path: str, data) -> None:
    """Writes data (text or bytes) to path atomically: path.tmp (sibling), fsync,
    rename. A failed write (a full disk) removes path.tmp and is an OSError that
    names path, so run() reports the file, not standard output."""
    tmp = sibling(path, ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        if e.filename is not None:
            raise
        raise OSError(e.errno, e.strerror, path) from None


def check_input(path: str, what: str = "file") -> os.stat_result:
    """Refuses what cannot be read as a plain file without blocking, with the
    words the C programs use; returns os.stat's result."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise Error("%s: %s" % (path, "no such %s" % what if e.errno == errno.ENOENT
                                else e.strerror)) from None
    if stat.S_ISDIR(st.st_mode):
        raise Error("%s: is a directory, expected a %s" % (path, what))
    if not stat.S_ISREG(st.st_mode):
        raise Error("%s: not a regular file (a FIFO, device or socket)" % path)
    return st


def read_input(path: str, what: str = "file") -> bytes:
    """The bytes of the plain file at path (see check_input)."""
    check_input(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise Error("%s: not a regular file (a FIFO, device or socket)" % path)
            return f.read()
    except OSError as e:
        raise Error("%s: cannot read: %s" % (path, e.strerror)) from None


class OutputDir:
    """The output directory of a script that writes several files (see above).
    flag names the option in messages; own: the file names this script writes
    there; marker: the name of the file that marks the directory as its own.
    Use: check() before the work, then write(name, text) for each file inside a
    with block, which puts the directory in place when the block ends without
    an exception and removes the temporary one otherwise."""

    def __init__(self, path, flag, own, marker, marker_text):
        self.path, self.flag = path.rstrip("/") or path, flag
        self.own, self.marker, self.marker_text = set(own) | {marker}, marker, marker_text
        self.state, self.tmp = None, None

    def check(self):
        """0: nothing at the path; 1: an empty directory; 2: our earlier output.
        Anything else is an Error naming what is in the way."""
        p = self.path
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            self.state = 0
            return self.state
        except OSError as e:
            raise Error("%s %s: %s" % (self.flag, p, e.strerror)) from None
        if stat.S_ISLNK(st.st_mode):
            raise Error("%s %s is a symbolic link; give a new directory name" % (self.flag, p))
        if not stat.S_ISDIR(st.st_mode):
            raise Error("%s %s exists and is not a directory; give a new directory name"
                        % (self.flag, p))
        try:
            names = sorted(os.listdir(p))
        except OSError as e:
            raise Error("%s %s: cannot list it: %s" % (self.flag, p, e.strerror)) from None
        if not names:
            self.state = 1
            return self.state
        marked = os.path.isfile(os.path.join(p, self.marker)) and \
            not os.path.islink(os.path.join(p, self.marker))
        foreign = names if not marked else [
            n for n in names if n not in self.own
            or not stat.S_ISREG(os.lstat(os.path.join(p, n)).st_mode)]
        if not foreign:
            self.state = 2
            return self.state
        shown = ", ".join(os.path.join(p, n) for n in foreign[:8])
        raise Error("%s %s holds %d file%s that no earlier run of this script wrote there "
                    "(%s%s): it writes only into a new or empty directory, or over its own "
                    "earlier output (marked by %s); give a new directory name or move them"
                    % (self.flag, p, len(foreign), "s" if len(foreign) > 1 else "", shown,
                       ", ..." if len(foreign) > 8 else "", self.marker))

    def __enter__(self):
        if self.state is None:
            self.check()
        parent, base = os.path.split(os.path.abspath(self.path))
        try:
            self.tmp = tempfile.mkdtemp(prefix=sibling(base, ".tmp.", 8), dir=parent)
        except OSError as e:
            raise Error("%s %s: cannot create a directory beside it: %s"
                        % (self.flag, self.path, e.strerror)) from None
        os.chmod(self.tmp, 0o777 & ~_umask())
        return self

    def write(self, name, text):
        """Writes text (str) as UTF-8 to the file name in the new directory (a
        path's undecodable bytes, which Python holds as surrogates, as \\xNN)."""
        assert name in self.own, name
        path = os.path.join(self.tmp, name)
        try:
            with open(path, "x", encoding="utf-8", errors="headcount_bytes") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise Error("cannot write %s: %s" % (os.path.join(self.path, name), e.strerror)) \
                from None

    def __exit__(self, kind, value, tb):
        if kind is None:
            try:
                self.write(self.marker, self.marker_text)
                self._put_in_place()
                return False
            except BaseException:
                self._remove(self.tmp)
                raise
        self._remove(self.tmp)
        return False

    def _put_in_place(self):
        """Renames the new directory over a missing or empty one; over our earlier
        output, moves that aside first, then removes it."""
        if self.state == 2:
            old = tempfile.mkdtemp(prefix=sibling(os.path.basename(self.path), ".old.", 8),
                                   dir=os.path.dirname(os.path.abspath(self.path)))
            try:
                os.rename(self.path, old)
            except OSError as e:
                os.rmdir(old)
                raise Error("cannot move the earlier output in %s aside: %s"
                            % (self.path, e.strerror)) from None
            try:
                os.rename(self.tmp, self.path)
            except OSError as e:
                os.rename(old, self.path)
                raise Error("cannot rename the new output into %s: %s"
                            % (self.path, e.strerror)) from None
            self._remove(old)
            return
        try:
            os.rename(self.tmp, self.path)
        except OSError as e:
            raise Error("cannot rename the new output into %s: %s"
                        % (self.path, e.strerror)) from None

    def _remove(self, d):
        """Removes a directory of ours: only the files this script writes, then d."""
        if not d or not os.path.isdir(d):
            return
        for n in os.listdir(d):
            if n in self.own and os.path.isfile(os.path.join(d, n)):
                os.unlink(os.path.join(d, n))
        try:
            os.rmdir(d)
        except OSError:
            pass


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
