"""tool_contract: the contract every Python tool in scripts/ and bench/ keeps,
the one simbatch's C code keeps (docs/CONTRACT.md):

- bad input (a file, an option): one line naming it, exit 2 (BadInput);
  a usage error is one line and "see --help", never the whole usage
  (OneLineParser, or usage_error); --help prints the usage and exits 0;
- a machine failure (a full disk, an I/O error, out of memory): one line,
  exit 1 (MachineFailure); no traceback either way (main_guard);
- every input read with a bound (read_bytes, read_text; util/lines.h's
  limits): a device or FIFO that never ends is refused, not read forever;
- every output written whole or not at all, as util/outfile.c writes them
  (write_atomic, write_all_atomic): beside its target and renamed over a
  regular file (or none yet); through a symbolic link, the file it names (the
  link stays a link); a character device or FIFO written in place, never
  renamed over; anything else refused. A write error leaves no partial file.

Import it from a tool in scripts/ (its folder is on sys.path) or, from
bench/, after sys.path.insert of the scripts/ folder."""
import argparse
import datetime
import errno
import os
import re
import stat
import subprocess
import sys
import tempfile

SMALL_FILE = 64 << 20      # a table, a profile, a configuration (util/lines.h LINES_MAX_SMALL_FILE)
WORKLOAD_FILE = 1 << 30    # a trace, a results or timeline file (LINES_MAX_WORKLOAD_FILE)

# errno values that mean the machine failed rather than the input (util/errkind.h marks the same)
MACHINE_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.ENOMEM}


class BadInput(Exception):
    """The input's fault: exit 2."""


class MachineFailure(Exception):
    """The machine's fault (a full disk, an I/O error): exit 1."""


def os_error(e, what):
    """An OSError as the exception its errno means, its message 'what: reason'."""
    kind = MachineFailure if e.errno in MACHINE_ERRNOS else BadInput
    return kind(f"{what}: {e.strerror or e}")


# ---------------------------------------------------------------- reading

def read_bytes(path, limit=SMALL_FILE, what="file"):
    """path's bytes, at most limit of them and no NUL byte (BadInput otherwise).
    A regular file is refused by its size before it is read; anything else
    (a FIFO, a device) by what it yields, in chunks."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise os_error(e, f"{path}: cannot read")
    with f:
        try:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise BadInput(f"{path}: {st.st_size} bytes, more than the {limit >> 20} MiB a {what} may be")
            chunks, total = [], 0
            while chunk := f.read(1 << 20):
                total += len(chunk)
                if total > limit:
                    raise BadInput(f"{path}: more than the {limit >> 20} MiB a {what} may be")
                if b"\0" in chunk:
                    raise BadInput(f"{path}: a NUL byte: not a {what}")
                chunks.append(chunk)
        except OSError as e:
            raise os_error(e, f"{path}: cannot read")
    return b"".join(chunks)


def read_text(path, limit=SMALL_FILE, what="file"):
    """read_bytes decoded as UTF-8 (BadInput when it is not)."""
    try:
        return read_bytes(path, limit, what).decode()
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: byte {e.start} is not UTF-8 text: not a {what}")


def check_date(text, option="--date"):
    """A calendar date YYYY-MM-DD, as given (BadInput otherwise)."""
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            datetime.date.fromisoformat(text)
            return text
    except ValueError:
        pass
    raise BadInput(f"{option}={text!r}: not a date YYYY-MM-DD")


# ---------------------------------------------------------------- writing

def _target(path):
    """(where path's output goes, in_place), as util/outfile.c's outfile_target:
    through symbolic links (dangling ones too) to the file they name; a
    regular file or none is replaced (False), a character device or FIFO
    written in place (True); anything else refused."""
    t = path
    for _ in range(41):
        try:
            st = os.lstat(t)
        except FileNotFoundError:
            return t, False
        except OSError as e:
            raise os_error(e, f"cannot write '{path}'")
        if not stat.S_ISLNK(st.st_mode):
            break
        link = os.readlink(t)
        t = link if os.path.isabs(link) else os.path.join(os.path.dirname(t), link)
    else:
        raise BadInput(f"cannot write '{path}': too many symbolic links")
    if stat.S_ISREG(st.st_mode):
        return t, False
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return t, True
    raise BadInput(f"cannot write '{path}': it is " + ("a directory" if stat.S_ISDIR(st.st_mode) else
                   "a block device (outputs go to files, character devices and FIFOs)" if stat.S_ISBLK(st.st_mode)
                   else "not a file, character device or FIFO"))


def _prepare(path, data):
    """The output written beside its target: (target, temporary file or None when in place)."""
    target, in_place = _target(path)
    if isinstance(data, str):
        data = data.encode()
    if in_place:
        return target, None, data
    d = os.path.dirname(target) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", dir=d)
    except OSError as e:
        raise os_error(e, f"cannot write '{path}'")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    except OSError as e:
        os.unlink(tmp)
        raise os_error(e, f"error writing '{path}'")
    except BaseException:
        os.unlink(tmp)
        raise
    return target, tmp, data


def _commit(path, target, tmp, data):
    if tmp is None:             # a device or FIFO, written in place: never renamed over
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as e:
            raise os_error(e, f"error writing '{path}'")
        return
    try:
        os.replace(tmp, target)
    except OSError as e:
        os.unlink(tmp)
        raise os_error(e, f"cannot replace '{path}'")


def write_atomic(path, data):
    """data (str or bytes) into path, whole or not at all (see the module's rule)."""
    write_all_atomic([(path, data)])


def write_all_atomic(outputs):
    """Each (path, data) of outputs written whole, and none renamed into place
    before all were written: a failure leaves every target as it was."""
    prepared = []
    try:
        for path, data in outputs:
            prepared.append((path, *_prepare(path, data)))
    except BaseException:
        for _, _, tmp, _ in prepared:
            if tmp:
                os.unlink(tmp)
        raise
    for i, (path, target, tmp, data) in enumerate(prepared):
        try:
            _commit(path, target, tmp, data)
        except BaseException:
            for _, _, later, _ in prepared[i + 1:]:
                if later:
                    os.unlink(later)
            raise


def check_writable(path):
    """Whether path could be written, touching nothing that is there (BadInput
    or MachineFailure otherwise): asked before a long computation."""
    target, in_place = _target(path)
    if in_place:
        if not os.access(target, os.W_OK):
            raise BadInput(f"cannot write '{path}': permission denied")
        return
    d = os.path.dirname(target) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", dir=d)
    except OSError as e:
        raise os_error(e, f"cannot write '{path}'")
    os.close(fd)
    os.unlink(tmp)


# ---------------------------------------------------------------- the command line

class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line naming it and --help, exit 2: not the whole usage."""
    def error(self, message):
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def usage_error(prog, message):
    """A hand-parsed tool's usage error: one line and --help, exit 2."""
    print(f"{prog}: {message} (see {prog} --help)", file=sys.stderr)
    sys.exit(2)


def die(prog, error):
    """A tool without main_guard: error (a BadInput or MachineFailure) as one line and its exit status."""
    print(f"{prog}: {error}", file=sys.stderr)
    sys.exit(1 if isinstance(error, MachineFailure) else 2)


def hand_args(prog, doc, argv, required, optional=(), rest=None, flags=()):
    """A hand-parsed tool's arguments: --help or -h prints doc and exits 0; the
    positionals named by required, then optional, then (rest) any number more;
    flags the --NAME or --NAME=VALUE options it takes. An unknown option, too
    few or too many positionals: usage_error. Returns {name: text} (a rest
    list under rest; a flag's value, or True, under its name)."""
    if any(a in ("-h", "--help") for a in argv):
        print(doc)
        sys.exit(0)
    got, pos = {}, []
    for a in argv:
        if a.startswith("-") and a != "-":
            name = a[2:].split("=", 1)[0] if a.startswith("--") else None
            if name not in flags:
                usage_error(prog, f"unknown option {a.split('=', 1)[0]}")
            got[name] = a.split("=", 1)[1] if "=" in a else True
        else:
            pos.append(a)
    if len(pos) < len(required) or (rest is None and len(pos) > len(required) + len(optional)):
        usage_error(prog, f"expected {' '.join(required)}" + "".join(f" [{o}]" for o in optional) +
                    (f" [{rest}...]" if rest else "") + f", not {len(pos)} argument(s)")
    names = list(required) + list(optional)
    got.update(zip(names, pos))
    if rest is not None:
        got[rest] = pos[len(names):]
    return got


def number(text, name, kind=int, low=None):
    """text as kind (int or float), finite and at least low (BadInput naming name otherwise)."""
    try:
        v = kind(text)
        if kind is float and v != v or v in (float("inf"), float("-inf")):
            raise ValueError
    except (TypeError, ValueError):
        raise BadInput(f"{name}={text}: not a {'whole number' if kind is int else 'number'}")
    if low is not None and v < low:
        raise BadInput(f"{name}={text}: must be at least {low}")
    return v


def main_guard(prog, main, argv):
    """main(argv)'s exit status, its BadInput one line and 2, its
    MachineFailure (or an OSError the machine caused) one line and 1."""
    try:
        return main(argv)
    except BadInput as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    except MachineFailure as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:     # a program it ran failed: its own last line, its kind
        why = (e.stderr or "").strip().splitlines() if isinstance(e.stderr, str) else []
        print(f"{prog}: {os.path.basename(str(e.cmd[0]))} exited {e.returncode}" + (f": {why[-1]}" if why else ""),
              file=sys.stderr)
        return 2 if e.returncode == 2 else 1
    except MemoryError:
        print(f"{prog}: out of memory", file=sys.stderr)
        return 1
    except BrokenPipeError:        # `| head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        kind = os_error(e, e.filename or "I/O")
        print(f"{prog}: {kind}", file=sys.stderr)
        return 1 if isinstance(kind, MachineFailure) else 2
