"""``tf.gfile`` on local files: the same results and error classes as TensorFlow's
``compat.v1``, each runtime in a directory of its own."""
import os

import pytest

import tfteach
from tf_oracle import tf1

pytestmark = pytest.mark.conformance


def _outcome(fn, *args):
    try:
        result = fn(*args)
    except Exception as e:     # noqa: BLE001 - the class is what is compared
        return type(e).__name__
    return sorted(result) if isinstance(result, list) else result


def _session(tf, root):
    g, out = tf.gfile, []
    g.MakeDirs(f"{root}/logs/run1")
    g.MakeDirs(f"{root}/logs/run1")                         # again: fine
    with g.GFile(f"{root}/logs/run1/notes.txt", "w") as f:
        f.write("first\nsecond\n")
    with g.Open(f"{root}/logs/run1/data.bin", "wb") as f:
        f.write(b"\x00\x01\x02")
    with g.GFile(f"{root}/logs/run1/notes.txt") as f:
        out += [f.readline(), list(f)]
    with g.FastGFile(f"{root}/logs/run1/data.bin", "rb") as f:
        out.append(f.read())
    out += [g.GFile(f"{root}/logs/run1/notes.txt").readlines(),
            g.GFile(f"{root}/logs/run1/notes.txt").size(),
            g.Exists(f"{root}/logs"), g.Exists(f"{root}/nope"), g.IsDirectory(f"{root}/logs"),
            g.IsDirectory(f"{root}/logs/run1/notes.txt"),
            sorted(os.path.relpath(p, root) for p in g.Glob(f"{root}/logs/run1/*.txt")),
            sorted(g.ListDirectory(f"{root}/logs/run1"))]
    stat = g.Stat(f"{root}/logs/run1/data.bin")
    out += [stat.length, stat.is_directory, isinstance(stat.mtime_nsec, int)]
    g.Copy(f"{root}/logs/run1/notes.txt", f"{root}/logs/copy.txt")
    out.append(_outcome(g.Copy, f"{root}/logs/run1/notes.txt", f"{root}/logs/copy.txt"))
    g.Copy(f"{root}/logs/run1/data.bin", f"{root}/logs/copy.txt", overwrite=True)
    g.Rename(f"{root}/logs/copy.txt", f"{root}/logs/moved.txt")
    out.append(_outcome(g.Rename, f"{root}/logs/moved.txt", f"{root}/logs/run1/notes.txt"))
    out.append(g.GFile(f"{root}/logs/moved.txt", "rb").read())
    g.Remove(f"{root}/logs/moved.txt")
    out += [_outcome(g.Remove, f"{root}/logs/moved.txt"),
            _outcome(g.Remove, f"{root}/logs/run1"),
            _outcome(g.ListDirectory, f"{root}/nope"), _outcome(g.Stat, f"{root}/nope"),
            _outcome(lambda: g.GFile(f"{root}/nope").read()),
            _outcome(lambda: g.GFile(f"{root}/logs/run1/notes.txt").write("x")),
            _outcome(lambda: g.GFile(f"{root}/logs/run1/notes.txt", "x")),
            _outcome(g.MakeDirs, f"{root}/logs/run1/notes.txt/deeper"),
            _outcome(g.DeleteRecursively, f"{root}/nope")]
    out.append([(os.path.relpath(d, root), sorted(s), sorted(f)) for d, s, f in g.Walk(root)])
    g.DeleteRecursively(f"{root}/logs")
    out.append(g.Exists(f"{root}/logs"))
    return out


def test_gfile_does_what_tensorflows_does(tmp_path):
    (tmp_path / "ours").mkdir()
    (tmp_path / "tf").mkdir()
    ours = _session(tfteach, str(tmp_path / "ours"))
    assert ours == _session(tf1, str(tmp_path / "tf"))
    assert ours[-1] is False and "NotFoundError" in ours


def test_a_missing_file_names_the_path_and_hints_at_the_working_directory(tmp_path):
    with pytest.raises(tfteach.errors.NotFoundError) as info:
        tfteach.gfile.GFile(str(tmp_path / "missing.txt")).read()
    assert info.value.message == f"{tmp_path}/missing.txt; No such file or directory"
    assert os.getcwd() in str(info.value)
