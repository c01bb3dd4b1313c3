#!/usr/bin/env python3
"""Runs an ONNX model in onnxruntime for tests/export/onnx_test.cpp.

  run_onnx.py --probe         exits 0 when onnxruntime and numpy import, else prints why, exits 2
  run_onnx.py MODEL DIR       checks MODEL with onnx.checker (full check, with shape inference)
                              when the onnx package is there, reads each graph input NAME from
                              DIR/NAME.npy, runs the model on the CPU and writes each output to
                              DIR/NAME.npy, and the signature onnxruntime reads to
                              DIR/signature.txt, one line per input and output:
                              "input_0 float32 batch,4".
"""
import os
import sys


def probe():
    try:
        import numpy  # noqa: F401
        import onnxruntime  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        print(f"{sys.executable} cannot import onnxruntime and numpy: {e}")
        return 2
    return 0


def check(model_path):
    try:
        import onnx
    except ImportError:
        print("run_onnx.py: the onnx package is not installed; skipping onnx.checker", file=sys.stderr)
        return
    onnx.checker.check_model(onnx.load(model_path), full_check=True)


def signature(session):
    """ "input_0 float32 batch,4" per input and output; "tensor(float)" is float32."""
    types = {"float": "float32", "double": "float64"}
    lines = []
    for v in list(session.get_inputs()) + list(session.get_outputs()):
        t = v.type[len("tensor("):-1]
        lines.append(f"{v.name} {types.get(t, t)} {','.join(str(d) for d in v.shape)}\n")
    return "".join(lines)


def run(model_path, directory):
    import numpy as np
    import onnxruntime as ort

    check(model_path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(directory, i.name + ".npy")) for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    for name, value in zip(names, session.run(names, feeds)):
        np.save(os.path.join(directory, name + ".npy"), np.asarray(value, order="C"))
    with open(os.path.join(directory, "signature.txt"), "w") as f:
        f.write(signature(session))
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--probe":
        return probe()
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 1
    return run(argv[1], argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
