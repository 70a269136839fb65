"""``tf.app.run`` and ``tf.app.flags``: a learner's program run as a process with several
command lines, on tfteach and on TensorFlow's ``compat.v1``: same output, same exit status."""
import os
import subprocess
import sys
import textwrap

import pytest

from tf_oracle import tf1  # noqa: F401 - skips this module where TensorFlow is missing

pytestmark = pytest.mark.conformance
IMPORTS = {"tfteach": "import tfteach as tf",
           "tensorflow": "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()"}
PROGRAM = textwrap.dedent("""\
    import os
    import sys
    {imports}

    flags = tf.app.flags
    flags.DEFINE_string('data_dir', '/tmp/data', 'Where the data is.')
    flags.DEFINE_integer('steps', 10, 'How many steps.')
    flags.DEFINE_float('learning_rate', 0.01, 'Learning rate.')
    flags.DEFINE_boolean('fake_data', True, 'Use fake data.')
    tf.flags.DEFINE_bool('verbose', False, 'Talk more.')
    flags.DEFINE_list('workers', ['localhost:2222'], 'Worker hosts.')
    flags.DEFINE_enum('mode', 'train', ['train', 'eval'], 'What to do.')
    FLAGS = flags.FLAGS

    if os.environ.get('READ_EARLY'):     # read before tf.app.run: parses sys.argv lazily
        print('early', FLAGS.steps, flush=True)


    def main(argv):
        print(FLAGS.data_dir, FLAGS.steps, FLAGS.learning_rate, FLAGS.fake_data,
              FLAGS.verbose, FLAGS.workers, FLAGS.mode)
        print('argv', argv[1:])
        return 3 if FLAGS.steps > 100 else None


    if __name__ == '__main__':
        tf.app.run()
    """)
CASES = {
    "equals_and_space_forms_and_unknown_flags_left_in_argv":
        (["--learning_rate=0.5", "--steps", "7", "--nofake_data", "--verbose",
          "--workers=a:1,b:2", "--mode=eval", "extra", "--unknown=3"], {}),
    "defaults_lazy_parse_and_mains_return_as_exit_status": (["--steps=200"],
                                                             {"READ_EARLY": "1"}),
}


def _start(backend, tmp_path, argv, env):
    script = tmp_path / f"train_{backend}.py"
    script.write_text(PROGRAM.format(imports=IMPORTS[backend]))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "", **env}
    return subprocess.Popen([sys.executable, str(script), *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)


def _outcome(process):
    stdout, stderr = process.communicate(timeout=120)
    failure = stderr.strip().splitlines()[-1:] if process.returncode == 1 else []
    return stdout, process.returncode, failure


@pytest.mark.parametrize("case", CASES)
def test_program_with_flags_runs_as_on_tensorflow(case, tmp_path):
    argv, env = CASES[case]
    theirs = _start("tensorflow", tmp_path, argv, env)     # both at once: TF starts slowly
    ours = _outcome(_start("tfteach", tmp_path, argv, env))
    assert ours == _outcome(theirs)
    assert ours[1] in (0, 1, 3) and (ours[0] or ours[2])


def test_a_bad_value_fails_with_absls_error_before_main(tmp_path):
    """(TensorFlow fails the same way: absl's IllegalFlagValueError, exit status 1.)"""
    stdout, status, failure = _outcome(_start("tfteach", tmp_path, ["--steps=many"], {}))
    assert (stdout, status) == ("", 1)
    assert failure == ["absl.flags._exceptions.IllegalFlagValueError: flag --steps=many: "
                       "invalid literal for int() with base 10: 'many'"]
