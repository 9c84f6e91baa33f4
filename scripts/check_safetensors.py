#!/usr/bin/env python3
"""Manual check of a safetensors file written by headroom (not run by tests).

    python3 scripts/check_safetensors.py model.safetensors

loads the file with Hugging Face's safetensors (through torch when it is
installed, which reads BF16; through numpy otherwise), prints every tensor's
name, dtype, shape and first values and the metadata, then writes the same
tensors and metadata back with safetensors' own writer and reports whether
the bytes are identical to the input. headroom lays files out as the
reference writer does, so they are whenever the metadata has at most one key
(the reference writes metadata keys in hash order; headroom sorts them).

Needs: pip install safetensors numpy (and optionally torch).
"""

import os
import sys
import tempfile

from safetensors import safe_open

try:
    import torch  # noqa: F401
    from safetensors.torch import load_file, save_file

    FRAMEWORK = "pt"
except ImportError:
    from safetensors.numpy import load_file, save_file

    FRAMEWORK = "numpy"


def main(path):
    with safe_open(path, framework=FRAMEWORK) as f:
        meta = f.metadata()
    tensors = load_file(path)
    print(f"{path}: {len(tensors)} tensors, metadata {meta}, read with {FRAMEWORK}")
    for name, t in tensors.items():
        flat = t.reshape(-1)[:6]
        values = flat.tolist()
        print(f"  {name:40s} {str(t.dtype):16s} {tuple(t.shape)!s:16s} {values}")

    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "again.safetensors")
        save_file(tensors, out, metadata=meta)
        with open(path, "rb") as a, open(out, "rb") as b:
            same = a.read() == b.read()
    print("re-written by safetensors:", "byte-identical" if same else "DIFFERENT bytes")
    return 0 if same or (meta and len(meta) > 1) else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
