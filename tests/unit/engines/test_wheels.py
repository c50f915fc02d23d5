"""The llama-cpp-python wheel is built once from the pinned sdist into the user cache, and it works: installed in
a fresh virtualenv, it loads llama.cpp's Gemma 4 vocabulary and tokenizes the tool-call marker as one token.

A cold cache compiles it here (about 6-13 minutes on 2 cores); later runs reuse the wheel.
"""

import json
import subprocess
import venv
import zipfile

import pytest

from harness.assets.sdist import sdist_file
from harness.engines.wheels import cached_wheel

pytestmark = pytest.mark.timeout(1800)


def test_wheel_is_built_once_and_reused():
    wheel = cached_wheel()
    assert wheel.name.startswith("llama_cpp_python-0.3.36-") and wheel.suffix == ".whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith("libllama.so") for n in names)
    assert cached_wheel() == wheel  # second call: no build


def test_wheel_installs_and_tokenizes_with_the_real_gemma4_vocabulary(tmp_path):
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = str(env / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(cached_wheel())],
        check=True,
        timeout=600,
    )
    script = (
        "import sys, llama_cpp; m = llama_cpp.Llama(model_path=sys.argv[1], vocab_only=True, verbose=False); "
        "print(m.tokenize(b'<|tool_call>call:f{}<tool_call|>', add_bos=False, special=True))"
    )
    out = subprocess.run(
        [python, "-c", script, str(sdist_file("models/ggml-vocab-gemma-4.gguf"))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    ids = json.loads(out.stdout.strip())  # a printed list of ints is JSON
    assert ids[0] == 48 and ids[-1] == 49  # <|tool_call> and <tool_call|> are single tokens (ids from the notes)
