#!/usr/bin/env python3
"""Link-only stand-ins for the CUDA libraries cudarc links with `dynamic-linking`.

usage: cuda-stubs.py CUDARC_SOURCE_DIR OUT_DIR

For each library (driver, cuBLAS, cuBLASLt, cuRAND, NVRTC) it collects every function cudarc's
bindings declare (`extern "C" { fn name(` in src/<lib>/sys/mod.rs, over all CUDA versions) and
builds, with gcc, a shared object of the real soname that defines each one as a call to abort():
enough for the linker, loud if a stub is ever called in place of the real library. libcudart.so
(which candle-kernels links) points at the runtime wheel's real libcudart.so.13.

OUT_DIR/run holds the stubs under their sonames, with the real libcudart.so.13, for the loader:
only the unit tests that run without a GPU (and so call no CUDA function) are started with it on
LD_LIBRARY_PATH, since every binary that links the libraries needs them to start. Elsewhere the
real libraries are loaded.
"""

import pathlib
import re
import subprocess
import sys

# cudarc module, the name cudarc links (-l), and the soname the CUDA 13 libraries carry.
LIBRARIES = [
    ("driver", "cuda", "libcuda.so.1"),
    ("cublas", "cublas", "libcublas.so.13"),
    ("cublaslt", "cublasLt", "libcublasLt.so.13"),
    ("curand", "curand", "libcurand.so.10"),
    ("nvrtc", "nvrtc", "libnvrtc.so.13"),
]

DECLARED = re.compile(r'extern "C" \{\s*fn ([A-Za-z_][A-Za-z0-9_]*)\(')


def main() -> None:
    cudarc, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for module, link_name, soname in LIBRARIES:
        names = sorted(set(DECLARED.findall((cudarc / "src" / module / "sys" / "mod.rs").read_text())))
        if not names:
            sys.exit(f"no functions found in cudarc's {module} bindings: has their layout changed?")
        source = out / f"{link_name}.c"
        source.write_text(
            "#include <stdlib.h>\n" + "".join(f"void {name}(void) {{ abort(); }}\n" for name in names)
        )
        target = out / f"lib{link_name}.so"
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-o", target, f"-Wl,-soname,{soname}", source], check=True
        )
        source.unlink()
        print(f"{target}: {len(names)} functions, soname {soname}")
    run = out / "run"
    run.mkdir(exist_ok=True)
    for _, link_name, soname in LIBRARIES:
        (run / soname).unlink(missing_ok=True)
        (run / soname).symlink_to(f"../lib{link_name}.so")
    # The real runtime beside them: binaries with candle's kernels need it to start.
    (run / "libcudart.so.13").unlink(missing_ok=True)
    (run / "libcudart.so.13").symlink_to("../../libcudart.so.13")
    cudart = out / "libcudart.so"
    cudart.unlink(missing_ok=True)
    cudart.symlink_to("../libcudart.so.13")


if __name__ == "__main__":
    main()
